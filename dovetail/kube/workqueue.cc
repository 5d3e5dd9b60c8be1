#include "dovetail/kube/workqueue.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dovetail/common/thread_entry.h"
#include "dovetail/metrics/buckets.h"

namespace dovetail::kube {
namespace {

// client-go refreshes the in-progress gauges on this period.
constexpr absl::Duration kProcessingPublishPeriod = absl::Milliseconds(500);

// The reconcile_time_seconds bounds controller-runtime registers.
std::vector<double> ReconcileTimeBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1,  0.15, 0.2,  0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
          0.7,   0.8,  0.9,   1.0,  1.25, 1.5,  1.75, 2.0,  2.5, 3.0,  3.5, 4.0,  4.5, 5,
          6,     7,    8,     9,    10,   15,   20,   25,   30,  40,   50,  60};
}

}  // namespace

struct WorkQueue::Instruments {
  explicit Instruments(metrics::Registry& r, const std::string& name)
      : labels{name, name},
        depth_labels{name, name, ""},
        adds(r.NewCounter("workqueue_adds_total", "Keys added to the work queue.",
                          {"name", "controller"})),
        retries(r.NewCounter("workqueue_retries_total", "Delayed re-adds to the work queue.",
                             {"name", "controller"})),
        depth(r.NewGauge("workqueue_depth", "Keys waiting in the work queue.",
                         {"name", "controller", "priority"})),
        unfinished(r.NewGauge("workqueue_unfinished_work_seconds",
                              "Seconds of work in progress not yet observed by "
                              "work_duration_seconds; growth means stuck workers.",
                              {"name", "controller"})),
        longest(r.NewGauge("workqueue_longest_running_processor_seconds",
                           "Seconds the longest running key has been processed.",
                           {"name", "controller"})),
        queue_duration(r.NewHistogram("workqueue_queue_duration_seconds",
                                      "Seconds a key waits in the work queue before a worker "
                                      "takes it.",
                                      {"name", "controller"},
                                      metrics::ExponentialBuckets(10e-9, 10, 12))),
        work_duration(r.NewHistogram(
            "workqueue_work_duration_seconds", "Seconds a worker takes to process a key.",
            {"name", "controller"}, metrics::ExponentialBuckets(10e-9, 10, 12))) {}
  const metrics::LabelValues labels;
  const metrics::LabelValues depth_labels;
  metrics::Counter& adds;
  metrics::Counter& retries;
  metrics::Gauge& depth;
  metrics::Gauge& unfinished;
  metrics::Gauge& longest;
  metrics::Histogram& queue_duration;
  metrics::Histogram& work_duration;
};

WorkQueue::WorkQueue(WorkQueueOptions options) : options_(std::move(options)) {
  if (options_.metrics != nullptr && !options_.name.empty()) {
    instruments_ = std::make_unique<Instruments>(*options_.metrics, options_.name);
    instruments_->adds.Inc(instruments_->labels, 0);
    instruments_->retries.Inc(instruments_->labels, 0);
    instruments_->depth.Set(instruments_->depth_labels, 0);
    instruments_->unfinished.Set(instruments_->labels, 0);
    instruments_->longest.Set(instruments_->labels, 0);
  }
  delay_thread_ =
      StartThread(absl::StrCat("workqueue.delay.", options_.name), [this] { DelayLoop(); });
}

WorkQueue::~WorkQueue() {
  ShutDown();
  if (delay_thread_.joinable()) delay_thread_.join();
  if (instruments_ != nullptr) {
    // Nothing waits or runs in a queue that is gone.
    instruments_->depth.Set(instruments_->depth_labels, 0);
    instruments_->unfinished.Set(instruments_->labels, 0);
    instruments_->longest.Set(instruments_->labels, 0);
  }
}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_ || dirty_.contains(key)) return;
  dirty_.insert(key);
  if (!processing_.contains(key)) queue_.push_back(key);
  if (instruments_ != nullptr) {
    instruments_->adds.Inc(instruments_->labels);
    instruments_->depth.Set(instruments_->depth_labels, static_cast<double>(dirty_.size()));
    added_at_.try_emplace(key, absl::Now());
  }
}

