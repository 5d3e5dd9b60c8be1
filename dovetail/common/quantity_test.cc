#include "dovetail/common/quantity.h"

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail {
namespace {

using ::testing::HasSubstr;

struct ParseCase {
  std::string text;
  int64_t milli;
  std::string canonical;
  QuantityFormat format;
};

constexpr QuantityFormat kDec = QuantityFormat::kDecimalSI;
constexpr QuantityFormat kBin = QuantityFormat::kBinarySI;
constexpr QuantityFormat kExp = QuantityFormat::kDecimalExponent;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Expected values were checked against k8s.io/apimachinery v0.34.4: canonical is the text the API
// server stores (json.Marshal of the unmarshalled quantity), except for the deviations the header
// names; milli is MilliValue() where apimachinery's does not wrap around (Dovetail saturates).
const ParseCase kParseCases[] = {
    {"0", 0, "0", kDec},
    {"1", 1000, "1", kDec},
    {"-1", -1000, "-1", kDec},
    {"+1", 1000, "1", kDec},
    {"1.5", 1500, "1500m", kDec},
    {"0.5", 500, "500m", kDec},
    {".5", 500, "500m", kDec},
    {"5.", 5000, "5", kDec},
    {"-0.5", -500, "-500m", kDec},
    {"100m", 100, "100m", kDec},
    {"250m", 250, "250m", kDec},
    {"999m", 999, "999m", kDec},
    {"1500m", 1500, "1500m", kDec},
    {"1000m", 1000, "1", kDec},
    {"1.001", 1001, "1001m", kDec},
    {"1.000000", 1000, "1", kDec},
    {"00001", 1000, "1", kDec},
    {"2", 2000, "2", kDec},
    {"110", 110000, "110", kDec},
    {"1000", 1000000, "1k", kDec},
    {"1100", 1100000, "1100", kDec},
    {"1500", 1500000, "1500", kDec},
    {"12345", 12345000, "12345", kDec},
    {"123456789", 123456789000, "123456789", kDec},
    {"1k", 1000000, "1k", kDec},
    {"1M", 1000000000, "1M", kDec},
    {"1G", 1000000000000, "1G", kDec},
    {"1T", 1000000000000000, "1T", kDec},
    {"1P", 1000000000000000000, "1P", kDec},
    {"1.5P", 1500000000000000000, "1500T", kDec},
    {"9P", 9000000000000000000, "9P", kDec},
    // Sub-milli values keep nano precision (rounded up, away from zero, to 1n); their milli view
    // rounds up to one milli-unit.
    {"0.1m", 1, "100u", kDec},
    {"0.0001", 1, "100u", kDec},
    {"100n", 1, "100n", kDec},
    {"1u", 1, "1u", kDec},
    {"1n", 1, "1n", kDec},
    {"0.000000001", 1, "1n", kDec},
    {"-0.0001m", -1, "-100n", kDec},
    {"0.0000000000000000000000000001", 1, "1n", kDec},
    {"999999999999999999999n", 1000000000000000, "999999999999999999999n", kDec},
    {"123.456789123456789", 123457, "123456789124n", kDec},
    {"1.0001Ki", 1024103, "1024102400u", kBin},
    {"0.0000000001Ki", 1, "103n", kDec},
    // Binary SI.
    {"1Ki", 1024000, "1Ki", kBin},
    {"1Mi", 1048576000, "1Mi", kBin},
    {"100Mi", 104857600000, "100Mi", kBin},
    {"1Gi", 1073741824000, "1Gi", kBin},
    {"4Gi", 4294967296000, "4Gi", kBin},
    {"16Gi", 17179869184000, "16Gi", kBin},
    {"1Ti", 1099511627776000, "1Ti", kBin},
    {"1Pi", 1125899906842624000, "1Pi", kBin},
    {"1024Ki", 1048576000, "1Mi", kBin},
    {"2048Ki", 2097152000, "2Mi", kBin},
    {"1024Mi", 1073741824000, "1Gi", kBin},
    {"1536Mi", 1610612736000, "1536Mi", kBin},
    {"1.5Gi", 1610612736000, "1536Mi", kBin},
    {"0.5Mi", 524288000, "512Ki", kBin},
    {"1000Ki", 1024000000, "1000Ki", kBin},
    {"1025Ki", 1049600000, "1025Ki", kBin},
    // Below 1Ki, or not a whole number, binary quantities print in decimal form.
    {"0.5Ki", 512000, "512", kBin},
    {"1.5Ki", 1536000, "1536", kBin},
    {"1024.5Ki", 1049088000, "1049088", kBin},
    {"0Ki", 0, "0", kBin},
    // Decimal exponent.
    {"1e3", 1000000, "1e3", kExp},
    {"1E3", 1000000, "1e3", kExp},
    {"1e+3", 1000000, "1e3", kExp},
    {"1e6", 1000000000, "1e6", kExp},
    {"-1e3", -1000000, "-1e3", kExp},
    {"1e-3", 1, "1e-3", kExp},
    {"1500e-3", 1500, "1500e-3", kExp},
    {"2.5e-2", 25, "25e-3", kExp},
    {"1.5e3", 1500000, "1500", kExp},
    {"12e0", 12000, "12", kExp},
    {"1e0", 1000, "1", kExp},
    {"1e1", 10000, "10", kExp},
    {"1e2", 100000, "100", kExp},
    {"1e-30", 1, "1e-9", kExp},
    {"1.5e-9", 1, "2e-9", kExp},
    {"0e99999999999", 0, "0", kExp},
    // "E" alone is the exa suffix; 1E would not fit, but a fraction of it does.
    {"0.001E", 1000000000000000000, "1P", kDec},
    // The largest exact milli value.
    {"9223372036854775807m", kMax, "9223372036854775807m", kDec},
    // Beyond int64 milli-units: the text round-trips, the milli view saturates.
    {"10Pi", kMax, "10Pi", kBin},
    {"-10Pi", -kMax, "-10Pi", kBin},
    {"3Ei", kMax, "3Ei", kBin},
    {"1E", kMax, "1E", kDec},
    {"10P", kMax, "10P", kDec},
    {"1.5E", kMax, "1500P", kDec},
    {"9223372036854775808m", kMax, "9223372036854775808m", kDec},
    {"-9223372036854775808m", -kMax, "-9223372036854775808m", kDec},
    {"9223372036854775807.5m", kMax, "9223372036854775807500u", kDec},
    {"12345678901234567890", kMax, "12345678901234567890", kDec},
    {"99999999999999999999999999999999", kMax, "99999999999999999999999999999999", kDec},
    {"1e18", kMax, "1e18", kExp},
    {"1e21", kMax, "1e21", kExp},
    {"1e100", kMax, "10e99", kExp},
    {"1e400", kMax, "10e399", kExp},
    // BinarySI values are capped at 2^63-1 units, as apimachinery caps them.
    {"8Ei", kMax, "9223372036854775807", kBin},
    {"8.5Ei", kMax, "9223372036854775807", kBin},
    {"1000000Ei", kMax, "9223372036854775807", kBin},
    // DecimalSI beyond the E suffix prints in exponent form (apimachinery prints "1").
    {"1000E", kMax, "1e21", kDec},
    // The exponent keeps its low 32 bits, as apimachinery's int32(parsed).
    {"1e4294967296", 1000, "1", kExp},
    {"1e-4294967296", 1000, "1", kExp},
};

class QuantityParseTest : public ::testing::TestWithParam<ParseCase> {};

TEST_P(QuantityParseTest, ParsesToMilliUnitsAndPrintsCanonically) {
  const ParseCase& c = GetParam();
  absl::StatusOr<Quantity> q = Quantity::Parse(c.text);
  ASSERT_TRUE(q.ok()) << c.text << ": " << q.status();
  EXPECT_EQ(q->MilliValue(), c.milli) << c.text;
  EXPECT_EQ(q->ToString(), c.canonical) << c.text;
  EXPECT_EQ(q->format(), c.format) << c.text;
}

TEST_P(QuantityParseTest, CanonicalTextParsesBackToTheSameValue) {
  const ParseCase& c = GetParam();
  absl::StatusOr<Quantity> q = Quantity::Parse(c.canonical);
  ASSERT_TRUE(q.ok()) << c.canonical << ": " << q.status();
  EXPECT_EQ(q->MilliValue(), c.milli) << c.canonical;
  EXPECT_EQ(q->ToString(), c.canonical) << c.canonical;
  EXPECT_EQ(*q, *Quantity::Parse(c.text)) << c.canonical;
}

INSTANTIATE_TEST_SUITE_P(Table, QuantityParseTest, ::testing::ValuesIn(kParseCases));

struct MalformedCase {
  std::string text;
  absl::StatusCode code;
};

const MalformedCase kMalformedCases[] = {
    {"", absl::StatusCode::kInvalidArgument},
    {"1.2.3", absl::StatusCode::kInvalidArgument},
    {"Gi", absl::StatusCode::kInvalidArgument},
    {"-", absl::StatusCode::kInvalidArgument},
    {"+", absl::StatusCode::kInvalidArgument},
    {".", absl::StatusCode::kInvalidArgument},
    {"-.Mi", absl::StatusCode::kInvalidArgument},
    {"1Zi", absl::StatusCode::kInvalidArgument},
    {"--1", absl::StatusCode::kInvalidArgument},
    {"+-1", absl::StatusCode::kInvalidArgument},
    {"1e", absl::StatusCode::kInvalidArgument},
    {"1e+", absl::StatusCode::kInvalidArgument},
    {"1e1.5", absl::StatusCode::kInvalidArgument},
    {"1ee3", absl::StatusCode::kInvalidArgument},
    {"1 Gi", absl::StatusCode::kInvalidArgument},
    {" 1", absl::StatusCode::kInvalidArgument},
    {"1 ", absl::StatusCode::kInvalidArgument},
    {"1K", absl::StatusCode::kInvalidArgument},
    {"1ki", absl::StatusCode::kInvalidArgument},
    {"1KiB", absl::StatusCode::kInvalidArgument},
    {"1m3", absl::StatusCode::kInvalidArgument},
    {"1Ki3", absl::StatusCode::kInvalidArgument},
    {"1i", absl::StatusCode::kInvalidArgument},
    {"abc", absl::StatusCode::kInvalidArgument},
    {"0x10", absl::StatusCode::kInvalidArgument},
    {"1,5", absl::StatusCode::kInvalidArgument},
    {"1e99999999999999999999", absl::StatusCode::kInvalidArgument},
    {"1e-99999999999999999999", absl::StatusCode::kInvalidArgument},
    {"1e9223372036854775808", absl::StatusCode::kInvalidArgument},
    {std::string("1\0", 2), absl::StatusCode::kInvalidArgument},
};

class QuantityMalformedTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(QuantityMalformedTest, FailsWithStatusNamingTheText) {
  const MalformedCase& c = GetParam();
  absl::StatusOr<Quantity> q = Quantity::Parse(c.text);
  ASSERT_FALSE(q.ok()) << "\"" << c.text << "\" parsed as " << q->ToString();
  EXPECT_EQ(q.status().code(), c.code) << c.text << ": " << q.status();
  EXPECT_THAT(q.status().message(), HasSubstr("quantity \""));
}

INSTANTIATE_TEST_SUITE_P(Table, QuantityMalformedTest, ::testing::ValuesIn(kMalformedCases));

// A whole BinarySI value that no binary suffix divides prints its digits, which parse back as
// DecimalSI and print with a decimal suffix; apimachinery v0.31.2 prints the same two texts.
// Found by test/fuzz/quantity_fuzzer.
TEST(QuantityTest, BinaryDigitsPrintDecimalOnTheSecondRound) {
  absl::StatusOr<Quantity> q = Quantity::Parse("1000187.5Ki");
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->ToString(), "1024192000");
  absl::StatusOr<Quantity> again = Quantity::Parse(q->ToString());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *q);
  EXPECT_EQ(again->format(), kDec);
  EXPECT_EQ(again->ToString(), "1024192k");
}

