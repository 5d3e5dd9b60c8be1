#include "dovetail/state/pod_predicates.h"

#include <optional>

#include "dovetail/apis/v1/do_not_disrupt.h"
#include "dovetail/apis/v1/labels.h"

namespace dovetail::state {

bool IsTerminal(const kube::PodInfo& pod) {
  return pod.phase == apis::core::PodPhase::kSucceeded ||
         pod.phase == apis::core::PodPhase::kFailed;
}

bool OwnedBy(const kube::PodInfo& pod, std::string_view kind) {
  for (const kube::OwnerRef& owner : pod.meta.owners) {
    if (owner.kind != nullptr && *owner.kind == kind) return true;
  }
  return false;
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
