// The drain decisions of node termination (docs/termination.md, "Drain"), as pure functions
// over the pods on a node so that they are unit-tested without a cluster; the
// TerminationController (termination_controller.h) lists the pods, calls PlanDrain and carries
// out the plan (force deletions, evictions through the Eviction API, events).
//
// Pod classification (state/pod_predicates.h, as upstream):
//   - static (a mirror pod or a pod owned by its Node): never evicted (the kubelet owns it);
//   - tolerates karpenter.sh/disrupted:NoSchedule: left on the node (it asked to stay);
//   - stuck terminating: deleted more than state::kStuckTerminatingAfter (1 min) past its
//     deletionTimestamp; no longer waited for;
//   - drainable = none of the three; waiting eviction = drainable and not terminal;
//   - critical: priorityClassName system-cluster-critical or system-node-critical;
//   - tier: non-critical, non-critical DaemonSet, critical, critical DaemonSet (the order of
//     kubelet's graceful node shutdown). Only the first tier with a pod waiting eviction is
//     evicted; the next starts once it is empty.
//   - do-not-disrupt: annotation karpenter.sh/do-not-disrupt "true", or a Go duration that has
//     not yet elapsed since the pod started; such a pod is never evicted, only force-deleted at
//     the node's termination deadline.
// Node termination deadline (the NodeClaim's deletionTimestamp + terminationGracePeriod, or its
// karpenter.sh/nodeclaim-termination-timestamp annotation): a pod waiting eviction whatever its
// tier is deleted (not evicted) once now > deadline - its own terminationGracePeriodSeconds, so
// it gets its whole grace period before the machine goes (at once when its grace exceeds the time
// left), with gracePeriodSeconds = max(1, seconds left); a pod already terminating is deleted
// again the same way when its deletionTimestamp falls after the deadline.
// Thread-compatible (no state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "dovetail/kube/objects.h"

namespace dovetail::controllers::termination {

enum class DrainTier { kNonCritical = 0, kNonCriticalDaemonSet, kCritical, kCriticalDaemonSet };
inline constexpr int kDrainTiers = 4;
std::string_view DrainTierName(DrainTier tier);

// Critical or not (state::IsCritical), DaemonSet or not (state::IsOwnedByDaemonSet).
DrainTier TierOf(const kube::PodInfo& pod);

// When the pod must be deleted so that it gets its full terminationGracePeriodSeconds (default
// 30 s) before `deadline`; nullopt without a deadline.
std::optional<absl::Time> PodDeleteTime(const kube::PodInfo& pod,
                                        std::optional<absl::Time> deadline);
// Whether the pod is past that time (see the file comment), given it is waiting eviction.
bool NeedsForceDelete(const kube::PodInfo& pod, absl::Time now, std::optional<absl::Time> deadline);
// gracePeriodSeconds of a forced deletion: max(1, whole seconds left until `deadline`).
int64_t ForceDeleteGraceSeconds(absl::Time now, absl::Time deadline);

struct PodRef {
  std::string ns;
  std::string name;
  std::string uid;
  DrainTier tier = DrainTier::kNonCritical;
  std::string Key() const { return ns + "/" + name; }
};

struct ForceDelete {
  PodRef pod;
  int64_t grace_seconds = 1;
};

struct DrainPlan {
  // Nothing is left to wait for: every pod is terminal, static, tolerates the disrupted taint,
  // or is stuck terminating.
  bool drained = false;
  // Pods waiting eviction, over every tier.
  int waiting = 0;
  // The tier being drained (the first with a pod waiting eviction), when not drained.
  std::optional<DrainTier> tier;
  // Deleted now because of the termination deadline, whatever their tier.
  std::vector<ForceDelete> force_delete;
  // Pods of `tier` to evict now (not terminating, no active do-not-disrupt, not force-deleted).
  std::vector<PodRef> evict;
  // Pods of `tier` kept by an active do-not-disrupt annotation (until the deadline, if any).
  std::vector<PodRef> do_not_disrupt;
  // Pods of any tier whose do-not-disrupt value is neither "true" nor a Go duration.
  std::vector<PodRef> invalid_do_not_disrupt;
};

// The drain step for the pods bound to a node, at `now`, with the node's termination deadline.
DrainPlan PlanDrain(const std::vector<kube::PodInfo>& pods, absl::Time now,
                    std::optional<absl::Time> deadline);

}  // namespace dovetail::controllers::termination
