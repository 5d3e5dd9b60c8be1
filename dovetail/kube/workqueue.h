// A controller work queue with client-go's guarantees:
//  - deduplication: a key added several times before a worker takes it is processed once;
//  - exclusivity: a key is never handed to two workers at once; a key added while being
//    processed is queued again when its worker calls Done();
//  - per-item exponential backoff: AddRateLimited() delays a key base*2^(failures-1), capped;
//    Forget() resets its failure count; AddAfter() delays any key;
//  - ShutDown() wakes every Get(), which then return nullopt.
// ReconcileWorkers (below) runs N workers over a queue and a reconcile function.
// Delays are measured on the real (monotonic) clock. Thread-safe.
//
// Whatever the options, the queue knows when each key being processed was handed out (one hash
// map entry per processing key): OldestProcessingStart() is how a controller reports a stuck
// reconcile to the operator's /healthz (controllers/controller.h).
//
// Metrics (when WorkQueueOptions names the queue and gives a registry), with upstream's names,
// labels and buckets (test/testdata/upstream-metrics.json):
//  - the queue exports client-go's workqueue_* families as controller-runtime registers them:
//    `name` and `controller` both carry the queue's name, workqueue_depth's `priority` is "" (no
//    priority queue). adds_total counts keys that were not already waiting; depth is the keys
//    waiting (including ones re-added while processing); queue_duration_seconds is add-to-Get,
//    work_duration_seconds Get-to-Done; retries_total counts AddAfter/AddRateLimited calls;
//    unfinished_work_seconds and longest_running_processor_seconds are refreshed every 500ms
//    while the queue lives. Destroying the queue zeroes its gauges.
//  - the ReconcileWorkers over it export controller-runtime's controller_runtime_* reconcile
//  families
//    under the same name (controller-runtime names a controller's queue after the controller).
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/metrics/registry.h"

namespace dovetail::kube {

struct WorkQueueOptions {
  absl::Duration base_delay = absl::Milliseconds(5);
  absl::Duration max_delay = absl::Seconds(1000);
  // Both set: export the metrics above, labelled with `name` (the controller's name).
  std::string name;
  metrics::Registry* metrics = nullptr;

  // A copy with `name` and `registry` set (a null registry: no metrics).
  WorkQueueOptions WithMetrics(std::string_view queue_name, metrics::Registry* registry) const {
    WorkQueueOptions out = *this;
    out.name = std::string(queue_name);
    out.metrics = registry;
    return out;
  }
};

class WorkQueue {
 public:
  explicit WorkQueue(WorkQueueOptions options = {});
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Add(const std::string& key);
  void AddAfter(const std::string& key, absl::Duration delay);
  void AddRateLimited(const std::string& key);
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const;

  // Blocks for the next key; nullopt after ShutDown().
  std::optional<std::string> Get();
  // Marks the key's processing finished (required after every successful Get()).
  void Done(const std::string& key);

  void ShutDown();
  size_t Len() const;  // keys waiting (not delayed, not processing)
  // When the key processed longest so far was handed out by Get() (absl::Now()); nullopt when no
  // key is being processed.
  std::optional<absl::Time> OldestProcessingStart() const;

  const WorkQueueOptions& options() const { return options_; }

 private:
  struct Instruments;  // the workqueue_* series of this queue
  struct Delayed {
    absl::Time at;
    std::string key;
    bool operator>(const Delayed& other) const { return at > other.at; }
  };
  void AddLocked(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DelayLoop();
  // Sets unfinished_work_seconds and longest_running_processor_seconds.
  void PublishProcessingLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const WorkQueueOptions options_;
  std::unique_ptr<Instruments> instruments_;  // null without metrics
  mutable absl::Mutex mu_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> dirty_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> processing_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int> failures_ ABSL_GUARDED_BY(mu_);
  std::priority_queue<Delayed, std::vector<Delayed>, std::greater<Delayed>> delayed_
      ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  // With metrics: when each waiting key was added.
  absl::flat_hash_map<std::string, absl::Time> added_at_ ABSL_GUARDED_BY(mu_);
  // Always: when each processing key was handed out.
  absl::flat_hash_map<std::string, absl::Time> started_at_ ABSL_GUARDED_BY(mu_);
  std::thread delay_thread_;
};

// What a reconcile asks for after success.
struct ReconcileResult {
  std::optional<absl::Duration> requeue_after;
};

// Runs `workers` threads: each takes a key, calls `reconcile`, and on error re-adds the key with
// backoff (AddRateLimited), on success forgets its failures and honours requeue_after.
// Thread-safe; Stop() shuts the queue down and joins the workers.
//
// With a named queue with metrics, Start() creates every controller_runtime_* series of the
// queue's name at 0 (as controller-runtime does) and each reconcile is counted in reconcile_total
// by result: error (reconcile_errors_total too), requeue_after (requeue_after > 0), requeue
// (requeue_after <= 0: re-added at once) or success; reconcile_time_seconds is its duration;
// active_workers the workers inside a reconcile; max_concurrent_reconciles the worker count.
// Reconciles neither throw nor have a deadline here, so reconcile_panics_total,
// reconcile_timeouts_total and terminal_reconcile_errors_total stay 0.
class ReconcileWorkers {
 public:
  using Reconcile = std::function<absl::StatusOr<ReconcileResult>(const std::string& key)>;

  ReconcileWorkers(WorkQueue& queue, Reconcile reconcile, int workers);
  ~ReconcileWorkers();
  void Start();
  void Stop();

 private:
  struct Instruments;
  void Work();

  WorkQueue& queue_;
  std::unique_ptr<Instruments> instruments_;  // null without metrics
  Reconcile reconcile_;
  const int workers_;
  std::vector<std::thread> threads_;
};

}  // namespace dovetail::kube