void WorkQueue::Add(const std::string& key) {
  absl::MutexLock lock(&mu_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, absl::Duration delay) {
  absl::MutexLock lock(&mu_);
  if (shutting_down_) return;
  if (instruments_ != nullptr) instruments_->retries.Inc(instruments_->labels);
  if (delay <= absl::ZeroDuration()) {
    AddLocked(key);
    return;
  }
  delayed_.push(Delayed{absl::Now() + delay, key});
}

void WorkQueue::AddRateLimited(const std::string& key) {
  absl::Duration delay;
  {
    absl::MutexLock lock(&mu_);
    const int failures = failures_[key]++;
    const double factor = std::pow(2.0, std::min(failures, 62));
    delay = std::min(options_.max_delay, options_.base_delay * factor);
  }
  AddAfter(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  absl::MutexLock lock(&mu_);
  failures_.erase(key);
}

int WorkQueue::NumRequeues(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

std::optional<std::string> WorkQueue::Get() {
  absl::MutexLock lock(&mu_);
  auto ready = [this]()
                   ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !queue_.empty() || shutting_down_; };
  mu_.Await(absl::Condition(&ready));
  if (queue_.empty()) return std::nullopt;
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  const absl::Time now = absl::Now();
  started_at_[key] = now;
  if (instruments_ != nullptr) {
    instruments_->depth.Set(instruments_->depth_labels, static_cast<double>(dirty_.size()));
    if (auto it = added_at_.find(key); it != added_at_.end()) {
      instruments_->queue_duration.Observe(instruments_->labels,
                                           absl::ToDoubleSeconds(now - it->second));
      added_at_.erase(it);
    }
  }
  return key;
}

void WorkQueue::Done(const std::string& key) {
  absl::MutexLock lock(&mu_);
  processing_.erase(key);
  if (dirty_.contains(key)) queue_.push_back(key);
  if (auto it = started_at_.find(key); it != started_at_.end()) {
    if (instruments_ != nullptr) {
      instruments_->work_duration.Observe(instruments_->labels,
                                          absl::ToDoubleSeconds(absl::Now() - it->second));
    }
    started_at_.erase(it);
  }
}

std::optional<absl::Time> WorkQueue::OldestProcessingStart() const {
  absl::MutexLock lock(&mu_);
  std::optional<absl::Time> oldest;
  for (const auto& [key, start] : started_at_) {
    if (!oldest.has_value() || start < *oldest) oldest = start;
  }
  return oldest;
}

void WorkQueue::PublishProcessingLocked(absl::Time now) {
  double total = 0;
  double longest = 0;
  for (const auto& [key, start] : started_at_) {
    const double seconds = absl::ToDoubleSeconds(now - start);
    total += seconds;
    longest = std::max(longest, seconds);
  }
  instruments_->unfinished.Set(instruments_->labels, total);
  instruments_->longest.Set(instruments_->labels, longest);
}

void WorkQueue::ShutDown() {
  absl::MutexLock lock(&mu_);
  shutting_down_ = true;
}

size_t WorkQueue::Len() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

void WorkQueue::DelayLoop() {
  absl::MutexLock lock(&mu_);
  while (!shutting_down_) {
    const absl::Time now = absl::Now();
    while (!delayed_.empty() && delayed_.top().at <= now) {
      AddLocked(delayed_.top().key);
      delayed_.pop();
    }
    absl::Time next = delayed_.empty() ? absl::InfiniteFuture() : delayed_.top().at;
    if (instruments_ != nullptr) {
      PublishProcessingLocked(now);
      next = std::min(next, now + kProcessingPublishPeriod);
    }
    const size_t pending = delayed_.size();
    // Wake for shutdown, a new delayed item, or the earliest deadline.
    auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return shutting_down_ || delayed_.size() != pending ||
             (!delayed_.empty() && delayed_.top().at < next);
    };
    mu_.AwaitWithDeadline(absl::Condition(&changed), next);
  }
}

struct ReconcileWorkers::Instruments {
  Instruments(metrics::Registry& r, const std::string& name)
      : labels{name},
        total(r.NewCounter("controller_runtime_reconcile_total", "Reconciles by result.",
                           {"controller", "result"})),
        errors(r.NewCounter("controller_runtime_reconcile_errors_total",
                            "Reconciles that returned an error.", {"controller"})),
        terminal(r.NewCounter("controller_runtime_terminal_reconcile_errors_total",
                              "Reconciles that returned a terminal (not retried) error.",
                              {"controller"})),
        panics(r.NewCounter("controller_runtime_reconcile_panics_total",
                            "Reconciles that panicked.", {"controller"})),
        timeouts(r.NewCounter("controller_runtime_reconcile_timeouts_total",
                              "Reconciles that ran past their deadline.", {"controller"})),
        active(r.NewGauge("controller_runtime_active_workers",
                          "Workers currently inside a reconcile.", {"controller"})),
        max_workers(r.NewGauge("controller_runtime_max_concurrent_reconciles",
                               "Maximum concurrent reconciles (workers).", {"controller"})),
        time(r.NewHistogram("controller_runtime_reconcile_time_seconds", "Seconds per reconcile.",
                            {"controller"}, ReconcileTimeBuckets())) {}
  const metrics::LabelValues labels;
  metrics::Counter& total;
  metrics::Counter& errors;
  metrics::Counter& terminal;
  metrics::Counter& panics;
  metrics::Counter& timeouts;
  metrics::Gauge& active;
  metrics::Gauge& max_workers;
  metrics::Histogram& time;
};

ReconcileWorkers::ReconcileWorkers(WorkQueue& queue, Reconcile reconcile, int workers)
    : queue_(queue), reconcile_(std::move(reconcile)), workers_(std::max(1, workers)) {
  const WorkQueueOptions& o = queue_.options();
  if (o.metrics != nullptr && !o.name.empty()) {
    instruments_ = std::make_unique<Instruments>(*o.metrics, o.name);
  }
}

ReconcileWorkers::~ReconcileWorkers() { Stop(); }

void ReconcileWorkers::Start() {
  if (instruments_ != nullptr) {
    const std::string& name = instruments_->labels[0];
    for (const char* result : {"error", "requeue_after", "requeue", "success"}) {
      instruments_->total.Inc({name, result}, 0);
    }
    instruments_->errors.Inc(instruments_->labels, 0);
    instruments_->terminal.Inc(instruments_->labels, 0);
    instruments_->panics.Inc(instruments_->labels, 0);
    instruments_->timeouts.Inc(instruments_->labels, 0);
    instruments_->max_workers.Set(instruments_->labels, workers_);
    instruments_->active.Set(instruments_->labels, 0);
  }
  for (int i = 0; i < workers_; ++i) {
    threads_.push_back(
        StartThread(absl::StrCat("reconcile.", queue_.options().name), [this] { Work(); }));
  }
}

void ReconcileWorkers::Stop() {
  queue_.ShutDown();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void ReconcileWorkers::Work() {
  while (true) {
    std::optional<std::string> key = queue_.Get();
    if (!key.has_value()) return;
    Instruments* m = instruments_.get();
    if (m != nullptr) m->active.Add(m->labels, 1);
    const absl::Time start = absl::Now();
    absl::StatusOr<ReconcileResult> result = reconcile_(*key);
    const char* outcome = "success";
    if (!result.ok()) {
      queue_.AddRateLimited(*key);
      outcome = "error";
    } else {
      queue_.Forget(*key);
      if (result->requeue_after.has_value()) {
        queue_.AddAfter(*key, *result->requeue_after);
        outcome = *result->requeue_after > absl::ZeroDuration() ? "requeue_after" : "requeue";
      }
    }
    if (m != nullptr) {
      if (!result.ok()) m->errors.Inc(m->labels);
      m->total.Inc({m->labels[0], outcome});
      m->time.Observe(m->labels, absl::ToDoubleSeconds(absl::Now() - start));
      m->active.Add(m->labels, -1);
    }
    queue_.Done(*key);
  }
}

}  // namespace dovetail::kube
