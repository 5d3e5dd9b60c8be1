// Singleton: a reconciler with one key, run by a one-worker ReconcileWorkers over its own WorkQueue
// (workqueue.h), like operatorpkg's singleton reconcilers upstream: one pass at Start(), then one
// `period` after each pass that succeeded; a pass that failed is retried with the queue's backoff
// (`queue.base_delay` doubling to `queue.max_delay`). Passes never overlap.
//
// With `queue` naming a registry (WorkQueueOptions::WithMetrics), the queue and its workers
// export workqueue_* and controller_runtime_* under that name.
//
// Thread-safety: Start and Stop may be called from any thread, repeatedly; Stop waits for a pass
// in flight and returns with none running. The pass must not call Start or Stop.
// OldestWorkStart may be called from any thread at any time, also while Stop waits.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/common/work_in_progress.h"
#include "dovetail/kube/workqueue.h"

namespace dovetail::kube {

class Singleton {
 public:
  using Pass = std::function<absl::Status()>;

  Singleton(WorkQueueOptions queue, absl::Duration period, Pass pass);
  ~Singleton();  // Stop()
  Singleton(const Singleton&) = delete;
  Singleton& operator=(const Singleton&) = delete;

  void Start();  // no-op when running
  void Stop();   // no-op when stopped
  // When the pass in flight began (absl::Now()); nullopt between passes.
  std::optional<absl::Time> OldestWorkStart() const { return work_.OldestStart(); }

 private:
  const WorkQueueOptions queue_options_;
  const absl::Duration period_;
  const Pass pass_;
  WorkInProgress work_;  // the pass in flight (not under mu_, which Stop holds while it waits)
  absl::Mutex mu_;
  std::unique_ptr<WorkQueue> queue_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<ReconcileWorkers> worker_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dovetail::kube
