// ReconcileQueue: the work queue and workers of a queue-driven controller (controller.h), the
// skeleton every keyed controller shares. The controller keeps its pure decisions and its
// Reconcile; it holds one ReconcileQueue and forwards to it:
//  - Start(seed): creates a kube::WorkQueue, lets `seed` add the keys that need a first reconcile
//    (usually from the shared informers' stores), and starts the kube::ReconcileWorkers over it;
//    a no-op while running;
//  - Stop(): shuts the queue down and joins the workers; idempotent; Start() may follow again;
//  - Add(key): what informer handlers call; dropped while stopped (Start's seed catches up);
//  - OldestProcessingStart(): the controller's OldestWorkStart (nullopt while stopped).
// Each Start() creates a fresh queue, so the keys and backoffs of a previous term are forgotten.
//
// Thread-safety: Start and Stop from one thread (the operator's); Add and OldestProcessingStart
// from any thread at any time. Stop must not be called from a reconcile. The reconcile must stay
// callable until Stop() returns (declare the ReconcileQueue after what it uses; its destructor
// stops it).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/kube/workqueue.h"

namespace dovetail::controllers {

class ReconcileQueue {
 public:
  // Adds the keys of a first reconcile to a new queue (called under the queue's lock: it must
  // only read caches and Add).
  using Seed = std::function<void(kube::WorkQueue&)>;

  // `options` names the queue (WorkQueueOptions::WithMetrics) for its metrics.
  ReconcileQueue(kube::WorkQueueOptions options, int workers,
                 kube::ReconcileWorkers::Reconcile reconcile)
      : options_(std::move(options)), workers_(workers), reconcile_(std::move(reconcile)) {}
  ~ReconcileQueue() { Stop(); }
  ReconcileQueue(const ReconcileQueue&) = delete;
  ReconcileQueue& operator=(const ReconcileQueue&) = delete;

  void Start(const Seed& seed = nullptr) {
    absl::MutexLock lock(&mu_);
    if (queue_ != nullptr) return;
    queue_ = std::make_unique<kube::WorkQueue>(options_);
    if (seed) seed(*queue_);
    running_ = std::make_unique<kube::ReconcileWorkers>(*queue_, reconcile_, workers_);
    running_->Start();
  }

  void Stop() {
    std::unique_ptr<kube::WorkQueue> queue;
    std::unique_ptr<kube::ReconcileWorkers> running;
    {
      absl::MutexLock lock(&mu_);
      queue = std::move(queue_);
      running = std::move(running_);
    }
    if (running != nullptr) running->Stop();
    running.reset();
    queue.reset();
  }

  void Add(const std::string& key) {
    absl::MutexLock lock(&mu_);
    if (queue_ != nullptr) queue_->Add(key);
  }

  std::optional<absl::Time> OldestProcessingStart() const {
    absl::MutexLock lock(&mu_);
    if (queue_ == nullptr) return std::nullopt;
    return queue_->OldestProcessingStart();
  }

 private:
  const kube::WorkQueueOptions options_;
  const int workers_;
  const kube::ReconcileWorkers::Reconcile reconcile_;
  mutable absl::Mutex mu_;  // guards the queue's lifetime against Add from informer handlers
  std::unique_ptr<kube::WorkQueue> queue_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<kube::ReconcileWorkers> running_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dovetail::controllers
