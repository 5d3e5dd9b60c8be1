#include "dovetail/common/saturating.h"

#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace dovetail {
namespace {

constexpr int64_t kHigh = std::numeric_limits<int64_t>::max();
constexpr int64_t kLow = std::numeric_limits<int64_t>::min();

TEST(SaturatingTest, AddStopsAtTheLimits) {
  EXPECT_EQ(SaturatingAdd(1, 2), 3);
  EXPECT_EQ(SaturatingAdd(kHigh, 1), kHigh);
  EXPECT_EQ(SaturatingAdd(kHigh, kHigh), kHigh);
  EXPECT_EQ(SaturatingAdd(-kHigh, -1), -kHigh);
  EXPECT_EQ(SaturatingAdd(kLow, 0), -kHigh);
  EXPECT_EQ(SaturatingAdd(kHigh, -kHigh), 0);
}

TEST(SaturatingTest, SubStopsAtTheLimits) {
  EXPECT_EQ(SaturatingSub(1, 2), -1);
  EXPECT_EQ(SaturatingSub(kHigh, -1), kHigh);
  EXPECT_EQ(SaturatingSub(-kHigh, 1), -kHigh);
  EXPECT_EQ(SaturatingSub(0, kLow), kHigh);
}

TEST(SaturatingTest, MulStopsAtTheLimits) {
  EXPECT_EQ(SaturatingMul(3, 4), 12);
  EXPECT_EQ(SaturatingMul(kHigh, 2), kHigh);
  EXPECT_EQ(SaturatingMul(kHigh, -2), -kHigh);
  EXPECT_EQ(SaturatingMul(-kHigh, -2), kHigh);
  EXPECT_EQ(SaturatingMul(0, kLow), 0);
}

}  // namespace
}  // namespace dovetail
