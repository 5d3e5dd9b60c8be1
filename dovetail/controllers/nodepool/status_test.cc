// The NodePool status decisions (status.h).
#include "dovetail/controllers/nodepool/status.h"

#include "gtest/gtest.h"

namespace dovetail::controllers::nodepool {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

v1::NodePool Pool() {
  v1::NodePool pool;
  pool.metadata.name = "default";
  pool.metadata.generation = 1;
  return pool;
}

const core::Condition* Get(const v1::NodePoolStatus& s, std::string_view type) {
  return v1::FindCondition(s.conditions, type);
}

core::ConditionStatus StatusOf(const v1::NodePoolStatus& s, std::string_view type) {
  const core::Condition* c = Get(s, type);
  return c == nullptr ? core::ConditionStatus::kUnknown : c->status;
}

NodeClassView ReadyClass(core::ConditionStatus status, int64_t generation = 1) {
  NodeClassView view;
  view.state = NodeClassView::State::kFound;
  view.generation = generation;
  view.ready = core::Condition{
      .type = "Ready", .status = status, .reason = "SubnetsNotFound", .message = "no subnets"};
  return view;
}

TEST(NodePoolStatusTest, ResourcesStartAtZeroAndCountNodes) {
  StatusInput in;
  in.usage = {{"cpu", Quantity::FromUnits(8)},
              {"nodes", Quantity::FromUnits(2)},
              {"nvidia.com/gpu", Quantity::FromUnits(1)}};
  const v1::NodePoolStatus s = DesiredStatus(Pool(), in, kT0);
  EXPECT_EQ(s.resources.at("cpu").Value(), 8);
  EXPECT_EQ(s.resources.at("memory").Value(), 0);
  EXPECT_EQ(s.resources.at("pods").Value(), 0);
  EXPECT_EQ(s.resources.at("ephemeral-storage").Value(), 0);
  EXPECT_EQ(s.resources.at("nvidia.com/gpu").Value(), 1);
  EXPECT_EQ(s.nodes, 2);
  StatusInput none;
  none.usage = ResourceList{};
  EXPECT_EQ(DesiredStatus(Pool(), none, kT0).nodes, 0);
}

TEST(NodePoolStatusTest, UnknownUsageKeepsResourcesButNotConditions) {
  v1::NodePool pool = Pool();
  StatusInput in;
  in.usage = ResourceList{{"cpu", Quantity::FromUnits(4)}, {"nodes", Quantity::FromUnits(1)}};
  pool.status = DesiredStatus(pool, in, kT0);
  // The cluster state has not synced (a NodeClaim launching): resources and nodes stay.
  in.usage.reset();
  in.validation_errors = {"bad"};
  const v1::NodePoolStatus s = DesiredStatus(pool, in, kT0 + absl::Minutes(1));
  EXPECT_EQ(s.resources.at("cpu").Value(), 4);
  EXPECT_EQ(s.nodes, 1);
  EXPECT_EQ(StatusOf(s, "ValidationSucceeded"), core::ConditionStatus::kFalse);
}

TEST(NodePoolStatusTest, ReadyWhenValidAndTheClassIsReady) {
  StatusInput in;
  in.node_class = ReadyClass(core::ConditionStatus::kTrue);
  const v1::NodePoolStatus s = DesiredStatus(Pool(), in, kT0);
  EXPECT_EQ(StatusOf(s, "ValidationSucceeded"), core::ConditionStatus::kTrue);
  EXPECT_EQ(StatusOf(s, "NodeClassReady"), core::ConditionStatus::kTrue);
  EXPECT_EQ(StatusOf(s, "Ready"), core::ConditionStatus::kTrue);
  EXPECT_EQ(s.node_class_observed_generation, 1);
  // A cloud provider without node class objects (kwok) has nothing to wait for.
  EXPECT_EQ(StatusOf(DesiredStatus(Pool(), StatusInput{}, kT0), "Ready"),
            core::ConditionStatus::kTrue);
}

TEST(NodePoolStatusTest, NodeClassProblemsAsUpstream) {
  StatusInput in;
  in.node_class = ReadyClass(core::ConditionStatus::kFalse);
  v1::NodePoolStatus s = DesiredStatus(Pool(), in, kT0);
  EXPECT_EQ(Get(s, "NodeClassReady")->reason, "SubnetsNotFound");
  EXPECT_EQ(Get(s, "NodeClassReady")->message, "no subnets");
  EXPECT_EQ(StatusOf(s, "Ready"), core::ConditionStatus::kFalse);
  EXPECT_EQ(Get(s, "Ready")->reason, "UnhealthyDependents");

  in.node_class = ReadyClass(core::ConditionStatus::kUnknown);
  EXPECT_EQ(Get(DesiredStatus(Pool(), in, kT0), "NodeClassReady")->reason,
            "NodeClassReadinessUnknown");
  in.node_class = NodeClassView{.state = NodeClassView::State::kNotFound};
  EXPECT_EQ(Get(DesiredStatus(Pool(), in, kT0), "NodeClassReady")->reason, "NodeClassNotFound");
  in.node_class = NodeClassView{.state = NodeClassView::State::kTerminating};
  EXPECT_EQ(Get(DesiredStatus(Pool(), in, kT0), "NodeClassReady")->reason, "NodeClassTerminating");
}

TEST(NodePoolStatusTest, ValidationErrorsMakeItNotReady) {
  StatusInput in;
  in.validation_errors = {"spec.weight: must be at most 100", "spec.limits: bad"};
  const v1::NodePoolStatus s = DesiredStatus(Pool(), in, kT0);
  EXPECT_EQ(StatusOf(s, "ValidationSucceeded"), core::ConditionStatus::kFalse);
  EXPECT_EQ(Get(s, "ValidationSucceeded")->reason, "NodePoolValidationFailed");
  EXPECT_EQ(Get(s, "ValidationSucceeded")->message,
            "spec.weight: must be at most 100; spec.limits: bad");
  EXPECT_EQ(StatusOf(s, "Ready"), core::ConditionStatus::kFalse);
}

TEST(NodePoolStatusTest, RegistrationHealthResetsOnGenerationChangesAndHealsOnRegistration) {
  v1::NodePool pool = Pool();
  StatusInput in;
  in.node_class = ReadyClass(core::ConditionStatus::kTrue);
  pool.status = DesiredStatus(pool, in, kT0);
  EXPECT_EQ(StatusOf(pool.status, "NodeRegistrationHealthy"), core::ConditionStatus::kUnknown);
  // A registration older than the reset does not count; a newer one does.
  in.last_registration = kT0 - absl::Minutes(1);
  pool.status = DesiredStatus(pool, in, kT0 + absl::Minutes(1));
  EXPECT_EQ(StatusOf(pool.status, "NodeRegistrationHealthy"), core::ConditionStatus::kUnknown);
  in.last_registration = kT0 + absl::Minutes(2);
  pool.status = DesiredStatus(pool, in, kT0 + absl::Minutes(2));
  EXPECT_EQ(StatusOf(pool.status, "NodeRegistrationHealthy"), core::ConditionStatus::kTrue);
  // NodeRegistrationHealthy is not a dependent of Ready.
  EXPECT_EQ(StatusOf(pool.status, "Ready"), core::ConditionStatus::kTrue);
  // Unchanged: stays True.
  pool.status = DesiredStatus(pool, in, kT0 + absl::Minutes(3));
  EXPECT_EQ(StatusOf(pool.status, "NodeRegistrationHealthy"), core::ConditionStatus::kTrue);
  // The class's generation moved: Unknown again until the next registration.
  in.node_class.generation = 2;
  pool.status = DesiredStatus(pool, in, kT0 + absl::Minutes(4));
  EXPECT_EQ(StatusOf(pool.status, "NodeRegistrationHealthy"), core::ConditionStatus::kUnknown);
  EXPECT_EQ(pool.status.node_class_observed_generation, 2);
  // So does the pool's.
  in.last_registration = kT0 + absl::Minutes(5);
  pool.status = DesiredStatus(pool, in, kT0 + absl::Minutes(5));
  EXPECT_EQ(StatusOf(pool.status, "NodeRegistrationHealthy"), core::ConditionStatus::kTrue);
  pool.metadata.generation = 2;
  pool.status = DesiredStatus(pool, in, kT0 + absl::Minutes(6));
  EXPECT_EQ(StatusOf(pool.status, "NodeRegistrationHealthy"), core::ConditionStatus::kUnknown);
}

TEST(NodePoolStatusTest, RegistrationHealthFollowsWhatTheOutcomesCallFor) {
  v1::NodePool pool = Pool();
  StatusInput in;
  in.node_class = ReadyClass(core::ConditionStatus::kTrue);
  pool.status = DesiredStatus(pool, in, kT0);
  ASSERT_FALSE(RegistrationHealthResets(pool, in.node_class));
  // Half of the last four failed: False with the reason of the failure that tipped it.
  in.registration_call = state::RegistrationHealth::Call{
      .healthy = false, .reason = "RegistrationFailed", .message = "Failed to register node"};
  pool.status = DesiredStatus(pool, in, kT0 + absl::Minutes(1));
  const core::Condition* health = Get(pool.status, "NodeRegistrationHealthy");
  ASSERT_NE(health, nullptr);
  EXPECT_EQ(health->status, core::ConditionStatus::kFalse);
  EXPECT_EQ(health->reason, "RegistrationFailed");
  EXPECT_EQ(health->message, "Failed to register node");
  EXPECT_EQ(health->last_transition_time, kT0 + absl::Minutes(1));
  // Still not Ready-relevant.
  EXPECT_EQ(StatusOf(pool.status, "Ready"), core::ConditionStatus::kTrue);
  // A later failure keeps the first reason and transition time.
  in.registration_call->reason = "LaunchFailed";
  pool.status = DesiredStatus(pool, in, kT0 + absl::Minutes(2));
  health = Get(pool.status, "NodeRegistrationHealthy");
  EXPECT_EQ(health->reason, "RegistrationFailed");
  EXPECT_EQ(health->last_transition_time, kT0 + absl::Minutes(1));
  // Without a call, a registration does not turn False into True (only Unknown heals so).
  in.registration_call.reset();
  in.last_registration = kT0 + absl::Minutes(3);
  pool.status = DesiredStatus(pool, in, kT0 + absl::Minutes(3));
  EXPECT_EQ(StatusOf(pool.status, "NodeRegistrationHealthy"), core::ConditionStatus::kFalse);
  // Enough successes call for True.
  in.registration_call = state::RegistrationHealth::Call{.healthy = true};
  pool.status = DesiredStatus(pool, in, kT0 + absl::Minutes(4));
  EXPECT_EQ(StatusOf(pool.status, "NodeRegistrationHealthy"), core::ConditionStatus::kTrue);
  // A change of the pool resets to Unknown whatever the outcomes called for.
  in.registration_call = state::RegistrationHealth::Call{.healthy = false, .reason = "R"};
  pool.metadata.generation = 2;
  EXPECT_TRUE(RegistrationHealthResets(pool, in.node_class));
  pool.status = DesiredStatus(pool, in, kT0 + absl::Minutes(5));
  EXPECT_EQ(StatusOf(pool.status, "NodeRegistrationHealthy"), core::ConditionStatus::kUnknown);
  EXPECT_FALSE(RegistrationHealthResets(pool, in.node_class));
}

TEST(NodePoolStatusTest, UnchangedInputsLeaveTransitionTimesAlone) {
  v1::NodePool pool = Pool();
  StatusInput in;
  pool.status = DesiredStatus(pool, in, kT0);
  const v1::NodePoolStatus again = DesiredStatus(pool, in, kT0 + absl::Hours(1));
  EXPECT_EQ(again.conditions, pool.status.conditions);
}

}  // namespace
}  // namespace dovetail::controllers::nodepool
