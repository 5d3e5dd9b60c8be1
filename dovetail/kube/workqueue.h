// A controller work queue with client-go's guarantees:
//  - deduplication: a key added several times before a worker takes it is processed once;
//  - exclusivity: a key is never handed to two workers at once; a key added while being
//    processed is queued again when its worker calls Done();
//  - per-item exponential backoff: AddRateLimited() delays a key base*2^(failures-1), capped;
//    Forget() resets its failure count; AddAfter() delays any key;
//  - ShutDown() wakes every Get(), which then return nullopt.
// Controller (below) runs N workers over a queue and a reconcile function.
// Delays are measured on the real (monotonic) clock. Thread-safe.
#pragma once

#include <deque>
#include <functional>
#include <optional>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace dovetail::kube {

struct WorkQueueOptions {
  absl::Duration base_delay = absl::Milliseconds(5);
  absl::Duration max_delay = absl::Seconds(1000);
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

 private:
  struct Delayed {
    absl::Time at;
    std::string key;
    bool operator>(const Delayed& other) const { return at > other.at; }
  };
  void AddLocked(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DelayLoop();

  const WorkQueueOptions options_;
  mutable absl::Mutex mu_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> dirty_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> processing_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int> failures_ ABSL_GUARDED_BY(mu_);
  std::priority_queue<Delayed, std::vector<Delayed>, std::greater<Delayed>> delayed_
      ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  std::thread delay_thread_;
};

// What a reconcile asks for after success.
struct ReconcileResult {
  std::optional<absl::Duration> requeue_after;
};

// Runs `workers` threads: each takes a key, calls `reconcile`, and on error re-adds the key with
// backoff (AddRateLimited), on success forgets its failures and honours requeue_after.
// Thread-safe; Stop() shuts the queue down and joins the workers.
class Controller {
 public:
  using Reconcile = std::function<absl::StatusOr<ReconcileResult>(const std::string& key)>;

  Controller(WorkQueue& queue, Reconcile reconcile, int workers);
  ~Controller();
  void Start();
  void Stop();

 private:
  void Work();

  WorkQueue& queue_;
  Reconcile reconcile_;
  const int workers_;
  std::vector<std::thread> threads_;
};

}  // namespace dovetail::kube
