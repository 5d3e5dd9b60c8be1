// TerminationController ("node.termination", upstream's name): the karpenter.sh/termination
// finalizer of NodeClaims and Nodes, as upstream's node termination controller and the finalize
// step of its NodeClaim lifecycle controller (docs/termination.md). The lifecycle controller
// (controllers/nodeclaim) adds the finalizers and leaves deleting NodeClaims to this controller.
//
// Keys: "node/<name>" and "nodeclaim/<name>", triggered by the Node, NodeClaim and Pod informers
// (a pod change on a draining node wakes its node). Each reconcile reads the objects it acts on
// from the API server, not from a cache.
//
// NodeClaim being deleted (with the finalizer):
//   1. with spec.terminationGracePeriod, annotate karpenter.sh/nodeclaim-termination-timestamp =
//      deletionTimestamp + terminationGracePeriod (event TerminationGracePeriodExpiring);
//   2. delete its Nodes (by provider id) and wait until they are gone;
//   3. if it was launched, CloudProvider::Delete until NodeClaimNotFound;
//   4. remove the finalizer — last, after the Nodes' (which the Node flow removes).
// Node being deleted (with the finalizer):
//   1. delete its NodeClaim if it is not being deleted;
//   2. a Node that is not Ready and whose instance the cloud no longer knows: drop the finalizer;
//   3. taint karpenter.sh/disrupted:NoSchedule (replacing another effect of that key) and label
//      node.kubernetes.io/exclude-from-external-load-balancers=karpenter;
//   4. drain (drain.h): force-delete pods past the termination deadline, evict the first non-empty
//      tier through the Eviction API (UID precondition; 404/409 done; 429 = a PDB said no:
//      FailedDraining event, per-pod backoff), FailedDraining events for pods kept by
//      do-not-disrupt; once nothing is left, wait `min_drain_time` for pods that bound just
//      before the taint landed;
//   5. wait until the Node's VolumeAttachments are gone (except those of pods that are not
//      drained), unless the termination deadline has passed;
//   6. CloudProvider::Delete until NodeClaimNotFound;
//   7. remove the finalizer.
//
// Metrics (when deps.metrics is set), as upstream: karpenter_nodes_terminated_total{nodepool,
// zone}, karpenter_nodes_termination_duration_seconds{nodepool} (summary: deletion request →
// finalizer removed) and karpenter_nodes_lifetime_duration_seconds{nodepool} when a Node's
// finalizer is removed; karpenter_nodes_drained_total{nodepool} when Drained turns True;
// karpenter_pods_eviction_requests_total{code} per Eviction API answer (200 when evicted) and
// karpenter_pods_drained_total{reason} per evicted pod (the NodeClaim's DisruptionReason, else
// "Forceful Termination"); karpenter_nodeclaims_terminated_total{nodepool,capacity_type,zone},
// karpenter_nodeclaims_termination_duration_seconds{nodepool} when a NodeClaim's finalizer is
// removed, and karpenter_nodeclaims_instance_termination_duration_seconds{nodepool} (since
// InstanceTerminating turned True) when the cloud reports its instance gone.
// Steps 4-6 keep the NodeClaim's conditions Drained (Unknown/Draining, then True),
// VolumesDetached (Unknown/AwaitingVolumeDetachment, False/TerminationGracePeriodElapsed or True)
// and InstanceTerminating (True) as upstream.
// Every wait is a requeue (AddAfter) computed from Dependencies::clock; nothing sleeps.
//
// Thread-safety: see controllers/controller.h; informer handlers only enqueue.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/apis/core/node.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/reconcile_queue.h"
#include "dovetail/controllers/termination/drain.h"
#include "dovetail/kube/handler_registration.h"
#include "dovetail/kube/objects.h"
#include "dovetail/kube/string_pool.h"
#include "dovetail/kube/workqueue.h"

namespace dovetail::controllers::termination {

struct TerminationOptions {
  int workers = 10;
  // While pods are waiting eviction, look again this often (upstream: 1 s).
  absl::Duration drain_interval = absl::Seconds(1);
  // Drained only after nothing was left for this long (upstream's MinDrainTime: 5 s).
  absl::Duration min_drain_time = absl::Seconds(5);
  // While VolumeAttachments remain (upstream: 1 s).
  absl::Duration volume_interval = absl::Seconds(1);
  // While the instance is terminating, or Nodes of a deleting NodeClaim remain (upstream: 5 s).
  absl::Duration instance_interval = absl::Seconds(5);
  // Per-pod eviction backoff after a refusal (upstream: 100 ms doubling to 10 s).
  absl::Duration eviction_backoff_base = absl::Milliseconds(100);
  absl::Duration eviction_backoff_max = absl::Seconds(10);
  kube::WorkQueueOptions queue = {.base_delay = absl::Milliseconds(100),
                                  .max_delay = absl::Seconds(30)};
};

class TerminationController final : public QueueController {
 public:
  // Registers the Node, NodeClaim and Pod informer handlers; `deps` must outlive this object.
  explicit TerminationController(const Dependencies& deps, TerminationOptions options = {});
  ~TerminationController() override;