TEST(QuantityTest, LongZeroPaddedInputsDoNotOverflow) {
  std::string zeros(5000, '0');
  absl::StatusOr<Quantity> q = Quantity::Parse(zeros + "1." + zeros + "Gi");
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->ToString(), "1Gi");
  q = Quantity::Parse("0." + zeros + "1");
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->MilliValue(), 1);
}

TEST(QuantityTest, ValueRoundsAwayFromZero) {
  EXPECT_EQ(Quantity::FromMilli(1500).Value(), 2);
  EXPECT_EQ(Quantity::FromMilli(1000).Value(), 1);
  EXPECT_EQ(Quantity::FromMilli(1).Value(), 1);
  EXPECT_EQ(Quantity::FromMilli(0).Value(), 0);
  EXPECT_EQ(Quantity::FromMilli(-1).Value(), -1);
  EXPECT_EQ(Quantity::FromMilli(-1500).Value(), -2);
}

TEST(QuantityTest, FromMilliAndFromUnitsPrintInTheirFormat) {
  EXPECT_EQ(Quantity::FromMilli(1500).ToString(), "1500m");
  EXPECT_EQ(Quantity::FromMilli(1500, kBin).ToString(), "1500m");
  EXPECT_EQ(Quantity::FromUnits(1024, kBin).ToString(), "1Ki");
  EXPECT_EQ(Quantity::FromUnits(1023, kBin).ToString(), "1023");
  EXPECT_EQ(Quantity::FromUnits(-1024, kBin).ToString(), "-1Ki");
  EXPECT_EQ(Quantity::FromUnits(int64_t{3} * 1024 * 1024, kBin).ToString(), "3Mi");
  EXPECT_EQ(Quantity::FromUnits(4000).ToString(), "4k");
  EXPECT_EQ(Quantity::FromUnits(4000, kExp).ToString(), "4e3");
  EXPECT_EQ(Quantity::FromUnits(40000, kExp).ToString(), "40e3");
  EXPECT_EQ(Quantity::FromMilli(10, kExp).ToString(), "10e-3");
  EXPECT_EQ(Quantity::FromUnits(int64_t{1} << 50, kBin).ToString(), "1Pi");
  EXPECT_EQ(Quantity::FromUnits(int64_t{3} << 50, kBin).ToString(), "3Pi");
}

