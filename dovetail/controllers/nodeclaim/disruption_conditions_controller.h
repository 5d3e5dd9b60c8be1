// DisruptionConditionsController ("nodeclaim.disruption"): keeps the Consolidatable and Drifted
// conditions of every NodeClaim of a NodePool (docs/nodeclaim-lifecycle.md; the decisions are
// disruption_conditions.h). Standalone NodeClaims (no karpenter.sh/nodepool label), NodeClaims
// being deleted and NodeClaims whose NodePool does not exist are left alone.
//
// Keyed by NodeClaim name; triggered by the NodeClaim informer and by changes of a NodePool's
// spec, labels or annotations (every NodeClaim of the pool). The NodePools come from the shared
// NodePool informer (deps.informers), with the CRD defaults applied. Each reconcile reads the
// NodeClaim from the API server and:
//   1. Consolidatable: True once consolidateAfter has passed since the last pod event (or since
//      Initialized), removed before that, when consolidateAfter is Never or the claim is not
//      Initialized; requeued for the instant it becomes consolidatable;
//   2. Drifted, for launched claims (removed otherwise), first hit wins: NodePoolDrifted,
//      RequirementsDrifted, InstanceTypeNotFound (claims older than 1 h; a check that finds the
//      type is remembered by UID for 30 min), then CloudProvider::IsDrifted; removed when none
//      hits; looked at again every `drift_recheck`;
// then writes the status with merge patches carrying the resourceVersion it read (a
// conflict retries the reconcile). Unparseable NodePool fields are logged and that check skipped.
// Thread-safety: see controllers/controller.h; informer handlers only enqueue.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/nodeclaim/disruption_conditions.h"
#include "dovetail/controllers/reconcile_queue.h"
#include "dovetail/kube/handler_registration.h"
#include "dovetail/kube/informer.h"
#include "dovetail/kube/workqueue.h"

namespace dovetail::controllers::nodeclaim {

struct DisruptionConditionsOptions {
  int workers = 4;
  absl::Duration drift_recheck = kDriftRecheck;
  kube::WorkQueueOptions queue = {.base_delay = absl::Seconds(1), .max_delay = absl::Minutes(1)};
};

class DisruptionConditionsController final : public QueueController {
 public:
  using NodePoolInformer = state::ClusterInformers::NodePoolInformer;

  // Registers the NodeClaim and NodePool informer handlers; `deps` must outlive this object.
  explicit DisruptionConditionsController(const Dependencies& deps,
                                          DisruptionConditionsOptions options = {});
  ~DisruptionConditionsController() override;

  // One reconcile of the named NodeClaim (what a worker runs; public for tests).
  absl::StatusOr<kube::ReconcileResult> Reconcile(const std::string& name) override;
  NodePoolInformer& node_pools() { return node_pools_; }

 private:
  // Every cached NodeClaim of a pool is reconciled when Start()ed.
  void Seed(kube::WorkQueue& queue) override;
  void EnqueuePool(const std::string& pool_name);
  // The first drift reason, or "". Errors: transient cloud errors.
  absl::StatusOr<std::string> Drift(const apis::v1::NodeClaim& node_claim,
                                    const apis::v1::NodePool& node_pool,
                                    const NodePoolHashStamp& stamp, absl::Time now);

  const DisruptionConditionsOptions options_;
  NodePoolInformer& node_pools_;  // the shared one (deps.informers)

  absl::Mutex cache_mu_;
  // NodeClaim UID -> when the InstanceTypeNotFound check last found the claim's type.
  absl::flat_hash_map<std::string, absl::Time> instance_type_found_ ABSL_GUARDED_BY(cache_mu_);

  // After everything its handlers touch, so removed (each waiting for its handler's call in
  // progress) before any of it is destroyed.
  std::vector<kube::HandlerRegistration> registrations_;
};

}  // namespace dovetail::controllers::nodeclaim
