#include "dovetail/controllers/provisioning/batcher.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"

namespace dovetail::controllers::provisioning {

void Batcher::Trigger(std::string_view uid) {
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  if (!uids_.insert(std::string(uid)).second) return;
  if (uids_.size() == 1) opened_ = now;
  last_ = now;
  ++generation_;
}

bool Batcher::ClosedLocked(absl::Time now) const {
  if (uids_.empty()) return false;
  return now - last_ >= options_.idle || now - opened_ >= options_.max;
}

Batch Batcher::TakeLocked(absl::Time now) {
  Batch batch{.opened = opened_, .closed = now, .triggers = uids_.size()};
  uids_.clear();
  return batch;
}

std::optional<Batch> Batcher::TakeIfReady() {
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  if (!ClosedLocked(now)) return std::nullopt;
  return TakeLocked(now);
}

std::optional<Batch> Batcher::Wait(absl::Duration timeout) {
  const absl::Time real_deadline = absl::Now() + timeout;
  absl::MutexLock lock(&mu_);
  while (!stopped_) {
    if (uids_.empty()) {
      auto woken = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopped_ || !uids_.empty(); };
      if (!mu_.AwaitWithDeadline(absl::Condition(&woken), real_deadline)) return std::nullopt;
      continue;
    }
    const absl::Time now = clock_.Now();
    if (ClosedLocked(now)) return TakeLocked(now);
    // Sleep until the earlier of the two closing times, or a new trigger, re-reading the clock
    // at least every `poll` (the clock may be simulated).
    const absl::Duration left =
        std::min(options_.idle - (now - last_), options_.max - (now - opened_));
    const uint64_t seen = generation_;
    auto changed = [this, seen]()
                       ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopped_ || generation_ != seen; };
    mu_.AwaitWithTimeout(absl::Condition(&changed), std::min(left, options_.poll));
  }
  return std::nullopt;
}

void Batcher::Stop() {
  absl::MutexLock lock(&mu_);
  stopped_ = true;
}

void Batcher::Reset() {
  absl::MutexLock lock(&mu_);
  stopped_ = false;
}

}  // namespace dovetail::controllers::provisioning
