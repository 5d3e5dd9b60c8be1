#include "dovetail/state/registration_health.h"

#include <algorithm>
#include <utility>

namespace dovetail::state {

RegistrationHealth::Verdict RegistrationHealth::Judge(const std::deque<bool>& outcomes) {
  if (outcomes.empty()) return Verdict::kUnknown;
  const auto failures = std::count(outcomes.begin(), outcomes.end(), false);
  // failures / kWindow >= 1/2, in integers.
  return 2 * failures >= kWindow ? Verdict::kUnhealthy : Verdict::kHealthy;
}

void RegistrationHealth::Record(const std::string& pool_uid, bool success, Call call) {
  absl::MutexLock lock(&mu_);
  Pool& pool = pools_[pool_uid];
  pool.outcomes.push_back(success);
  if (pool.outcomes.size() > static_cast<size_t>(kWindow)) pool.outcomes.pop_front();
  const Verdict verdict = Judge(pool.outcomes);
  if (success ? verdict == Verdict::kHealthy : verdict == Verdict::kUnhealthy) {
    pool.call = std::move(call);
  } else {
    pool.call.reset();
  }
}

void RegistrationHealth::RecordSuccess(const std::string& pool_uid) {
  Record(pool_uid, true, Call{.healthy = true});
}

void RegistrationHealth::RecordFailure(const std::string& pool_uid, std::string reason,
                                       std::string message) {
  Record(pool_uid, false,
         Call{.healthy = false, .reason = std::move(reason), .message = std::move(message)});
}

RegistrationHealth::Verdict RegistrationHealth::Of(const std::string& pool_uid) const {
  absl::MutexLock lock(&mu_);
  auto it = pools_.find(pool_uid);
  return it == pools_.end() ? Verdict::kUnknown : Judge(it->second.outcomes);
}

std::optional<RegistrationHealth::Call> RegistrationHealth::CallFor(
    const std::string& pool_uid) const {
  absl::MutexLock lock(&mu_);
  auto it = pools_.find(pool_uid);
  if (it == pools_.end()) return std::nullopt;
  return it->second.call;
}

void RegistrationHealth::Seed(const std::string& pool_uid, apis::core::ConditionStatus written) {
  if (written == apis::core::ConditionStatus::kUnknown) return;
  absl::MutexLock lock(&mu_);
  Pool& pool = pools_[pool_uid];
  if (!pool.outcomes.empty()) return;
  if (written == apis::core::ConditionStatus::kTrue) {
    pool.outcomes = {true};
  } else {
    pool.outcomes.assign(kWindow / 2, false);
  }
}

void RegistrationHealth::Reset(const std::string& pool_uid) {
  absl::MutexLock lock(&mu_);
  pools_.erase(pool_uid);
}

}  // namespace dovetail::state
