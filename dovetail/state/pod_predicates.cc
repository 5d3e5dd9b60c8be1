#include "dovetail/state/pod_predicates.h"

#include <optional>

#include "absl/strings/match.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/apis/v1/do_not_disrupt.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::state {

namespace {

std::string_view ViewOf(kube::Interned s) { return s == nullptr ? std::string_view() : *s; }

// An owner of `kind` whose apiVersion satisfies `version_ok`, or has none.
template <typename VersionOk>
bool OwnedByVersioned(const kube::PodInfo& pod, std::string_view kind, VersionOk version_ok) {
  for (const kube::OwnerRef& owner : pod.meta.owners) {
    if (ViewOf(owner.kind) != kind) continue;
    const std::string_view api_version = ViewOf(owner.api_version);
    if (api_version.empty() || version_ok(api_version)) return true;
  }
  return false;
}

}  // namespace

bool IsTerminal(const kube::PodInfo& pod) {
  return pod.phase == apis::core::PodPhase::kSucceeded ||
         pod.phase == apis::core::PodPhase::kFailed;
}

bool IsTerminating(const kube::PodInfo& pod) { return pod.meta.deletion.has_value(); }

bool OwnedBy(const kube::PodInfo& pod, std::string_view kind) {
  for (const kube::OwnerRef& owner : pod.meta.owners) {
    if (owner.kind != nullptr && *owner.kind == kind) return true;
  }
  return false;
}

bool IsOwnedByDaemonSet(const kube::PodInfo& pod) {
  return OwnedByVersioned(pod, "DaemonSet", [](std::string_view api_version) {
    return absl::StartsWith(AsAbsl(api_version), "apps/");
  });
}

bool IsOwnedByNode(const kube::PodInfo& pod) {
  return OwnedByVersioned(pod, "Node",
                          [](std::string_view api_version) { return api_version == "v1"; });
}

bool IsMirrorPod(const kube::PodInfo& pod) {
  return pod.meta.Annotation(apis::core::kMirrorPodAnnotation) != nullptr;
}

bool IsStatic(const kube::PodInfo& pod) { return IsMirrorPod(pod) || IsOwnedByNode(pod); }

bool IsCritical(const kube::PodInfo& pod) {
  const std::string_view name = ViewOf(pod.priority_class_name);
  return name == kSystemClusterCritical || name == kSystemNodeCritical;
}

// Kubernetes' Toleration.ToleratesTaint (as scheduling/taints.h) for the taint
// karpenter.sh/disrupted:NoSchedule, which has no value.
bool ToleratesDisruptedTaint(const kube::PodInfo& pod) {
  constexpr int8_t kNoSchedule = static_cast<int8_t>(apis::core::TaintEffect::kNoSchedule);
  constexpr uint8_t kExists = 1;  // CompactToleration::op
  for (const kube::CompactToleration& t : pod.tolerations) {
    if (t.effect >= 0 && t.effect != kNoSchedule) continue;
    const std::string_view key = ViewOf(t.key);
    if (!key.empty() && key != apis::v1::kDisruptedTaintKey) continue;
    if (t.op == kExists || t.value.empty()) return true;
  }
  return false;
}

bool IsStuckTerminating(const kube::PodInfo& pod, absl::Time now) {
  return pod.meta.deletion.has_value() && now - *pod.meta.deletion > kStuckTerminatingAfter;
}

bool IsDrainable(const kube::PodInfo& pod, absl::Time now) {
  return !ToleratesDisruptedTaint(pod) && !IsStatic(pod) && !IsStuckTerminating(pod, now);
}

bool IsWaitingEviction(const kube::PodInfo& pod, absl::Time now) {
  return !IsTerminal(pod) && IsDrainable(pod, now);
}

bool IsEvictable(const kube::PodInfo& pod) {
  return !IsTerminal(pod) && !IsTerminating(pod) && !ToleratesDisruptedTaint(pod) && !IsStatic(pod);
}

bool HasActiveDoNotDisrupt(const kube::PodInfo& pod, absl::Time now, bool* invalid) {
  if (invalid != nullptr) *invalid = false;
  const std::string* value = pod.meta.Annotation(apis::v1::kDoNotDisruptAnnotationKey);
  if (value == nullptr) return false;
  std::optional<absl::Time> since = pod.start_time;
  if (!since.has_value() && pod.meta.creation != absl::InfinitePast()) since = pod.meta.creation;
  return apis::v1::DoNotDisruptInForce(*value, since, now, invalid);
}

}  // namespace dovetail::state
