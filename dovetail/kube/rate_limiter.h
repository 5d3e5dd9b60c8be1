// Client-side request throttling: a token bucket holding up to `burst` tokens refilled at `qps`
// per second. Reserve() takes a token now or books the next free one and says how long the caller
// must wait for it; Wait() does that wait. RestClient calls Wait() before every request (watches
// included); the leader elector has its own client, hence its own bucket.
// Thread-safe.
#pragma once

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/common/clock.h"

namespace dovetail::kube {

class TokenBucket {
 public:
  // qps <= 0 disables throttling. burst is clamped to at least 1.
  TokenBucket(double qps, int burst, const Clock& clock);

  // Takes one token and returns how long to wait before using it (zero when one was available).
  absl::Duration Reserve();
  // Reserve() and wait. Errors: DeadlineExceeded (token not returned) when the wait would end
  // after `deadline`.
  absl::Status Wait(absl::Time deadline = absl::InfiniteFuture());

 private:
  const double qps_;
  const double burst_;
  const Clock& clock_;
  absl::Mutex mu_;
  double tokens_ ABSL_GUARDED_BY(mu_);
  absl::Time last_ ABSL_GUARDED_BY(mu_);
};

// Exponential backoff with jitter: initial, initial*factor, ... capped at `max`; each delay is
// scaled by a random factor in [1, 1 + jitter]. Thread-compatible.
class Backoff {
 public:
  struct Options {
    absl::Duration initial = absl::Milliseconds(200);
    absl::Duration max = absl::Seconds(30);
    double factor = 2.0;
    double jitter = 0.2;
  };
  Backoff() : Backoff(Options{}) {}
  explicit Backoff(Options options) : options_(options), next_(options.initial) {}

  absl::Duration Next();
  void Reset() { next_ = options_.initial; }

 private:
  Options options_;
  absl::Duration next_;
};

}  // namespace dovetail::kube
