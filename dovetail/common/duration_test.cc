#include "dovetail/common/duration.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail {
namespace {

using ::testing::HasSubstr;

struct DurationCase {
  std::string text;
  int64_t nanos;
  std::string printed;
};

// Expected values were checked against Go's time.ParseDuration and Duration.String().
const DurationCase kDurationCases[] = {
    {"30s", 30'000'000'000, "30s"},
    {"1h30m", 5'400'000'000'000, "1h30m0s"},
    {"720h", 2'592'000'000'000'000, "720h0m0s"},
    {"1.5h", 5'400'000'000'000, "1h30m0s"},
    {"300ms", 300'000'000, "300ms"},
    {"0", 0, "0s"},
    {"-0", 0, "0s"},
    {"+0", 0, "0s"},
    {"1.h", 3'600'000'000'000, "1h0m0s"},
    {".5h", 1'800'000'000'000, "30m0s"},
    {"1h0m0s", 3'600'000'000'000, "1h0m0s"},
    {"100h", 360'000'000'000'000, "100h0m0s"},
    {"1m30s", 90'000'000'000, "1m30s"},
    {"5m", 300'000'000'000, "5m0s"},
    {"1500ms", 1'500'000'000, "1.5s"},
    {"1000ms", 1'000'000'000, "1s"},
    {"59.999999999s", 59'999'999'999, "59.999999999s"},
    {"0.000001s", 1'000, "1\xC2\xB5s"},
    {"1us", 1'000, "1\xC2\xB5s"},
    {"1\xC2\xB5s", 1'000, "1\xC2\xB5s"},
    {"1\xCE\xBCs", 1'000, "1\xC2\xB5s"},
    {"1.1us", 1'100, "1.1\xC2\xB5s"},
    {"1ns", 1, "1ns"},
    {"1.5ns", 1, "1ns"},
    {"-1.5s", -1'500'000'000, "-1.5s"},
    {"-.5m", -30'000'000'000, "-30s"},
    {"3h2m1s0ms", 10'921'000'000'000, "3h2m1s"},
    {"01s", 1'000'000'000, "1s"},
    // float64 rounding of long fractions, as Go does it.
    {"0.3333333333h", 1'199'999'999'880, "19m59.99999988s"},
    {"1.0000000000000000000001s", 1'000'000'000, "1s"},
    {"9223372036854775807ns", std::numeric_limits<int64_t>::max(), "2562047h47m16.854775807s"},
    {"2562047h47m16.854775807s", std::numeric_limits<int64_t>::max(), "2562047h47m16.854775807s"},
    {"-9223372036854775808ns", std::numeric_limits<int64_t>::min(), "-2562047h47m16.854775808s"},
    {"-2562047h47m16.854775808s", std::numeric_limits<int64_t>::min(), "-2562047h47m16.854775808s"},
};

class DurationParseTest : public ::testing::TestWithParam<DurationCase> {};

TEST_P(DurationParseTest, ParsesAndPrintsLikeGo) {
  const DurationCase& c = GetParam();
  absl::StatusOr<absl::Duration> d = ParseGoDuration(c.text);
  ASSERT_TRUE(d.ok()) << c.text << ": " << d.status();
  EXPECT_EQ(absl::ToInt64Nanoseconds(*d), c.nanos) << c.text;
  EXPECT_EQ(FormatGoDuration(*d), c.printed) << c.text;
}

TEST_P(DurationParseTest, PrintedFormParsesBack) {
  const DurationCase& c = GetParam();
  absl::StatusOr<absl::Duration> d = ParseGoDuration(c.printed);
  ASSERT_TRUE(d.ok()) << c.printed << ": " << d.status();
  EXPECT_EQ(absl::ToInt64Nanoseconds(*d), c.nanos) << c.printed;
}

INSTANTIATE_TEST_SUITE_P(Table, DurationParseTest, ::testing::ValuesIn(kDurationCases));

class DurationMalformedTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DurationMalformedTest, IsInvalidArgument) {
  absl::StatusOr<absl::Duration> d = ParseGoDuration(GetParam());
  ASSERT_FALSE(d.ok()) << GetParam();
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("duration \""));
}

INSTANTIATE_TEST_SUITE_P(Table, DurationMalformedTest,
                         ::testing::Values("", "-", "+", ".", ".s", "-.s", "1", "1h1", "1d", "1 h",
                                           "1hm", "1e3s", "h", "1H", "1.5.5s", "--1s", " 1s", "1s ",
                                           "9223372036854775808ns", "2562047h47m16.854775808s",
                                           "2562048h", "99999999999999999999h", "Never"));

TEST(FormatGoDurationTest, SaturatesAndTruncatesToNanoseconds) {
  EXPECT_EQ(FormatGoDuration(absl::InfiniteDuration()), "2562047h47m16.854775807s");
  EXPECT_EQ(FormatGoDuration(-absl::InfiniteDuration()), "-2562047h47m16.854775808s");
  EXPECT_EQ(FormatGoDuration(absl::Hours(1e7)), "2562047h47m16.854775807s");
  EXPECT_EQ(FormatGoDuration(absl::Nanoseconds(1) / 4), "0s");
  EXPECT_EQ(FormatGoDuration(absl::Nanoseconds(999)), "999ns");
  EXPECT_EQ(FormatGoDuration(absl::Microseconds(999)), "999\xC2\xB5s");
  EXPECT_EQ(FormatGoDuration(absl::Milliseconds(999)), "999ms");
  EXPECT_EQ(FormatGoDuration(absl::Seconds(60)), "1m0s");
  EXPECT_EQ(FormatGoDuration(absl::Seconds(-3661)), "-1h1m1s");
}

TEST(NillableDurationTest, NeverIsNullopt) {
  absl::StatusOr<std::optional<absl::Duration>> never = ParseNillableDuration("Never");
  ASSERT_TRUE(never.ok());
  EXPECT_FALSE(never->has_value());
  EXPECT_EQ(FormatNillableDuration(*never), "Never");

  absl::StatusOr<std::optional<absl::Duration>> d = ParseNillableDuration("720h");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(**d, absl::Hours(720));
  EXPECT_EQ(FormatNillableDuration(*d), "720h0m0s");

  EXPECT_EQ(ParseNillableDuration("never").status().code(), absl::StatusCode::kInvalidArgument);
}

struct PatternCase {
  std::string text;
  bool karpenter;
  bool budget;
};

const PatternCase kPatternCases[] = {
    {"30s", true, false},     {"720h", true, true},    {"1h30m", true, true},
    {"10m", true, true},      {"1h30m0s", true, true}, {"10h0s", true, true},
    {"10m0s", true, true},    {"1h1m1s", true, false}, {"0s", true, false},
    {"10s", true, false},     {"1m1h", true, false},   {"1h30s", true, false},
    {"1s1s", true, false},    {"", false, false},      {"1.5h", false, false},
    {"300ms", false, false},  {"h", false, false},     {"1", false, false},
    {"-1h", false, false},    {"Never", false, false}, {"1h0s0s", true, false},
    {"1h 30m", false, false}, {"1d", false, false},
};

class DurationPatternTest : public ::testing::TestWithParam<PatternCase> {};

TEST_P(DurationPatternTest, MatchesTheCrdPatterns) {
  const PatternCase& c = GetParam();
  EXPECT_EQ(IsKarpenterDurationPattern(c.text), c.karpenter) << c.text;
  EXPECT_EQ(IsBudgetDurationPattern(c.text), c.budget) << c.text;
}

INSTANTIATE_TEST_SUITE_P(Table, DurationPatternTest, ::testing::ValuesIn(kPatternCases));

}  // namespace
}  // namespace dovetail
