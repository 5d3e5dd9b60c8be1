#include "dovetail/controllers/termination/drain.h"

#include <algorithm>

#include "dovetail/state/pod_predicates.h"

namespace dovetail::controllers::termination {

namespace {

// Kubernetes' default terminationGracePeriodSeconds.
constexpr int64_t kDefaultPodGraceSeconds = 30;

PodRef RefOf(const kube::PodInfo& pod) {
  return PodRef{.ns = pod.meta.namespace_ == nullptr ? std::string() : *pod.meta.namespace_,
                .name = pod.meta.name,
                .uid = pod.meta.uid,
                .tier = TierOf(pod)};
}

}  // namespace

std::string_view DrainTierName(DrainTier tier) {
  switch (tier) {
    case DrainTier::kNonCritical:
      return "non-critical";
    case DrainTier::kNonCriticalDaemonSet:
      return "non-critical DaemonSet";
    case DrainTier::kCritical:
      return "critical";
    case DrainTier::kCriticalDaemonSet:
      return "critical DaemonSet";
  }
  return "unknown";
}

DrainTier TierOf(const kube::PodInfo& pod) {
  const bool daemon = state::IsOwnedByDaemonSet(pod);
  if (state::IsCritical(pod)) return daemon ? DrainTier::kCriticalDaemonSet : DrainTier::kCritical;
  return daemon ? DrainTier::kNonCriticalDaemonSet : DrainTier::kNonCritical;
}

std::optional<absl::Time> PodDeleteTime(const kube::PodInfo& pod,
                                        std::optional<absl::Time> deadline) {
  if (!deadline.has_value()) return std::nullopt;
  const int64_t grace = pod.termination_grace_period_seconds.value_or(kDefaultPodGraceSeconds);
  return *deadline - absl::Seconds(grace);
}

bool NeedsForceDelete(const kube::PodInfo& pod, absl::Time now,
                      std::optional<absl::Time> deadline) {
  if (!deadline.has_value()) return false;
  if (state::IsTerminating(pod)) {
    // Already going: only when it was given longer than the machine has left.
    return *pod.meta.deletion > *deadline;
  }
  return now > *PodDeleteTime(pod, deadline);
}

int64_t ForceDeleteGraceSeconds(absl::Time now, absl::Time deadline) {
  const int64_t left = absl::ToInt64Seconds(deadline - now);
  return std::max<int64_t>(1, left);
}

DrainPlan PlanDrain(const std::vector<kube::PodInfo>& pods, absl::Time now,
                    std::optional<absl::Time> deadline) {
  DrainPlan plan;
  std::vector<const kube::PodInfo*> tiers[kDrainTiers];
  for (const kube::PodInfo& pod : pods) {
    if (!state::IsWaitingEviction(pod, now)) continue;
    ++plan.waiting;
    bool invalid = false;
    (void)state::HasActiveDoNotDisrupt(pod, now, &invalid);
    if (invalid) plan.invalid_do_not_disrupt.push_back(RefOf(pod));
    if (NeedsForceDelete(pod, now, deadline)) {
      plan.force_delete.push_back(
          {.pod = RefOf(pod), .grace_seconds = ForceDeleteGraceSeconds(now, *deadline)});
    }
    tiers[static_cast<int>(TierOf(pod))].push_back(&pod);
  }
  plan.drained = plan.waiting == 0;
  for (int t = 0; t < kDrainTiers; ++t) {
    if (tiers[t].empty()) continue;
    plan.tier = static_cast<DrainTier>(t);
    for (const kube::PodInfo* pod : tiers[t]) {
      if (state::IsTerminating(*pod) || NeedsForceDelete(*pod, now, deadline)) continue;
      if (state::HasActiveDoNotDisrupt(*pod, now)) {
        plan.do_not_disrupt.push_back(RefOf(*pod));
      } else {
        plan.evict.push_back(RefOf(*pod));
      }
    }
    break;
  }
  auto by_key = [](const auto& a, const auto& b) { return a.Key() < b.Key(); };
  std::sort(plan.evict.begin(), plan.evict.end(), by_key);
  std::sort(plan.do_not_disrupt.begin(), plan.do_not_disrupt.end(), by_key);
  std::sort(plan.force_delete.begin(), plan.force_delete.end(),
            [](const ForceDelete& a, const ForceDelete& b) { return a.pod.Key() < b.pod.Key(); });
  return plan;
}

}  // namespace dovetail::controllers::termination
