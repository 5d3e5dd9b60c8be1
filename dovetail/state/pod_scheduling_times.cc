#include "dovetail/state/pod_scheduling_times.h"

#include <utility>

namespace dovetail::state {

void PodSchedulingTimes::Ack(const std::vector<std::string>& pods, absl::Time now) {
  absl::MutexLock lock(&mu_);
  for (const std::string& pod : pods) {
    Times& t = times_[pod];
    if (!t.ack.has_value()) t.ack = now;
  }
}

std::vector<absl::Duration> PodSchedulingTimes::Decide(const std::vector<std::string>& placed,
                                                       const std::vector<std::string>& unplaceable,
                                                       absl::Time now) {
  std::vector<absl::Duration> first_decisions;
  absl::MutexLock lock(&mu_);
  for (const auto& [pods, success] : {std::pair{&placed, true}, std::pair{&unplaceable, false}}) {
    for (const std::string& pod : *pods) {
      Times& t = times_[pod];
      if (!t.decision.has_value()) {
        t.decision = now;
        if (t.ack.has_value()) first_decisions.push_back(now - *t.ack);
      }
      if (!success) {
        t.success.reset();
      } else if (!t.success.has_value()) {
        t.success = now;
      }
    }
  }
  return first_decisions;
}

void PodSchedulingTimes::Forget(const std::string& pod) {
  absl::MutexLock lock(&mu_);
  times_.erase(pod);
}

std::optional<absl::Time> PodSchedulingTimes::AckTime(const std::string& pod) const {
  absl::MutexLock lock(&mu_);
  auto it = times_.find(pod);
  return it == times_.end() ? std::nullopt : it->second.ack;
}

std::optional<absl::Time> PodSchedulingTimes::DecisionTime(const std::string& pod) const {
  absl::MutexLock lock(&mu_);
  auto it = times_.find(pod);
  return it == times_.end() ? std::nullopt : it->second.decision;
}

std::optional<absl::Time> PodSchedulingTimes::SuccessTime(const std::string& pod) const {
  absl::MutexLock lock(&mu_);
  auto it = times_.find(pod);
  return it == times_.end() ? std::nullopt : it->second.success;
}

}  // namespace dovetail::state
