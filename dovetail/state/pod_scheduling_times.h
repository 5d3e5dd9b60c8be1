// PodSchedulingTimes: when provisioning first saw, decided about and found room for each pending
// pod — the three instants upstream's state.Cluster keeps per pod for its pod metrics
// (karpenter_pods_scheduling_decision_duration_seconds, karpenter_pods_provisioning_*):
//   - ack: the first provisioning pass that listed the pod as provisionable;
//   - decision: the first pass whose simulation decided about the pod (placed it, or not);
//   - success: the first pass that placed it (on a new NodeClaim or an existing node). A later
//     pass that cannot place it clears it (the pod is no longer expected to schedule).
// Entries are dropped by Forget(): the pod was deleted, started or finished.
// Keys are "namespace/name". Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace dovetail::state {

class PodSchedulingTimes {
 public:
  // Records `now` as the ack time of each pod that has none.
  void Ack(const std::vector<std::string>& pods, absl::Time now);
  // Records one pass's decisions. Returns, for each pod decided about for the first time that
  // was acked, the time from ack to `now` (what the decision histogram observes).
  std::vector<absl::Duration> Decide(const std::vector<std::string>& placed,
                                     const std::vector<std::string>& unplaceable, absl::Time now);
  void Forget(const std::string& pod);

  std::optional<absl::Time> AckTime(const std::string& pod) const;
  std::optional<absl::Time> DecisionTime(const std::string& pod) const;
  std::optional<absl::Time> SuccessTime(const std::string& pod) const;

 private:
  struct Times {
    std::optional<absl::Time> ack, decision, success;
  };
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Times> times_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dovetail::state