TEST(QuantityTest, FromUnitsIsExactAndItsMilliViewSaturates) {
  const Quantity max = Quantity::FromUnits(std::numeric_limits<int64_t>::max());
  EXPECT_EQ(max.MilliValue(), kMax);
  EXPECT_EQ(max.Value(), kMax);
  EXPECT_FALSE(max.IsExactMilli());
  EXPECT_EQ(max.ToString(), "9223372036854775807");
  const Quantity min = Quantity::FromUnits(std::numeric_limits<int64_t>::min());
  EXPECT_EQ(min.MilliValue(), -kMax);
  EXPECT_EQ(min.ToString(), "-9223372036854775808");
  EXPECT_LT(min, Quantity::FromMilli(-kMax));
  EXPECT_EQ(Quantity::FromMilli(std::numeric_limits<int64_t>::min()).ToString(),
            "-9223372036854775808m");
  EXPECT_EQ(Quantity::FromMilli(std::numeric_limits<int64_t>::min()).MilliValue(), -kMax);
  EXPECT_TRUE(Quantity::FromUnits(5).IsExactMilli());
}

TEST(QuantityTest, ValueOfLargeQuantitiesSaturatesAtInt64) {
  EXPECT_EQ(Quantity::Parse("10Pi")->Value(), int64_t{10} << 50);
  EXPECT_EQ(Quantity::Parse("8Ei")->Value(), kMax);
  EXPECT_EQ(Quantity::Parse("1e30")->Value(), kMax);
  EXPECT_EQ(Quantity::Parse("-1e30")->Value(), -kMax);
  EXPECT_EQ(Quantity::Parse("100n")->Value(), 1);
  EXPECT_EQ(Quantity::Parse("-100n")->Value(), -1);
}

