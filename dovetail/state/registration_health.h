// RegistrationHealth: the recent launch and registration outcomes of each NodePool, from which its
// NodeRegistrationHealthy condition follows (upstream's nodepoolhealth state: the nodeclaim
// lifecycle records outcomes, the nodepool status controller writes the condition).
//
// Per NodePool UID, the outcomes of its last kWindow (4) NodeClaims that either registered (a
// success) or were deleted for missing the launch or registration deadline (a failure). Failures
// are divided by the whole window, filled or not: the pool is unhealthy when they make at least
// half of it (2 of 4), healthy otherwise, and unknown while nothing was recorded.
//
// An outcome may call for a condition, kept until the next outcome or Reset:
//   - a failure that leaves the pool unhealthy calls for False, with the failure's reason and
//     message;
//   - a success that leaves the pool healthy calls for True;
//   - any other outcome calls for nothing: a single failure after a reset leaves the condition as
//     it was, and after two failures three successes are needed to call for True again.
// Seed rebuilds the window from a written condition when nothing was recorded (after a restart):
// True as one success, False as two failures, so that the next outcomes move it as they would
// have. Reset empties it: the pool or its node class changed (the condition starts again from
// Unknown), or the pool is gone.
// Thread-safe.
#pragma once

#include <deque>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "dovetail/apis/core/meta.h"

namespace dovetail::state {

class RegistrationHealth {
 public:
  static constexpr int kWindow = 4;

  enum class Verdict { kUnknown, kHealthy, kUnhealthy };

  // The condition an outcome called for.
  struct Call {
    bool healthy = false;  // True; else False with `reason` and `message`
    std::string reason;
    std::string message;
  };

  void RecordSuccess(const std::string& pool_uid);
  void RecordFailure(const std::string& pool_uid, std::string reason, std::string message);

  Verdict Of(const std::string& pool_uid) const;
  std::optional<Call> CallFor(const std::string& pool_uid) const;

  // Only when nothing is recorded for the pool; Unknown seeds nothing.
  void Seed(const std::string& pool_uid, apis::core::ConditionStatus written);
  void Reset(const std::string& pool_uid);

 private:
  struct Pool {
    std::deque<bool> outcomes;  // oldest first, at most kWindow; true = registered
    std::optional<Call> call;
  };
  static Verdict Judge(const std::deque<bool>& outcomes);
  void Record(const std::string& pool_uid, bool success, Call call);

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Pool> pools_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dovetail::state
