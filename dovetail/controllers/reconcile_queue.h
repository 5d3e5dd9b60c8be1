// ReconcileQueue: the work queue and workers of a queue-driven controller (controller.h), the
// skeleton every keyed controller shares. The controller keeps its pure decisions and its
// Reconcile; it holds one ReconcileQueue (usually as the QueueController below) and forwards to
// it:
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
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/kube/handler_registration.h"
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

// QueueController: the Controller of a keyed controller whose work is one ReconcileQueue (keyed by
// a NodePool's or a NodeClaim's name, ...); the derived controller has Reconcile and its informer
// handlers.
//  - Name() is the name given to the constructor, which also labels the queue's metrics.
//  - Start() starts the queue, filled by Seed (nothing by default); Stop() stops it (a derived
//    Stop that does more calls this one); OldestWorkStart() is the queue's.
//  - Enqueue(key) is what informer handlers call; EnqueueWhen and EnqueueOnChange build the usual
//    handlers, AddWhere the Seed that goes with EnqueueWhen.
//  - deps_ is the Dependencies the controller was given (controller.h).
// Destruction: the derived destructor calls Stop() first, since the derived members its
// reconciles use are destroyed before this base and its queue. Its handler registrations are
// derived members declared after everything its handlers touch (controller.h); Enqueue stays
// valid until they are removed.
// Thread-safety: ReconcileQueue's (Start and Stop from one thread, Enqueue from any).
class QueueController : public Controller {
 public:
  std::string_view Name() const final { return name_; }
  void Start() override {
    queue_.Start([this](kube::WorkQueue& queue) { Seed(queue); });
  }
  void Stop() override { queue_.Stop(); }
  // When the oldest reconcile in progress began (the work queue's); nullopt when stopped.
  std::optional<absl::Time> OldestWorkStart() const final { return queue_.OldestProcessingStart(); }

  // One reconcile of `key` (what a worker runs; public for tests).
  virtual absl::StatusOr<kube::ReconcileResult> Reconcile(const std::string& key) = 0;

 protected:
  // The usual key: an apis object's metadata.name.
  struct NameOf {
    template <typename T>
    const std::string& operator()(const T& object) const {
      return object.metadata.name;
    }
  };
  // Every object (AddWhere's default).
  struct Always {
    template <typename T>
    bool operator()(const T& /*object*/) const {
      return true;
    }
  };

  // `name` (a literal: it is kept as a view) is Name() and labels the queue's metrics; `queue` and
  // `workers` are the ReconcileQueue's.
  QueueController(std::string_view name, const Dependencies& deps,
                  const kube::WorkQueueOptions& queue, int workers)
      : deps_(deps),
        name_(name),
        queue_(queue.WithMetrics(name, deps.metrics), workers,
               [this](const std::string& key) { return Reconcile(key); }) {}

  // Adds the keys that need a first reconcile to a new queue (ReconcileQueue::Seed's contract).
  virtual void Seed(kube::WorkQueue& /*queue*/) {}

  void Enqueue(const std::string& key) { queue_.Add(key); }

  // A handler for `informer` that enqueues an object's key (`key_of`) when it is added, or updated
  // to a state `watched` accepts; `on_delete` as given. Seed with AddWhere and the same `watched`
  // and `key_of`: what was cached before Start is then reconciled as what comes after.
  template <typename Informer, typename Watched, typename KeyOf = NameOf>
  [[nodiscard]] kube::HandlerRegistration EnqueueWhen(
      Informer& informer, Watched watched,
      std::function<void(const typename Informer::Ptr&)> on_delete = nullptr, KeyOf key_of = {}) {
    using Ptr = typename Informer::Ptr;
    return informer.AddHandler({
        .on_add =
            [this, watched, key_of](const Ptr& object) {
              if (watched(*object)) Enqueue(key_of(*object));
            },
        .on_update =
            [this, watched, key_of](const Ptr&, const Ptr& object) {
              if (watched(*object)) Enqueue(key_of(*object));
            },
        .on_delete = std::move(on_delete),
    });
  }

  // A handler for `informer` that enqueues an object's name when it is added, or updated in a way
  // `changed(before, after)` accepts; `on_delete` as given.
  template <typename Informer, typename Changed>
  [[nodiscard]] kube::HandlerRegistration EnqueueOnChange(
      Informer& informer, Changed changed,
      std::function<void(const typename Informer::Ptr&)> on_delete = nullptr) {
    using Ptr = typename Informer::Ptr;
    return informer.AddHandler({
        .on_add = [this](const Ptr& object) { Enqueue(object->metadata.name); },
        .on_update =
            [this, changed](const Ptr& before, const Ptr& after) {
              if (changed(*before, *after)) Enqueue(after->metadata.name);
            },
        .on_delete = std::move(on_delete),
    });
  }

  // Adds to `queue` the key of every object of `informer`'s store that `watched` accepts (Seed).
  template <typename Informer, typename Watched = Always, typename KeyOf = NameOf>
  static void AddWhere(kube::WorkQueue& queue, Informer& informer, Watched watched = {},
                       KeyOf key_of = {}) {
    for (const auto& object : informer.store().List()) {
      if (watched(*object)) queue.Add(key_of(*object));
    }
  }

  const Dependencies deps_;

 private:
  const std::string_view name_;
  ReconcileQueue queue_;
};

}  // namespace dovetail::controllers
