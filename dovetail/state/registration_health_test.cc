#include "dovetail/state/registration_health.h"

#include "gtest/gtest.h"

namespace dovetail::state {
namespace {

using Verdict = RegistrationHealth::Verdict;
using apis::core::ConditionStatus;

TEST(RegistrationHealthTest, UnknownUntilAnOutcomeAndPerPool) {
  RegistrationHealth health;
  EXPECT_EQ(health.Of("a"), Verdict::kUnknown);
  EXPECT_FALSE(health.CallFor("a").has_value());
  health.RecordSuccess("a");
  EXPECT_EQ(health.Of("a"), Verdict::kHealthy);
  EXPECT_EQ(health.Of("b"), Verdict::kUnknown);
}

TEST(RegistrationHealthTest, OneFailureCallsForNothingTwoCallForFalse) {
  RegistrationHealth health;
  health.RecordFailure("a", "RegistrationFailed", "Failed to register node");
  // 1 failure of a window of 4: healthy, but a failure never calls for True.
  EXPECT_EQ(health.Of("a"), Verdict::kHealthy);
  EXPECT_FALSE(health.CallFor("a").has_value());
  health.RecordFailure("a", "LaunchFailed", "no capacity");
  EXPECT_EQ(health.Of("a"), Verdict::kUnhealthy);
  auto call = health.CallFor("a");
  ASSERT_TRUE(call.has_value());
  EXPECT_FALSE(call->healthy);
  EXPECT_EQ(call->reason, "LaunchFailed");  // the failure that tipped it
  EXPECT_EQ(call->message, "no capacity");
}

TEST(RegistrationHealthTest, ThreeSuccessesAfterTwoFailuresCallForTrue) {
  RegistrationHealth health;
  health.RecordFailure("a", "RegistrationFailed", "m");
  health.RecordFailure("a", "RegistrationFailed", "m");
  health.RecordSuccess("a");  // F F T: 2 of 4
  EXPECT_EQ(health.Of("a"), Verdict::kUnhealthy);
  EXPECT_FALSE(health.CallFor("a").has_value());
  health.RecordSuccess("a");  // F F T T: 2 of 4
  EXPECT_EQ(health.Of("a"), Verdict::kUnhealthy);
  EXPECT_FALSE(health.CallFor("a").has_value());
  health.RecordSuccess("a");  // F T T T: the oldest failure left the window
  EXPECT_EQ(health.Of("a"), Verdict::kHealthy);
  auto call = health.CallFor("a");
  ASSERT_TRUE(call.has_value());
  EXPECT_TRUE(call->healthy);
}

TEST(RegistrationHealthTest, ASuccessAmongFailuresKeepsTheWindowSliding) {
  RegistrationHealth health;
  health.RecordSuccess("a");
  health.RecordSuccess("a");
  health.RecordSuccess("a");
  health.RecordSuccess("a");
  health.RecordFailure("a", "RegistrationFailed", "m");  // T T T F
  EXPECT_EQ(health.Of("a"), Verdict::kHealthy);
  EXPECT_FALSE(health.CallFor("a").has_value());
  health.RecordFailure("a", "RegistrationFailed", "m");  // T T F F
  EXPECT_EQ(health.Of("a"), Verdict::kUnhealthy);
  ASSERT_TRUE(health.CallFor("a").has_value());
}

TEST(RegistrationHealthTest, SeedRebuildsTheWindowFromTheWrittenCondition) {
  RegistrationHealth health;
  health.Seed("t", ConditionStatus::kTrue);
  EXPECT_EQ(health.Of("t"), Verdict::kHealthy);
  health.RecordFailure("t", "RegistrationFailed", "m");  // T F
  EXPECT_FALSE(health.CallFor("t").has_value());

  health.Seed("f", ConditionStatus::kFalse);
  EXPECT_EQ(health.Of("f"), Verdict::kUnhealthy);
  health.RecordSuccess("f");  // F F T
  EXPECT_EQ(health.Of("f"), Verdict::kUnhealthy);

  health.Seed("u", ConditionStatus::kUnknown);
  EXPECT_EQ(health.Of("u"), Verdict::kUnknown);

  // A pool with outcomes is not reseeded.
  health.Seed("f", ConditionStatus::kTrue);
  EXPECT_EQ(health.Of("f"), Verdict::kUnhealthy);
}

TEST(RegistrationHealthTest, ResetForgetsOutcomesAndCall) {
  RegistrationHealth health;
  health.RecordFailure("a", "RegistrationFailed", "m");
  health.RecordFailure("a", "RegistrationFailed", "m");
  health.Reset("a");
  EXPECT_EQ(health.Of("a"), Verdict::kUnknown);
  EXPECT_FALSE(health.CallFor("a").has_value());
  health.RecordFailure("a", "RegistrationFailed", "m");
  EXPECT_FALSE(health.CallFor("a").has_value());
}

}  // namespace
}  // namespace dovetail::state