TEST(QuantityTest, ComparesValuesBeyondMilliExactly) {
  const Quantity ten_pi = *Quantity::Parse("10Pi");
  const Quantity eleven_pi = *Quantity::Parse("11Pi");
  // Both saturate to the same milli view; the exact values still order.
  EXPECT_EQ(ten_pi.MilliValue(), eleven_pi.MilliValue());
  EXPECT_LT(ten_pi, eleven_pi);
  EXPECT_NE(ten_pi, eleven_pi);
  EXPECT_EQ(ten_pi, *Quantity::Parse("11258999068426240"));
  EXPECT_GT(ten_pi, *Quantity::Parse("8Pi"));
  EXPECT_LT(*Quantity::Parse("-11Pi"), *Quantity::Parse("-10Pi"));
  EXPECT_LT(*Quantity::Parse("-10Pi"), *Quantity::Parse("1n"));
  EXPECT_LT(*Quantity::Parse("100n"), *Quantity::Parse("101n"));
  EXPECT_LT(*Quantity::Parse("100n"), *Quantity::Parse("1m"));
  EXPECT_EQ(*Quantity::Parse("100n"), *Quantity::Parse("0.1u"));
  EXPECT_GT(*Quantity::Parse("1e400"), *Quantity::Parse("1e399"));
  EXPECT_LT(*Quantity::Parse("1e-9"), *Quantity::Parse("2e-9"));
}