  // One reconcile of a key ("node/<name>" or "nodeclaim/<name>"); what a worker runs.
  absl::StatusOr<kube::ReconcileResult> Reconcile(const std::string& key) override;

  static std::string NodeKey(std::string_view name);
  static std::string NodeClaimKey(std::string_view name);

 private:
  struct EvictionBackoff {
    int failures = 0;
    absl::Time next_attempt;
  };
  struct DrainState {
    std::optional<absl::Time> drained_since;                 // nothing left since
    absl::flat_hash_map<std::string, EvictionBackoff> pods;  // by pod UID
  };

  // Every cached Node and NodeClaim being deleted is reconciled when Start()ed.
  void Seed(kube::WorkQueue& queue) override;
  absl::StatusOr<kube::ReconcileResult> ReconcileNodeClaim(const std::string& name);
  absl::StatusOr<kube::ReconcileResult> ReconcileNode(const std::string& name);

  // The termination deadline of a NodeClaim being deleted, if it has one.
  std::optional<absl::Time> TerminationTime(const apis::v1::NodeClaim& node_claim) const;
  // The NodeClaim whose provider id is the Node's (cache first, then the API server).
  absl::StatusOr<std::optional<apis::v1::NodeClaim>> NodeClaimForNode(const apis::core::Node& node);
  // Names of the Nodes with the NodeClaim's provider id that still exist (API server).
  absl::StatusOr<std::vector<apis::core::Node>> NodesForNodeClaim(
      const apis::v1::NodeClaim& node_claim);
  absl::Status Taint(const std::string& node_name);
  // Sets a status condition of the NodeClaim (Drained, VolumesDetached, InstanceTerminating) if
  // it differs; lastTransitionTime moves only when the status does. Best effort: these conditions
  // inform, they never hold termination back.
  void SetCondition(const std::string& node_claim_name, std::string_view type,
                    std::string_view status, std::string_view reason, std::string_view message);
  // One drain step; returns the delay before the next look, or nullopt once drained.
  // `reason`: what karpenter_pods_drained_total counts the evictions under.
  absl::StatusOr<std::optional<absl::Duration>> Drain(const apis::core::Node& node,
                                                      std::optional<absl::Time> deadline,
                                                      const std::string& reason);
  absl::Status Evict(const apis::core::Node& node, const PodRef& pod, DrainState& state,
                     const std::string& reason);
  // The metrics of a Node / NodeClaim whose finalizer this controller just removed.
  void NodeTerminated(const apis::core::Node& node);
  void NodeClaimTerminated(const apis::v1::NodeClaim& node_claim);
  // Pending VolumeAttachments of the node (see the file comment).
  absl::StatusOr<std::vector<std::string>> PendingVolumeAttachments(
      const apis::core::Node& node, const std::vector<kube::PodInfo>& pods);
  // The pods bound to the node, listed from the API server (fieldSelector spec.nodeName) and
  // decoded with kube::DecodePod. A pod that does not decode fails the list (the reconcile is
  // retried with backoff and the error logged), as a failed request does.
  absl::StatusOr<std::vector<kube::PodInfo>> PodsOn(const std::string& node_name);
  void Forget(const std::string& node_name);

  void NodeEvent(const apis::core::Node& node, std::string_view type, std::string_view reason,
                 std::string_view message);
  void NodeClaimEvent(const apis::v1::NodeClaim& node_claim, std::string_view type,
                      std::string_view reason, std::string_view message);
  void PodEvent(const PodRef& pod, std::string_view type, std::string_view reason,
                std::string_view message);

  const TerminationOptions options_;

  // What PodsOn decodes the listed pods with: the annotation keys' default keeps
  // karpenter.sh/do-not-disrupt and kubernetes.io/config.mirror. The pool is thread-safe (shared
  // by the workers) and grow-only, holding the pods' namespaces and keys (string_pool.h).
  kube::StringPool pool_;
  const kube::DecodeContext decode_{.pool = &pool_};

  metrics::Counter* nodes_terminated_ = nullptr;
  metrics::Summary* node_termination_duration_ = nullptr;
  metrics::Histogram* node_lifetime_ = nullptr;
  metrics::Counter* nodes_drained_ = nullptr;
  metrics::Counter* eviction_requests_ = nullptr;
  metrics::Counter* pods_drained_ = nullptr;
  metrics::Counter* node_claims_terminated_ = nullptr;
  metrics::Histogram* node_claim_termination_duration_ = nullptr;
  metrics::Histogram* instance_termination_duration_ = nullptr;

  mutable absl::Mutex mu_;
  // Nodes being drained: pod events on them enqueue the node.
  absl::flat_hash_set<std::string> draining_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, DrainState> drain_ ABSL_GUARDED_BY(mu_);  // by node name

  // After everything its handlers touch, so removed (each waiting for its handler's call in
  // progress) before any of it is destroyed.
  std::vector<kube::HandlerRegistration> registrations_;
};

}  // namespace dovetail::controllers::termination
