#include "dovetail/controllers/launch/decision_id.h"

#include <string>

#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"

namespace dovetail::controllers::launch {
namespace {

TEST(DecisionIdTest, IdsAreEightLowercaseHexDigits) {
  DecisionIds ids(DecisionStream::kProvisioning);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(IsDecisionId(ids.Next()));
}

TEST(DecisionIdTest, IdsOfBothStreamsNeverRepeatWithinAProcess) {
  absl::flat_hash_set<std::string> seen;
  for (uint32_t n = 0; n < 50000; ++n) {
    EXPECT_TRUE(seen.insert(FormatDecisionId(7, DecisionStream::kProvisioning, n)).second);
    EXPECT_TRUE(seen.insert(FormatDecisionId(7, DecisionStream::kDisruption, n)).second);
  }
}

TEST(DecisionIdTest, GeneratorsOfDifferentStreamsDoNotCollide) {
  DecisionIds a(DecisionStream::kProvisioning), b(DecisionStream::kDisruption);
  absl::flat_hash_set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(seen.insert(a.Next()).second);
    EXPECT_TRUE(seen.insert(b.Next()).second);
  }
}

TEST(DecisionIdTest, RejectsMalformedIds) {
  EXPECT_FALSE(IsDecisionId(""));
  EXPECT_FALSE(IsDecisionId("0123456"));
  EXPECT_FALSE(IsDecisionId("0123456G"));
  EXPECT_FALSE(IsDecisionId("ABCDEF01"));
  EXPECT_TRUE(IsDecisionId("abcdef01"));
}

TEST(DecisionIdTest, EventNotesCarryTheIdAtTheEnd) {
  const std::string note = WithDecisionId("Pod should schedule on: nodeclaim/a-1", "0a1b2c3d");
  EXPECT_EQ(note, "Pod should schedule on: nodeclaim/a-1 (decision=0a1b2c3d)");
  EXPECT_EQ(DecisionIdOf(note), "0a1b2c3d");
  EXPECT_EQ(DecisionIdOf("Failed to schedule pod, no nodepools found"), "");
  EXPECT_EQ(DecisionIdOf("x (decision=0A1B2C3D)"), "");
  EXPECT_EQ(DecisionIdOf("(decision=0a1b2c3d)"), "");
}

}  // namespace
}  // namespace dovetail::controllers::launch
