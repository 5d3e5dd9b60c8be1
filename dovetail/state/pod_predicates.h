// The pod predicates of the controllers, over the compact pod of the informers and of live lists
// (kube/objects.h PodInfo), written once here. The same questions of the full apis::core::Pod are
// in apis/core/pod.h (IsTerminal, IsOwnedByDaemonSet, IsMirrorPod), which the solver reads.
//
// Rules, as upstream Karpenter:
//   - terminal: phase Succeeded or Failed; terminating: metadata.deletionTimestamp set;
//   - static: a mirror pod (annotation kubernetes.io/config.mirror, which the decoder keeps:
//     DecodeContext::annotation_keys) or a pod owned by its Node (kind Node, apiVersion v1); the
//     kubelet owns it, it is never evicted;
//   - owned by a DaemonSet: an owner of kind DaemonSet with an apiVersion in the apps group;
//   - critical: priorityClassName system-cluster-critical or system-node-critical;
//   - tolerates the disrupted taint: a toleration matching karpenter.sh/disrupted:NoSchedule as
//     Kubernetes matches tolerations (scheduling/taints.h); such a pod asked to stay;
//   - stuck terminating: deleted more than kStuckTerminatingAfter (1 min) ago;
//   - drainable: none of static, tolerating the disrupted taint, stuck terminating; waiting
//     eviction: drainable and not terminal (what node termination waits for,
//     controllers/termination/drain.h);
//   - evictable: not terminal, not terminating, not tolerating the disrupted taint, not static
//     (the pods disruption must reschedule, controllers/disruption);
//   - do-not-disrupt: annotation karpenter.sh/do-not-disrupt "true", or a Go duration not yet
//     elapsed since the pod started (apis/v1/do_not_disrupt.h).
// IsOwnedByDaemonSet and IsOwnedByNode also accept an owner reference without an apiVersion (the
// decoder stores "" for it, a hand-built PodInfo may leave it null; the API server requires it).
// Pure functions; thread-safe.
#pragma once

#include <string_view>

#include "absl/time/time.h"
#include "dovetail/kube/objects.h"

namespace dovetail::state {

// The priority classes Kubernetes creates for system pods.
inline constexpr std::string_view kSystemClusterCritical = "system-cluster-critical";
inline constexpr std::string_view kSystemNodeCritical = "system-node-critical";

// How long past its deletionTimestamp a terminating pod is still waited for (upstream: 1 min).
inline constexpr absl::Duration kStuckTerminatingAfter = absl::Minutes(1);

// Succeeded or Failed: its containers will not run again, its requests are free.
bool IsTerminal(const kube::PodInfo& pod);

// metadata.deletionTimestamp is set.
bool IsTerminating(const kube::PodInfo& pod);

// An owner reference of `kind` (controller or not, whatever its apiVersion).
bool OwnedBy(const kube::PodInfo& pod, std::string_view kind);

// An owner of kind DaemonSet whose apiVersion is apps/<version> (or absent).
bool IsOwnedByDaemonSet(const kube::PodInfo& pod);

// An owner of kind Node whose apiVersion is v1 (or absent).
bool IsOwnedByNode(const kube::PodInfo& pod);

// The kubelet's mirror of a static pod: annotation kubernetes.io/config.mirror.
bool IsMirrorPod(const kube::PodInfo& pod);

// A mirror pod or a pod owned by its Node.
bool IsStatic(const kube::PodInfo& pod);

// priorityClassName system-cluster-critical or system-node-critical.
bool IsCritical(const kube::PodInfo& pod);

// A toleration of karpenter.sh/disrupted:NoSchedule (its key or the empty key with Exists, its
// effect NoSchedule or unset, and Exists or the empty value).
bool ToleratesDisruptedTaint(const kube::PodInfo& pod);

// Deleted more than kStuckTerminatingAfter before `now`.
bool IsStuckTerminating(const kube::PodInfo& pod, absl::Time now);

// Not static, not tolerating the disrupted taint, not stuck terminating.
bool IsDrainable(const kube::PodInfo& pod, absl::Time now);

// Drainable and not terminal.
bool IsWaitingEviction(const kube::PodInfo& pod, absl::Time now);

// Not terminal, not terminating, not tolerating the disrupted taint, not static.
bool IsEvictable(const kube::PodInfo& pod);

// karpenter.sh/do-not-disrupt in force at `now` (apis/v1/do_not_disrupt.h): "true", or a Go
// duration not yet elapsed since status.startTime (since the creation when it has not started).
// Any other value ("false", a typo) protects nothing; `invalid` tells the caller, who reports it.
bool HasActiveDoNotDisrupt(const kube::PodInfo& pod, absl::Time now, bool* invalid = nullptr);

}  // namespace dovetail::state
