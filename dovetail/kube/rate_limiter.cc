#include "dovetail/kube/rate_limiter.h"

#include <algorithm>

#include "absl/random/random.h"

namespace dovetail::kube {

TokenBucket::TokenBucket(double qps, int burst, const Clock& clock)
    : qps_(qps), burst_(std::max(burst, 1)), clock_(clock), tokens_(burst_), last_(clock.Now()) {}

absl::Duration TokenBucket::Reserve() {
  if (qps_ <= 0) return absl::ZeroDuration();
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  if (now > last_) {
    tokens_ = std::min(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * qps_);
    last_ = now;
  }
  tokens_ -= 1;  // may go negative: a booking of a future token
  if (tokens_ >= 0) return absl::ZeroDuration();
  return absl::Seconds(-tokens_ / qps_);
}

absl::Status TokenBucket::Wait(absl::Time deadline) {
  const absl::Duration wait = Reserve();
  if (wait == absl::ZeroDuration()) return absl::OkStatus();
  if (clock_.Now() + wait > deadline) {
    absl::MutexLock lock(&mu_);
    tokens_ += 1;
    return absl::DeadlineExceededError("client-side rate limit: no token before the deadline");
  }
  absl::SleepFor(wait);
  return absl::OkStatus();
}

absl::Duration Backoff::Next() {
  const absl::Duration base = next_;
  next_ = std::min(options_.max, next_ * options_.factor);
  if (options_.jitter <= 0) return base;
  thread_local absl::BitGen gen;
  return base * absl::Uniform(gen, 1.0, 1.0 + options_.jitter);
}

}  // namespace dovetail::kube
