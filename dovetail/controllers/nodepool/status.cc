#include "dovetail/controllers/nodepool/status.h"

#include "absl/strings/str_join.h"
#include "dovetail/apis/core/condition_set.h"

namespace dovetail::controllers::nodepool {

namespace core = apis::core;
namespace v1 = apis::v1;

v1::NodePoolStatus DesiredStatus(const v1::NodePool& pool, const StatusInput& input,
                                 absl::Time now) {
  v1::NodePoolStatus status = pool.status;
  status.resources.clear();
  for (std::string_view name : {"cpu", "memory", "pods", "ephemeral-storage", "nodes"}) {
    status.resources[std::string(name)] = Quantity();
  }
  for (const auto& [name, quantity] : input.usage) status.resources[name] = quantity;
  status.nodes = status.resources["nodes"].Value();

  core::ConditionSet conditions(status.conditions, pool.metadata.generation, now,
                                kNodePoolReadyDependents);
  conditions.Initialize();
  if (input.validation_errors.empty()) {
    conditions.SetTrue(kConditionValidationSucceeded);
  } else {
    conditions.SetFalse(kConditionValidationSucceeded, "NodePoolValidationFailed",
                        absl::StrJoin(input.validation_errors, "; "));
  }

  const NodeClassView& nc = input.node_class;
  switch (nc.state) {
    case NodeClassView::State::kNone:
      conditions.SetTrue(kConditionNodeClassReady);
      break;
    case NodeClassView::State::kNotFound:
      conditions.SetFalse(kConditionNodeClassReady, "NodeClassNotFound",
                          nc.message.empty() ? "NodeClass not found on cluster" : nc.message);
      break;
    case NodeClassView::State::kTerminating:
      conditions.SetFalse(kConditionNodeClassReady, "NodeClassTerminating",
                          "NodeClass is Terminating");
      break;
    case NodeClassView::State::kFound:
      if (!nc.ready.has_value() || nc.ready->status == core::ConditionStatus::kUnknown) {
        conditions.SetFalse(kConditionNodeClassReady, "NodeClassReadinessUnknown",
                            "Node Class Readiness Unknown");
      } else if (nc.ready->status == core::ConditionStatus::kFalse) {
        conditions.SetFalse(kConditionNodeClassReady, nc.ready->reason, nc.ready->message);
      } else {
        conditions.SetTrue(kConditionNodeClassReady);
      }
      break;
  }

  // Registration health: reset to Unknown whenever the pool's or its class's generation moved.
  const int64_t class_generation = nc.state == NodeClassView::State::kFound
                                       ? nc.generation
                                       : status.node_class_observed_generation;
  const core::Condition* health = conditions.Get(kConditionNodeRegistrationHealthy);
  if (health == nullptr || health->observed_generation != pool.metadata.generation ||
      status.node_class_observed_generation != class_generation) {
    conditions.SetUnknown(kConditionNodeRegistrationHealthy, core::kReasonAwaitingReconciliation,
                          "object is awaiting reconciliation");
    health = conditions.Get(kConditionNodeRegistrationHealthy);
  }
  if (health->status == core::ConditionStatus::kUnknown && input.last_registration.has_value() &&
      health->last_transition_time.has_value() &&
      *input.last_registration >= *health->last_transition_time) {
    conditions.SetTrue(kConditionNodeRegistrationHealthy);
  }
  status.node_class_observed_generation = class_generation;
  return status;
}

}  // namespace dovetail::controllers::nodepool
