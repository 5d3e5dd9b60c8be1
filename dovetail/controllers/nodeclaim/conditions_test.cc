#include "dovetail/controllers/nodeclaim/conditions.h"

#include <vector>

#include "gtest/gtest.h"

namespace dovetail::controllers::nodeclaim {
namespace {

using apis::core::Condition;
using apis::core::ConditionStatus;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

TEST(ConditionsTest, InitializeAddsDependentsAndRootAsUnknown) {
  std::vector<Condition> list;
  Conditions c(list, 1, kT0);
  EXPECT_TRUE(c.Initialize());
  ASSERT_EQ(list.size(), 4u);
  for (std::string_view type : {kConditionLaunched, kConditionRegistered, kConditionInitialized}) {
    ASSERT_NE(c.Get(type), nullptr) << type;
    EXPECT_EQ(c.Get(type)->status, ConditionStatus::kUnknown);
    EXPECT_EQ(c.Get(type)->reason, kReasonAwaitingReconciliation);
    EXPECT_EQ(c.Get(type)->observed_generation, 1);
    EXPECT_EQ(c.Get(type)->last_transition_time, kT0);
  }
  EXPECT_EQ(c.Get(kConditionReady)->status, ConditionStatus::kUnknown);
  EXPECT_EQ(c.Get(kConditionReady)->reason, kReasonReconcilingDependents);
  EXPECT_FALSE(Conditions(list, 1, kT0 + absl::Seconds(1)).Initialize());
}

TEST(ConditionsTest, ReadyIsTrueOnlyWhenEveryDependentIsTrue) {
  std::vector<Condition> list;
  Conditions(list, 1, kT0).Initialize();
  Conditions c(list, 1, kT0 + absl::Seconds(5));
  c.SetTrue(kConditionLaunched);
  c.SetTrue(kConditionRegistered);
  EXPECT_EQ(c.Get(kConditionReady)->status, ConditionStatus::kUnknown);
  EXPECT_EQ(c.Get(kConditionReady)->message, "Initialized=Unknown");
  c.SetTrue(kConditionInitialized);
  EXPECT_EQ(c.Get(kConditionReady)->status, ConditionStatus::kTrue);
  EXPECT_EQ(c.Get(kConditionReady)->reason, "Ready");
  EXPECT_EQ(c.Get(kConditionLaunched)->reason, "Launched");
  EXPECT_EQ(c.Get(kConditionReady)->last_transition_time, kT0 + absl::Seconds(5));
}

TEST(ConditionsTest, ReadyIsFalseWhenADependentIsFalse) {
  std::vector<Condition> list;
  Conditions c(list, 1, kT0);
  c.Initialize();
  c.SetTrue(kConditionLaunched);
  c.SetTrue(kConditionRegistered);
  c.SetFalse(kConditionInitialized, kReasonNodeNotReady, "Node status is NotReady");
  EXPECT_EQ(c.Get(kConditionReady)->status, ConditionStatus::kFalse);
  EXPECT_EQ(c.Get(kConditionReady)->reason, kReasonUnhealthyDependents);
  EXPECT_EQ(c.Get(kConditionReady)->message, "Initialized=False");
}

TEST(ConditionsTest, TransitionTimeChangesOnlyWithStatus) {
  std::vector<Condition> list;
  Conditions(list, 1, kT0).Initialize();
  // Same status, new reason: the transition time stays (the registration TTL counts from it).
  EXPECT_TRUE(Conditions(list, 1, kT0 + absl::Minutes(1))
                  .SetUnknown(kConditionRegistered, kReasonNodeNotFound, "not yet"));
  Conditions c(list, 1, kT0 + absl::Minutes(2));
  EXPECT_EQ(c.Get(kConditionRegistered)->last_transition_time, kT0);
  EXPECT_EQ(c.Get(kConditionRegistered)->reason, kReasonNodeNotFound);
  // Unchanged: no write needed.
  EXPECT_FALSE(c.SetUnknown(kConditionRegistered, kReasonNodeNotFound, "not yet"));
  EXPECT_TRUE(c.SetTrue(kConditionRegistered));
  EXPECT_EQ(c.Get(kConditionRegistered)->last_transition_time, kT0 + absl::Minutes(2));
}

TEST(ConditionsTest, ObservedGenerationFollowsTheObject) {
  std::vector<Condition> list;
  Conditions(list, 1, kT0).Initialize();
  Conditions c(list, 2, kT0);
  EXPECT_TRUE(c.SetUnknown(kConditionLaunched, kReasonAwaitingReconciliation,
                           "object is awaiting reconciliation"));
  EXPECT_EQ(c.Get(kConditionLaunched)->observed_generation, 2);
}

}  // namespace
}  // namespace dovetail::controllers::nodeclaim
