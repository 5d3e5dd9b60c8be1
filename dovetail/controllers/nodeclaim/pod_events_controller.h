// PodEventsController ("nodeclaim.podevents"): stamps a NodeClaim with status.lastPodEventTime
// when a pod binds to its node, becomes terminal or terminating there, or is deleted from it
// (docs/nodeclaim-lifecycle.md, "Pod events"; the predicate is IsPodEvent in
// disruption_conditions.h). The Consolidatable condition counts consolidateAfter from that time.
// Pod informer handlers map the pod's node name to its NodeClaim through cluster state and enqueue
// the NodeClaim's name; a reconcile reads the NodeClaim from the API server and, unless it was
// stamped less than kPodEventDedupe ago, merge-patches lastPodEventTime = now (whole seconds) on
// the status subresource with the resourceVersion it read (a conflict retries).
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
#include "dovetail/controllers/nodeclaim/disruption_conditions.h"
#include "dovetail/controllers/reconcile_queue.h"
#include "dovetail/kube/handler_registration.h"
#include "dovetail/kube/workqueue.h"

namespace dovetail::controllers::nodeclaim {

struct PodEventsOptions {
  int workers = 4;
  absl::Duration dedupe = kPodEventDedupe;
  kube::WorkQueueOptions queue = {.base_delay = absl::Seconds(1), .max_delay = absl::Minutes(1)};
};

class PodEventsController final : public QueueController {
 public:
  // Registers the pod informer handlers; `deps` must outlive this object.
  explicit PodEventsController(const Dependencies& deps, PodEventsOptions options = {});
  ~PodEventsController() override;

  // One reconcile of the named NodeClaim (what a worker runs; public for tests).
  absl::StatusOr<kube::ReconcileResult> Reconcile(const std::string& name) override;

 private:
  void EnqueueForNode(const std::string& node_name);

  const PodEventsOptions options_;

  // After everything its handlers touch, so removed (each waiting for its handler's call in
  // progress) before any of it is destroyed.
  std::vector<kube::HandlerRegistration> registrations_;
};

}  // namespace dovetail::controllers::nodeclaim
