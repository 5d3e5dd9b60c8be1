#include "dovetail/controllers/termination/drain.h"

#include <algorithm>
#include <cmath>

#include "dovetail/apis/v1/do_not_disrupt.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/scheduling/taints.h"

namespace dovetail::controllers::termination {

namespace core = apis::core;
namespace v1 = apis::v1;

namespace {

// Kubernetes' default terminationGracePeriodSeconds.
constexpr int64_t kDefaultPodGraceSeconds = 30;

PodRef RefOf(const core::Pod& pod) {
  return PodRef{.ns = pod.metadata.namespace_,
                .name = pod.metadata.name,
                .uid = pod.metadata.uid,
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

bool IsCritical(const core::Pod& pod) {
  return pod.spec.priority_class_name == kSystemClusterCritical ||
         pod.spec.priority_class_name == kSystemNodeCritical;
}

DrainTier TierOf(const core::Pod& pod) {
  const bool daemon = core::IsOwnedByDaemonSet(pod);
  if (IsCritical(pod)) return daemon ? DrainTier::kCriticalDaemonSet : DrainTier::kCritical;
  return daemon ? DrainTier::kNonCriticalDaemonSet : DrainTier::kNonCritical;
}

bool IsStatic(const core::Pod& pod) { return core::IsMirrorPod(pod) || core::IsOwnedByNode(pod); }

bool ToleratesDisruptedTaint(const core::Pod& pod) {
  const core::Taint disrupted{.key = std::string(v1::kDisruptedTaintKey),
                              .effect = core::TaintEffect::kNoSchedule};
  return scheduling::ToleratesTaint(pod.spec.tolerations, disrupted);
}

bool IsStuckTerminating(const core::Pod& pod, absl::Time now) {
  return pod.metadata.deletion_timestamp.has_value() &&
         now - *pod.metadata.deletion_timestamp > kStuckTerminatingAfter;
}

bool IsDrainable(const core::Pod& pod, absl::Time now) {
  return !ToleratesDisruptedTaint(pod) && !IsStatic(pod) && !IsStuckTerminating(pod, now);
}

bool IsWaitingEviction(const core::Pod& pod, absl::Time now) {
  return !core::IsTerminal(pod) && IsDrainable(pod, now);
}

bool HasActiveDoNotDisrupt(const core::Pod& pod, absl::Time now, bool* invalid) {
  if (invalid != nullptr) *invalid = false;
  auto it = pod.metadata.annotations.find(v1::kDoNotDisruptAnnotationKey);
  if (it == pod.metadata.annotations.end()) return false;
  const std::optional<absl::Time> since =
      pod.status.start_time.has_value() ? pod.status.start_time : pod.metadata.creation_timestamp;
  return v1::DoNotDisruptInForce(it->second, since, now, invalid);
}

std::optional<absl::Time> PodDeleteTime(const core::Pod& pod, std::optional<absl::Time> deadline) {
  if (!deadline.has_value()) return std::nullopt;
  const int64_t grace = pod.spec.termination_grace_period_seconds.value_or(kDefaultPodGraceSeconds);
  return *deadline - absl::Seconds(grace);
}

bool NeedsForceDelete(const core::Pod& pod, absl::Time now, std::optional<absl::Time> deadline) {
  if (!deadline.has_value()) return false;
  if (core::IsTerminating(pod)) {
    // Already going: only when it was given longer than the machine has left.
    return *pod.metadata.deletion_timestamp > *deadline;
  }
  return now > *PodDeleteTime(pod, deadline);
}

int64_t ForceDeleteGraceSeconds(absl::Time now, absl::Time deadline) {
  const int64_t left = absl::ToInt64Seconds(deadline - now);
  return std::max<int64_t>(1, left);
}

DrainPlan PlanDrain(const std::vector<core::Pod>& pods, absl::Time now,
                    std::optional<absl::Time> deadline) {
  DrainPlan plan;
  std::vector<const core::Pod*> tiers[kDrainTiers];
  for (const core::Pod& pod : pods) {
    if (!IsWaitingEviction(pod, now)) continue;
    ++plan.waiting;
    bool invalid = false;
    (void)HasActiveDoNotDisrupt(pod, now, &invalid);
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
    for (const core::Pod* pod : tiers[t]) {
      if (core::IsTerminating(*pod) || NeedsForceDelete(*pod, now, deadline)) continue;
      if (HasActiveDoNotDisrupt(*pod, now)) {
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
