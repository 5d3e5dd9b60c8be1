#include "dovetail/kube/workqueue.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace dovetail::kube {

WorkQueue::WorkQueue(WorkQueueOptions options) : options_(options) {
  delay_thread_ = std::thread([this] { DelayLoop(); });
}

WorkQueue::~WorkQueue() {
  ShutDown();
  if (delay_thread_.joinable()) delay_thread_.join();
}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_ || dirty_.contains(key)) return;
  dirty_.insert(key);
  if (!processing_.contains(key)) queue_.push_back(key);
}

void WorkQueue::Add(const std::string& key) {
  absl::MutexLock lock(&mu_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, absl::Duration delay) {
  absl::MutexLock lock(&mu_);
  if (shutting_down_) return;
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
  return key;
}

void WorkQueue::Done(const std::string& key) {
  absl::MutexLock lock(&mu_);
  processing_.erase(key);
  if (dirty_.contains(key)) queue_.push_back(key);
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
    const absl::Time next = delayed_.empty() ? absl::InfiniteFuture() : delayed_.top().at;
    const size_t pending = delayed_.size();
    // Wake for shutdown, a new delayed item, or the earliest deadline.
    auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return shutting_down_ || delayed_.size() != pending ||
             (!delayed_.empty() && delayed_.top().at < next);
    };
    mu_.AwaitWithDeadline(absl::Condition(&changed), next);
  }
}

Controller::Controller(WorkQueue& queue, Reconcile reconcile, int workers)
    : queue_(queue), reconcile_(std::move(reconcile)), workers_(std::max(1, workers)) {}

Controller::~Controller() { Stop(); }

void Controller::Start() {
  for (int i = 0; i < workers_; ++i) threads_.emplace_back([this] { Work(); });
}

void Controller::Stop() {
  queue_.ShutDown();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void Controller::Work() {
  while (true) {
    std::optional<std::string> key = queue_.Get();
    if (!key.has_value()) return;
    absl::StatusOr<ReconcileResult> result = reconcile_(*key);
    if (!result.ok()) {
      queue_.AddRateLimited(*key);
    } else {
      queue_.Forget(*key);
      if (result->requeue_after.has_value()) queue_.AddAfter(*key, *result->requeue_after);
    }
    queue_.Done(*key);
  }
}

}  // namespace dovetail::kube
