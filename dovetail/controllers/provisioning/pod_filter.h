// Which pods provisioning works for (reference §2.2): upstream's IsProvisionable on the pod
// informer's compact PodInfo, and the "ignored pod" rules on the converted apis::core::Pod.
//
// Provisionable: marked Unschedulable by the kube-scheduler (PodScheduled=False, reason
// Unschedulable; other schedulers' reasons are not ours), no spec.nodeName, no
// status.nominatedNodeName (the scheduler is preempting for it), not Succeeded/Failed, not being
// deleted, not owned by a DaemonSet, not a mirror/static pod (owned by a Node).
//
// Ignored (never given a NodeClaim, reported with a FailedScheduling event unless `silent`): a
// nodeSelector or required node-affinity term that fails Karpenter's runtime requirement validation
// (restricted keys such as kubernetes.io/hostname or karpenter.sh/*, bad operators or values),
// matchFields in a required term, and — silently — a `karpenter.sh/nodepool DoesNotExist`
// requirement (the pod opts out of Karpenter).
//
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "dovetail/apis/core/pod.h"
#include "dovetail/kube/objects.h"

namespace dovetail::controllers::provisioning {

bool IsProvisionable(const kube::PodInfo& pod);

struct IgnoreReason {
  std::string message;
  bool silent = false;  // no event (the pod opted out)
};

// nullopt when the pod is not ignored.
std::optional<IgnoreReason> IgnoredReason(const apis::core::Pod& pod);

}  // namespace dovetail::controllers::provisioning
