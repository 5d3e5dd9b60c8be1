// The NodePool status upstream writes (its nodepool.counter, nodepool.validation,
// nodepool.readiness and nodepool.registrationhealth controllers), as one pure function of what
// the status controller (status_controller.h) gathered:
//   - status.resources: cpu, memory, pods, ephemeral-storage and nodes, 0 when absent, overlaid
//     with the pool's usage (each machine's capacity, its requests until launched, and one
//     `nodes` per NodeClaim; state::Cluster::NodePoolUsage); status.nodes: the `nodes` count;
//   - ValidationSucceeded: True, or False NodePoolValidationFailed with the runtime validation's
//     errors (apis/validation; the API server's CRD rules can lag the runtime checks);
//   - NodeClassReady: True when the node class is Ready; False NodeClassNotFound,
//     NodeClassTerminating, NodeClassReadinessUnknown, or the class's own Ready reason and
//     message when it is not Ready; True for a cloud provider without node class objects (kwok);
//   - NodeRegistrationHealthy: Unknown (AwaitingReconciliation) when absent or when the pool's
//     generation or its node class's generation changed since it was set (status.
//     nodeClassObservedGeneration; RegistrationHealthResets); otherwise what the pool's recent
//     launch and registration outcomes call for (state/registration_health.h): False with the
//     reason and message of the failure that made half of the last four fail, or True; without
//     such a call, Unknown turns True once a NodeClaim of the pool registered after the Unknown
//     transition (the outcomes of a restarted controller start empty).
//   - Ready (apis/core/condition_set.h) over ValidationSucceeded and NodeClassReady.
// Pure; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "dovetail/apis/core/meta.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/common/quantity.h"
#include "dovetail/state/registration_health.h"

namespace dovetail::controllers::nodepool {

inline constexpr std::string_view kConditionValidationSucceeded = "ValidationSucceeded";
inline constexpr std::string_view kConditionNodeClassReady = "NodeClassReady";
inline constexpr std::string_view kConditionNodeRegistrationHealthy = "NodeRegistrationHealthy";
inline constexpr std::string_view kNodePoolReadyDependents[] = {kConditionValidationSucceeded,
                                                                kConditionNodeClassReady};

// What the controller found of the pool's node class.
struct NodeClassView {
  enum class State {
    kNone,         // the cloud provider has no node class objects (kwok): nothing to wait for
    kNotFound,     // no such object, or a kind this cloud provider does not serve
    kTerminating,  // being deleted
    kFound,
  };
  State state = State::kNone;
  std::optional<apis::core::Condition> ready;  // kFound: its Ready condition, if any
  int64_t generation = 0;                      // kFound
  std::string message;                         // kNotFound: why
};

struct StatusInput {
  // state::Cluster::NodePoolUsage; unset while the cluster state has not synced (a NodeClaim not
  // yet launched, as upstream's counter waits): status.resources and status.nodes stay as they are,
  // while the conditions are still computed.
  std::optional<ResourceList> usage;
  NodeClassView node_class;
  std::vector<std::string> validation_errors;  // empty when valid
  // The latest Registered=True transition among the pool's NodeClaims.
  std::optional<absl::Time> last_registration;
  // What the pool's recent outcomes call for (state::RegistrationHealth::CallFor).
  std::optional<state::RegistrationHealth::Call> registration_call;
};

// Whether NodeRegistrationHealthy starts again from Unknown: it is absent, or the pool's generation
// or its node class's generation moved since it was set. The caller then resets the pool's
// outcomes (state::RegistrationHealth::Reset), and DesiredStatus ignores `registration_call`.
bool RegistrationHealthResets(const apis::v1::NodePool& pool, const NodeClassView& node_class);

// The status to write; `pool.status` is the current one (conditions keep their transition
// times when their status does not change).
apis::v1::NodePoolStatus DesiredStatus(const apis::v1::NodePool& pool, const StatusInput& input,
                                       absl::Time now);

}  // namespace dovetail::controllers::nodepool
