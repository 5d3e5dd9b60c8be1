// ExpirationController ("nodeclaim.expiration"): deletes a NodeClaim once spec.expireAfter has
// passed since its creation (docs/nodeclaim-lifecycle.md; EvaluateExpiration in
// disruption_conditions.h). Expiry is forceful, as upstream since v1.0: no disruption budgets, no
// replacement launched first; the NodeClaim's finalizer then drains and terminates the node
// (where PDBs and do-not-disrupt only delay the drain, bounded by terminationGracePeriod).
// Applies to every NodeClaim, standalone ones included.
// Keyed by NodeClaim name; triggered by the NodeClaim informer. A reconcile reads the NodeClaim
// from the API server; unless it is being deleted, an expired NodeClaim gets a Normal event
// "Expired" and is deleted (UID precondition), and karpenter_nodeclaims_disrupted_total
// {reason="expired", nodepool, capacity_type} is incremented; one not yet expired is requeued for
// the expiry instant. An unparseable expireAfter is logged and the NodeClaim left alone.
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
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/reconcile_queue.h"
#include "dovetail/kube/handler_registration.h"
#include "dovetail/kube/workqueue.h"
#include "dovetail/metrics/registry.h"

namespace dovetail::controllers::nodeclaim {

struct ExpirationOptions {
  int workers = 2;
  kube::WorkQueueOptions queue = {.base_delay = absl::Seconds(1), .max_delay = absl::Minutes(1)};
};

class ExpirationController final : public QueueController {
 public:
  // Registers the NodeClaim informer handlers and the metric; `deps` must outlive this object.
  explicit ExpirationController(const Dependencies& deps, ExpirationOptions options = {});
  ~ExpirationController() override;

  // One reconcile of the named NodeClaim (what a worker runs; public for tests).
  absl::StatusOr<kube::ReconcileResult> Reconcile(const std::string& name) override;

 private:
  // Every cached NodeClaim with an expireAfter is reconciled when Start()ed.
  void Seed(kube::WorkQueue& queue) override;

  const ExpirationOptions options_;
  metrics::Counter* disrupted_ = nullptr;  // karpenter_nodeclaims_disrupted_total, or null

  // After everything its handlers touch, so removed (each waiting for its handler's call in
  // progress) before any of it is destroyed.
  std::vector<kube::HandlerRegistration> registrations_;
};

}  // namespace dovetail::controllers::nodeclaim
