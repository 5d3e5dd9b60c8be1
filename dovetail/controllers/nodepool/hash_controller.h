// HashController ("nodepool.hash"): keeps karpenter.sh/nodepool-hash and
// karpenter.sh/nodepool-hash-version current on every NodePool, as upstream's controller of the
// same name, so that a cluster switches between upstream Karpenter and Dovetail without drift
// (docs/migration.md). The stamps and the re-stamping of NodeClaims are hash.h.
//
// Keyed by NodePool name; triggered by the shared NodePool informer (a change of
// generation or annotations). A reconcile takes the cached NodePool, hashes its template
// (apis::v1::TemplateHash), then:
//   1. when NodeClaimsNeedRestamp, merge-patches the annotations of each of the pool's NodeClaims
//      that NodeClaimRestamp names (a NodeClaim gone meanwhile is skipped; any other error fails
//      the reconcile, which is retried with backoff, before the pool is stamped);
//   2. merge-patches the pool's two annotations (with the resourceVersion it read: a conflict
//      retries) when PoolStamp says so.
// A pool whose template does not hash (an API server without the CRD's validation) is logged and
// left alone.
// Thread-safety: see controllers/controller.h; informer handlers only enqueue.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/reconcile_queue.h"
#include "dovetail/kube/handler_registration.h"
#include "dovetail/kube/informer.h"
#include "dovetail/kube/workqueue.h"

namespace dovetail::controllers::nodepool {

struct HashOptions {
  int workers = 2;
  kube::WorkQueueOptions queue = {.base_delay = absl::Seconds(1), .max_delay = absl::Minutes(1)};
};

class HashController final : public QueueController {
 public:
  using NodePoolInformer = state::ClusterInformers::NodePoolInformer;

  // Registers the NodePool informer handlers; `deps` must outlive this object.
  explicit HashController(const Dependencies& deps, HashOptions options = {});
  ~HashController() override;

  // One reconcile of the named NodePool (what a worker runs; public for tests).
  absl::StatusOr<kube::ReconcileResult> Reconcile(const std::string& name) override;
  NodePoolInformer& node_pools() { return node_pools_; }

 private:
  // Every cached NodePool is reconciled once Start()ed.
  void Seed(kube::WorkQueue& queue) override;

  const HashOptions options_;
  NodePoolInformer& node_pools_;  // the shared one (deps.informers)

  // After everything its handlers touch, so removed (each waiting for its handler's call in
  // progress) before any of it is destroyed.
  std::vector<kube::HandlerRegistration> registrations_;
};

}  // namespace dovetail::controllers::nodepool
