#include "dovetail/controllers/nodepool/status.h"

#include "absl/strings/str_join.h"
#include "dovetail/apis/core/condition_set.h"

namespace dovetail::controllers::nodepool {

namespace core = apis::core;
namespace v1 = apis::v1;

namespace {

// The node class generation the status records: the class's when found, else the one recorded.
int64_t ClassGeneration(const v1::NodePool& pool, const NodeClassView& node_class) {
  return node_class.state == NodeClassView::State::kFound
             ? node_class.generation
             : pool.status.node_class_observed_generation;
}

}  // namespace

v1::NodePoolStatus DesiredStatus(const v1::NodePool& pool, const StatusInput& input,
                                 absl::Time now) {
  v1::NodePoolStatus status = pool.status;
  if (input.usage.has_value()) {
    status.resources.clear();
    for (std::string_view name : {"cpu", "memory", "pods", "ephemeral-storage", "nodes"}) {
      status.resources[std::string(name)] = Quantity();
    }
    for (const auto& [name, quantity] : *input.usage) status.resources[name] = quantity;
    status.nodes = status.resources["nodes"].Value();
  }

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
  if (RegistrationHealthResets(pool, nc)) {
    conditions.SetUnknown(kConditionNodeRegistrationHealthy, core::kReasonAwaitingReconciliation,
                          "object is awaiting reconciliation");
  } else if (input.registration_call.has_value()) {
    const state::RegistrationHealth::Call& call = *input.registration_call;
    if (call.healthy) {
      conditions.SetTrue(kConditionNodeRegistrationHealthy);
    } else if (const core::Condition* c = conditions.Get(kConditionNodeRegistrationHealthy);
               c == nullptr || c->status != core::ConditionStatus::kFalse) {
      // Already False: the first failure's reason stays (upstream writes False only once).
      conditions.SetFalse(kConditionNodeRegistrationHealthy, call.reason, call.message);
    }
  }
  const core::Condition* health = conditions.Get(kConditionNodeRegistrationHealthy);
  if (!input.registration_call.has_value() && health->status == core::ConditionStatus::kUnknown &&
      input.last_registration.has_value() && health->last_transition_time.has_value() &&
      *input.last_registration >= *health->last_transition_time) {
    conditions.SetTrue(kConditionNodeRegistrationHealthy);
  }
  status.node_class_observed_generation = ClassGeneration(pool, nc);
  return status;
}

bool RegistrationHealthResets(const v1::NodePool& pool, const NodeClassView& node_class) {
  const core::Condition* health =
      v1::FindCondition(pool.status.conditions, kConditionNodeRegistrationHealthy);
  return health == nullptr || health->observed_generation != pool.metadata.generation ||
         pool.status.node_class_observed_generation != ClassGeneration(pool, node_class);
}

}  // namespace dovetail::controllers::nodepool
