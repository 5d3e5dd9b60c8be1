// Involuntary replacement: how a controller outside disruption (the AWS interruption controller)
// asks for a node's pods to get room on new capacity before the node is drained. The
// DisruptionController implements it with its scheduling simulation and orchestration queue; the
// interface lives apart so that callers depend on this header only.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace dovetail::controllers::disruption {

struct ReplaceRequest {
  std::string node_claim;  // the NodeClaim's name
  // Why, for events and logs: "SpotInterrupted", "SpotRebalanceRecommendation",
  // "InstanceUnhealthy", ...
  std::string reason;
  // The metrics' reason label (karpenter_nodeclaims_disrupted_total and
  // karpenter_nodeclaims_created_total), e.g. upstream's message kind "spot_interrupted"; empty:
  // `reason` lowercased.
  std::string metric_reason;
  // The NodeClaim is deleted (and so drained) at this time at the latest, whether or not its
  // replacements are ready. A command started for a request never rolls back. InfiniteFuture:
  // the orchestration queue's command timeout (10 min to 1 h, QueueOptions).
  absl::Time deadline = absl::InfiniteFuture();
  // true: delete the NodeClaim as soon as every replacement is Initialized (spot interruption).
  // false: keep it until `deadline` even when the replacements are ready (rebalance pre-launch).
  bool delete_when_ready = true;
  // true: taint the Node karpenter.sh/disrupted:NoSchedule and mark it for deletion in the
  // cluster state at once. false: leave it schedulable until it is deleted (the caller may have
  // tainted it PreferNoSchedule); its replacements stay nominated meanwhile, so that disruption
  // does not remove them while they wait empty.
  bool cordon = true;
};

struct ReplaceResult {
  std::string command_id;                  // the orchestration queue's command id
  std::vector<std::string> replacements;   // NodeClaim names launched for the node's pods
  bool already_held = false;               // the node was already held; its command was updated
  int pods = 0;                            // reschedulable pods that the replacements make room for
  std::vector<std::string> unschedulable;  // "ns/name: reason" for pods the simulation cannot place
};

class Replacer {
 public:
  virtual ~Replacer() = default;
  // Launches NodeClaims for what the node's reschedulable pods need beyond the room on the other
  // nodes, then hands the node to the orchestration queue, which deletes its NodeClaim when every
  // replacement is Initialized (delete_when_ready) or at the deadline.
  //
  // When the queue already holds the node (at-least-once delivery, a voluntary command, an
  // earlier pre-launch), its command becomes involuntary: the deadline becomes the earlier of the
  // two, delete_when_ready and cordon are OR-ed in, and it never rolls back; OK with
  // already_held = true.
  //
  // Errors: NotFound (no such NodeClaim in the cluster state), FailedPrecondition (it is already
  // being deleted, or has no Node yet), else the simulation's or the queue's errors. The caller
  // then falls back to deleting the NodeClaim.
  virtual absl::StatusOr<ReplaceResult> Replace(const ReplaceRequest& request) = 0;
};

}  // namespace dovetail::controllers::disruption
