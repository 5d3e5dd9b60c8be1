// The decisions behind a NodeClaim's disruption conditions and its expiry
// (docs/nodeclaim-lifecycle.md, "Disruption conditions and expiration"), as pure functions over
// plain data. The controllers that read the objects, ask the cloud provider and write the results
// are pod_events_controller.h, disruption_conditions_controller.h and expiration_controller.h.
//
//   - Pod events: a pod binding to a node, becoming terminal or terminating on it, or being
//     removed from it stamps the node's NodeClaim with status.lastPodEventTime, at most once per
//     kPodEventDedupe.
//   - Consolidatable: absent when the pool's consolidateAfter is Never or the claim is not
//     Initialized; True once consolidateAfter has passed since lastPodEventTime (or, without one,
//     since Initialized became True); absent before, with a requeue at that instant.
//   - Drifted (first hit wins): NodePoolDrifted (template hash differs at an equal hash version),
//     RequirementsDrifted (the claim's labels no longer satisfy the pool's requirements; widening
//     a pool never drifts, narrowing out the node's value does), InstanceTypeNotFound (the
//     claim's instance type or a compatible offering is gone from the pool's catalog). Provider
//     drift (CloudProvider::IsDrifted) is the controller's fourth check.
//   - Expiration: spec.expireAfter (not Never) has passed since creation.
// Thread-safe (stateless).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dovetail/apis/core/meta.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/cloudprovider/catalog.h"
#include "dovetail/kube/objects.h"

namespace dovetail::controllers::nodeclaim {

// lastPodEventTime is not rewritten more often than this (upstream: 10 s).
inline constexpr absl::Duration kPodEventDedupe = absl::Seconds(10);
// Drift is looked at again this often (upstream: 5 min).
inline constexpr absl::Duration kDriftRecheck = absl::Minutes(5);
// InstanceTypeNotFound is only checked for claims at least this old ...
inline constexpr absl::Duration kInstanceTypeCheckMinAge = absl::Hours(1);
// ... and, after a check found the type, not again for this long.
inline constexpr absl::Duration kInstanceTypeCheckInterval = absl::Minutes(30);

// ---- pod events ---------------------------------------------------------------------------------

// Whether a pod informer event is a pod event for the node it is bound to. `old_pod` is null for
// an add. Adds count when the pod is bound; updates when the pod newly binds, newly becomes
// terminal (Succeeded/Failed) or newly terminating (deletionTimestamp set) while bound. Deletions
// count whenever the deleted pod was bound (the caller checks pod.node_name).
bool IsPodEvent(const kube::PodInfo* old_pod, const kube::PodInfo& pod);

// Whether lastPodEventTime should be set to `now`: unset, or at least `dedupe` old.
bool PodEventDue(const apis::v1::NodeClaim& node_claim, absl::Time now,
                 absl::Duration dedupe = kPodEventDedupe);

// ---- Consolidatable -----------------------------------------------------------------------------

struct ConsolidatableVerdict {
  bool consolidatable = false;  // true: set True; false: remove the condition
  // When the claim becomes consolidatable (set while it is not yet).
  std::optional<absl::Duration> requeue_after;
};

// `node_pool` has its defaults applied. Errors: InvalidArgument when consolidateAfter does not
// parse (the caller leaves the condition alone and reports the error).
absl::StatusOr<ConsolidatableVerdict> EvaluateConsolidatable(const apis::v1::NodeClaim& node_claim,
                                                             const apis::v1::NodePool& node_pool,
                                                             absl::Time now);

// ---- Drifted ------------------------------------------------------------------------------------

// The pool's side of the static drift check: its karpenter.sh/nodepool-hash and
// karpenter.sh/nodepool-hash-version annotations, as the NodePool hash controller
// (controllers/nodepool/hash_controller.h, or upstream's) stamps them; empty when absent.
struct NodePoolHashStamp {
  std::string hash;
  std::string version;
};
NodePoolHashStamp HashStampOf(const apis::v1::NodePool& node_pool);

// kReasonNodePoolDrifted when the pool and the claim both carry a hash and a hash version, the
// versions are equal and the hashes differ; else "".
std::string_view StaticDrift(const apis::v1::NodeClaim& node_claim, const NodePoolHashStamp& stamp);

// kReasonRequirementsDrifted when the claim's labels (as In requirements) are not strictly
// compatible with the pool's requirements: every key the pool requires must be a label of the
// claim with an admitted value (NotIn/DoesNotExist on an absent label are fine); else "".
// Errors: InvalidArgument when the pool's requirements do not parse.
absl::StatusOr<std::string_view> RequirementsDrift(const apis::v1::NodeClaim& node_claim,
                                                   const apis::v1::NodePool& node_pool);

// Whether the InstanceTypeNotFound check is due: the claim is at least kInstanceTypeCheckMinAge
// old and the last check that found its type (if any) is kInstanceTypeCheckInterval old.
bool InstanceTypeCheckDue(const apis::v1::NodeClaim& node_claim,
                          std::optional<absl::Time> last_found, absl::Time now);

// kReasonInstanceTypeNotFound when the claim's node.kubernetes.io/instance-type label names no
// type of `catalog`, or that type has no offering compatible with the claim's labels (a reserved
// claim may also fall back to on-demand, so it is checked against on-demand offerings too); else
// "". A claim without the label is not judged.
std::string_view InstanceTypeDrift(const apis::v1::NodeClaim& node_claim,
                                   const cloudprovider::Catalog& catalog);

// ---- conditions ---------------------------------------------------------------------------------

// Removes the condition of `type`. Returns whether it was there.
bool RemoveCondition(std::vector<apis::core::Condition>& conditions, std::string_view type);

// Sets Consolidatable True, or removes it. Returns whether anything changed.
bool ApplyConsolidatable(apis::v1::NodeClaim& node_claim, bool consolidatable, absl::Time now);

// Sets Drifted True with `reason` (also the message), or removes it when `reason` is empty.
// Returns whether anything changed.
bool ApplyDrifted(apis::v1::NodeClaim& node_claim, std::string_view reason, absl::Time now);

// ---- expiration ---------------------------------------------------------------------------------

struct ExpirationVerdict {
  bool expired = false;
  // Until the claim expires (set while it has not).
  std::optional<absl::Duration> requeue_after;
};

// Never expires when spec.expireAfter is unset or Never, or the creation time is unknown.
// Errors: InvalidArgument when expireAfter does not parse.
absl::StatusOr<ExpirationVerdict> EvaluateExpiration(const apis::v1::NodeClaim& node_claim,
                                                     absl::Time now);

}  // namespace dovetail::controllers::nodeclaim
