// Batcher: groups provisioning triggers (pod UIDs) into windows, as upstream's batcher does: a
// window opens with the first trigger and closes when no new distinct trigger arrived for `idle`
// (BATCH_IDLE_DURATION, 1 s) or `max` (BATCH_MAX_DURATION, 10 s) has passed since it opened. A
// trigger repeated within a window does not extend it.
//
// Time comes from the injected Clock. TakeIfReady() is the non-blocking decision (tests drive it
// with a FakeClock); Wait() blocks the provisioning thread until a window closes, waking on
// triggers and at most every `poll` of real time to re-read the clock.
//
// Thread-safe: Trigger() is called from informer threads, Wait()/TakeIfReady() from the
// provisioner's thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/common/clock.h"

namespace dovetail::controllers::provisioning {

struct BatcherOptions {
  absl::Duration idle = absl::Seconds(1);
  absl::Duration max = absl::Seconds(10);
  // Longest real-time sleep between two reads of the clock while a window is open.
  absl::Duration poll = absl::Milliseconds(50);
};

struct Batch {
  absl::Time opened;
  absl::Time closed;
  size_t triggers = 0;  // distinct UIDs
};

class Batcher {
 public:
  Batcher(const Clock& clock, BatcherOptions options) : clock_(clock), options_(options) {}

  void Trigger(std::string_view uid);

  // The batch if the open window has closed by now (and resets), else nullopt.
  std::optional<Batch> TakeIfReady();

  // Blocks until a window closes (returns it), `timeout` of real time passes with no window
  // open, or Stop() is called (both nullopt).
  std::optional<Batch> Wait(absl::Duration timeout);

  // Wakes Wait() for good (until Reset()).
  void Stop();
  void Reset();

 private:
  bool ClosedLocked(absl::Time now) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  Batch TakeLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock& clock_;
  const BatcherOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_set<std::string> uids_ ABSL_GUARDED_BY(mu_);
  absl::Time opened_ ABSL_GUARDED_BY(mu_);
  absl::Time last_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;  // bumped by every new distinct trigger
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace dovetail::controllers::provisioning
