// WorkInProgress: when each unit of work now running began, so that a controller can report its
// oldest one (controllers/controller.h, Controller::OldestWorkStart) and the operator's /healthz
// can tell a stuck loop from a busy one (operator/health.h).
//
// A unit of work is a scope: `WorkInProgress::Scope scope(work);` around a pass, a reconcile or
// the handling of one message. Start times are read from the real clock (absl::Now()), as
// kube::WorkQueue stamps the keys it hands out: a stuck thread is stuck in real time, whatever
// clock the controller simulates. Thread-safe; one short critical section per Scope and per
// OldestStart() call.
#pragma once

#include <optional>
#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace dovetail {

class WorkInProgress {
 public:
  WorkInProgress() = default;
  WorkInProgress(const WorkInProgress&) = delete;
  WorkInProgress& operator=(const WorkInProgress&) = delete;

  // One unit of work, from construction to destruction. Must not outlive `work`.
  class Scope {
   public:
    explicit Scope(WorkInProgress& work) : work_(work) {
      absl::MutexLock lock(&work_.mu_);
      it_ = work_.starts_.insert(absl::Now());
    }
    ~Scope() {
      absl::MutexLock lock(&work_.mu_);
      work_.starts_.erase(it_);
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    WorkInProgress& work_;
    std::multiset<absl::Time>::iterator it_;
  };

  // When the oldest unit of work still running began; nullopt when none runs.
  std::optional<absl::Time> OldestStart() const {
    absl::MutexLock lock(&mu_);
    if (starts_.empty()) return std::nullopt;
    return *starts_.begin();
  }

 private:
  mutable absl::Mutex mu_;
  std::multiset<absl::Time> starts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dovetail
