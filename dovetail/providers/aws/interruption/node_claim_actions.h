// What both interruption controllers (interruption_controller.h: SQS messages;
// instance_status_controller.h: EC2 status checks) do to the NodeClaims of an instance: find them
// in the cluster state by instance id, record the interruption event on the NodeClaim and its
// Node, and delete the NodeClaim through the graceful termination path, counting
// karpenter_nodeclaims_disrupted_total{reason=<message kind>,nodepool,capacity_type}.
//
// Free functions; thread-safe as the dependencies are.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/state_node.h"

namespace dovetail::providers::aws::interruption {

// The managed nodes of the cluster state (a NodeClaim, with or without its Node) by the instance
// id of their provider id (aws:///<zone>/<instance-id>).
std::map<std::string, state::StateNode> ManagedNodesByInstanceId(const state::Cluster& cluster);

// karpenter_nodeclaims_disrupted_total, registered (or found) in `registry`; null for null.
metrics::Counter* NodeClaimsDisruptedCounter(metrics::Registry* registry);

// The value of a label of the node (its Node's, else its NodeClaim's); "" when absent.
std::string NodeLabel(const state::StateNode& node, std::string_view key);

// A Warning event with action "Interruption" on the NodeClaim and, when it has one, its Node.
// Best effort (the recorder rate-limits and may drop).
void RecordInterruptionEvent(kube::EventRecorder& events, const state::StateNode& node,
                             std::string_view reason, std::string_view message);

// Deletes the node's NodeClaim (UID precondition) unless it is already deleting, logs under
// `logger` and counts karpenter_nodeclaims_disrupted_total with reason `kind`. A NodeClaim that is
// gone, or replaced by another of the same name, is fine; other API errors are returned (the
// caller retries).
absl::Status DeleteInterruptedNodeClaim(const controllers::Dependencies& deps,
                                        const state::StateNode& node, std::string_view kind,
                                        std::string_view logger);

}  // namespace dovetail::providers::aws::interruption