TEST(QuantityTest, ArithmeticSaturatesAndAdoptsFormatWhenZero) {
  Quantity sum;
  sum += Quantity::FromUnits(1024, kBin);
  EXPECT_EQ(sum.format(), kBin);
  sum += Quantity::FromUnits(1024);
  EXPECT_EQ(sum.ToString(), "2Ki");
  EXPECT_EQ((sum - Quantity::FromUnits(2048)).ToString(), "0");
  EXPECT_EQ((Quantity::FromMilli(500) - Quantity::FromMilli(1500)).ToString(), "-1");

  const Quantity max = Quantity::FromMilli(std::numeric_limits<int64_t>::max());
  EXPECT_EQ((max + max).MilliValue(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ((Quantity() - max - max).MilliValue(), -std::numeric_limits<int64_t>::max());

  // Zero plus a quantity is that quantity exactly; other sums use the saturated milli view.
  const Quantity ten_pi = *Quantity::Parse("10Pi");
  EXPECT_EQ((Quantity() + ten_pi).ToString(), "10Pi");
  EXPECT_EQ((ten_pi + Quantity()).ToString(), "10Pi");
  EXPECT_EQ((Quantity() - ten_pi).ToString(), "-10Pi");
  EXPECT_EQ((ten_pi + Quantity::FromUnits(1)).MilliValue(), kMax);
  EXPECT_TRUE((ten_pi + Quantity::FromUnits(1)).IsExactMilli());
  EXPECT_EQ((ten_pi - ten_pi).MilliValue(), 0);
  EXPECT_EQ((*Quantity::Parse("100n") + *Quantity::Parse("100n")).ToString(), "2m");
}

TEST(QuantityTest, ComparesByValueRegardlessOfFormat) {
  EXPECT_EQ(*Quantity::Parse("1Ki"), *Quantity::Parse("1024"));
  EXPECT_LT(*Quantity::Parse("999m"), *Quantity::Parse("1"));
  EXPECT_GT(*Quantity::Parse("1Gi"), *Quantity::Parse("1G"));
  EXPECT_EQ(Quantity::FromMilli(-5).Sign(), -1);
  EXPECT_EQ(Quantity().Sign(), 0);
  EXPECT_TRUE(Quantity().IsZero());
}

TEST(ResourceListTest, ParsesEveryEntry) {
  absl::StatusOr<ResourceList> list =
      ParseResourceList({{"cpu", "1.5"}, {"memory", "1536Mi"}, {"pods", "110"}});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(ResourceListToString(*list), "{cpu: 1500m, memory: 1536Mi, pods: 110}");
  EXPECT_EQ(ResourceListToString({}), "{}");
}

TEST(ResourceListTest, NamesTheMalformedResource) {
  absl::StatusOr<ResourceList> list = ParseResourceList({{"cpu", "1"}, {"memory", "1 Gi"}});
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(list.status().message(), HasSubstr("resource \"memory\""));
}

}  // namespace
}  // namespace dovetail
