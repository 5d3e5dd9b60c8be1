#include "dovetail/apis/v1/do_not_disrupt.h"

#include "gtest/gtest.h"

namespace dovetail::apis::v1 {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'800'000'000);

TEST(DoNotDisruptTest, TrueProtectsForAsLongAsThePodRuns) {
  bool invalid = true;
  EXPECT_TRUE(DoNotDisruptInForce("true", std::nullopt, kStart, &invalid));
  EXPECT_FALSE(invalid);
}

TEST(DoNotDisruptTest, ADurationProtectsForThatLongAfterTheStart) {
  EXPECT_TRUE(DoNotDisruptInForce("1h30m", kStart, kStart + absl::Minutes(89)));
  EXPECT_FALSE(DoNotDisruptInForce("1h30m", kStart, kStart + absl::Minutes(90)));
  // Without a start there is nothing to count from.
  EXPECT_FALSE(DoNotDisruptInForce("1h30m", std::nullopt, kStart));
}

TEST(DoNotDisruptTest, OtherValuesProtectNothingAndAreInvalid) {
  for (const char* value : {"false", "yes", "", "-5m", "5 minutes"}) {
    bool invalid = false;
    EXPECT_FALSE(DoNotDisruptInForce(value, kStart, kStart, &invalid)) << value;
    EXPECT_TRUE(invalid) << value;
  }
}

}  // namespace
}  // namespace dovetail::apis::v1
