#include "dovetail/scenario/pod_filter.h"

#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dovetail/apis/v1/do_not_disrupt.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/scheduling/requirements.h"
#include "dovetail/state/pod_predicates.h"

namespace dovetail::scenario {
namespace {

using state::OwnedBy;

namespace core = apis::core;

bool OptsOut(const core::NodeSelectorRequirement& r) {
  return r.key == apis::v1::kNodePoolLabelKey && r.op == core::SelectorOperator::kDoesNotExist;
}

std::optional<IgnoreReason> CheckRequirement(const core::NodeSelectorRequirement& r) {
  if (OptsOut(r))
    return IgnoreReason{.message = "pod opted out of karpenter.sh/nodepool", .silent = true};
  if (absl::Status s = scheduling::ValidateRequirement(r, scheduling::RequirementSource::kPod);
      !s.ok()) {
    return IgnoreReason{.message =
                            absl::StrCat("ignoring pod, invalid requirement: ", s.message())};
  }
  return std::nullopt;
}

}  // namespace

bool IsProvisionable(const kube::PodInfo& pod) {
  if (!pod.unschedulable) return false;
  if (!pod.node_name.empty() || !pod.nominated_node_name.empty()) return false;
  if (state::IsTerminal(pod) || state::IsTerminating(pod)) return false;
  if (OwnedBy(pod, "DaemonSet") || OwnedBy(pod, "Node")) return false;
  return true;
}

bool HasDraRequirements(const core::PodSpec& spec) {
  if (!spec.resource_claims.empty()) return true;
  for (const auto* list : {&spec.containers, &spec.init_containers}) {
    for (const core::Container& c : *list) {
      auto it = c.resources.unknown_fields.find("claims");
      if (it != c.resources.unknown_fields.end() && it->is_array() && !it->empty()) return true;
    }
  }
  return false;
}

bool IsReschedulable(const kube::PodInfo& pod, absl::Time now) {
  if (state::IsTerminal(pod)) return false;
  if (state::IsTerminating(pod) && !OwnedBy(pod, "StatefulSet")) return false;
  if (OwnedBy(pod, "DaemonSet") || OwnedBy(pod, "Node")) return false;
  if (const std::string* value = pod.meta.Annotation(apis::v1::kDoNotDisruptAnnotationKey)) {
    // A duration counts from the pod's start only (a pod not started yet is not protected).
    if (apis::v1::DoNotDisruptInForce(*value, pod.start_time, now)) return false;
  }
  return true;
}

std::optional<IgnoreReason> IgnoredReason(const core::Pod& pod) {
  for (const auto& [key, value] : pod.spec.node_selector) {
    core::NodeSelectorRequirement r;
    r.key = key;
    r.op = core::SelectorOperator::kIn;
    r.values = {value};
    if (auto reason = CheckRequirement(r)) return reason;
  }
  if (pod.spec.affinity && pod.spec.affinity->node_affinity &&
      pod.spec.affinity->node_affinity->required.has_value()) {
    for (const core::NodeSelectorTerm& term : pod.spec.affinity->node_affinity->required->terms) {
      if (!term.match_fields.empty()) {
        return IgnoreReason{.message =
                                "ignoring pod, node affinity with matchFields is not supported"};
      }
      for (const core::NodeSelectorRequirement& r : term.match_expressions) {
        if (auto reason = CheckRequirement(r)) return reason;
      }
    }
  }
  return std::nullopt;
}

}  // namespace dovetail::scenario
