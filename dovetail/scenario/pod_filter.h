// Which pods provisioning works for: upstream's IsProvisionable on the pod informer's compact
// PodInfo, and the "ignored pod" rules on the converted apis::core::Pod.
//
// Provisionable: marked Unschedulable by the kube-scheduler (PodScheduled=False, reason
// Unschedulable; other schedulers' reasons are not ours), no spec.nodeName, no
// status.nominatedNodeName (the scheduler is preempting for it), not Succeeded/Failed, not being
// deleted, not owned by a DaemonSet, not a mirror/static pod (owned by a Node).
//
// Ignored (never given a NodeClaim, reported with a FailedScheduling event unless `silent`): a
// pod with Dynamic Resource Allocation requirements (spec.resourceClaims or a container's
// resources.claims: Dovetail allocates no devices, as upstream with IGNORE_DRA_REQUESTS=true,
// its default and the only value Dovetail accepts), a
// nodeSelector or required node-affinity term that fails Karpenter's runtime requirement validation
// (restricted keys such as kubernetes.io/hostname or karpenter.sh/*, bad operators or values),
// matchFields in a required term, and — silently — a `karpenter.sh/nodepool DoesNotExist`
// requirement (the pod opts out of Karpenter).
//
// Reschedulable (upstream's pods of deleting nodes): a pod bound to a node that is marked for
// deletion or being deleted, which provisioning makes room for ahead of the drain: not
// Succeeded/Failed, not being deleted (StatefulSet pods count even then: their replacement keeps
// the name), not a DaemonSet or mirror pod, and no karpenter.sh/do-not-disrupt in force ("true",
// or a Go duration since the pod started that has not elapsed).
//
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/kube/objects.h"

namespace dovetail::scenario {

bool IsProvisionable(const kube::PodInfo& pod);

// DRA requirements of a pod or a DaemonSet's pod template (see above); a DaemonSet with them is
// left out of a new node's daemon overhead, as upstream does.
bool HasDraRequirements(const apis::core::PodSpec& spec);
// The FailedScheduling reason of a pod with DRA requirements (decoded into PodInfo).
inline constexpr std::string_view kDraIgnoredMessage =
    "ignoring pod, it has Dynamic Resource Allocation requirements, which Dovetail does not "
    "provision for (IGNORE_DRA_REQUESTS)";

bool IsReschedulable(const kube::PodInfo& pod, absl::Time now);

struct IgnoreReason {
  std::string message;
  bool silent = false;  // no event (the pod opted out)
};

// nullopt when the pod is not ignored.
std::optional<IgnoreReason> IgnoredReason(const apis::core::Pod& pod);

}  // namespace dovetail::scenario
