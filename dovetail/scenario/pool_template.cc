#include "dovetail/scenario/pool_template.h"

#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/scheduling/requirements.h"

namespace dovetail::scenario {

namespace core = apis::core;
namespace v1 = apis::v1;
using scheduling::Requirement;
using scheduling::Requirements;

std::string NodeClassLabelKey(const v1::NodePool& pool) {
  const auto& ref = pool.spec.template_.spec.node_class_ref;
  if (!ref.has_value() || ref->group.empty() || ref->kind.empty()) return "";
  return absl::StrCat(ref->group, "/", absl::AsciiStrToLower(ref->kind));
}

core::StringMap TemplateLabels(const v1::NodePool& pool) {
  core::StringMap labels = pool.spec.template_.metadata.labels;
  labels[std::string(v1::kNodePoolLabelKey)] = pool.metadata.name;
  if (std::string key = NodeClassLabelKey(pool); !key.empty()) {
    labels[key] = pool.spec.template_.spec.node_class_ref->name;
  }
  return labels;
}

std::unique_ptr<core::Pod> DaemonSetPod(const core::DaemonSet& ds) {
  auto pod = std::make_unique<core::Pod>();
  pod->api_version = "v1";
  pod->kind = "Pod";
  pod->metadata = ds.spec.template_.metadata;
  pod->metadata.name = ds.metadata.name;
  pod->metadata.namespace_ = ds.metadata.namespace_;
  pod->metadata.uid = absl::StrCat("daemonset-", ds.metadata.uid);
  core::OwnerReference owner;
  owner.api_version = "apps/v1";
  owner.kind = "DaemonSet";
  owner.name = ds.metadata.name;
  owner.uid = ds.metadata.uid;
  owner.controller = true;
  pod->metadata.owner_references.push_back(std::move(owner));
  pod->spec = ds.spec.template_.spec;
  return pod;
}

absl::StatusOr<double> NodeOverheadPerHour(const v1::NodePool& pool) {
  auto it = pool.metadata.annotations.find(std::string(kNodeOverheadAnnotationKey));
  if (it == pool.metadata.annotations.end()) return 0.0;
  double value = 0;
  if (!absl::SimpleAtod(it->second, &value) || !std::isfinite(value) || value < 0 || value > 1000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NodePool/", pool.metadata.name, ": annotation ", std::string(kNodeOverheadAnnotationKey),
        " \"", it->second, "\" must be a decimal number of USD per hour from 0 to 1000"));
  }
  return value;
}

absl::StatusOr<solver::PoolTemplate> BuildPoolTemplate(
    const v1::NodePool& pool, std::vector<cloudprovider::InstanceTypePtr> instance_types,
    std::optional<ResourceList> remaining_limits) {
  solver::PoolTemplate t;
  t.name = pool.metadata.name;
  t.weight = pool.spec.weight.value_or(0);
  auto reqs = Requirements::FromNodeSelectorRequirements(pool.spec.template_.spec.requirements);
  if (!reqs.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("NodePool/", pool.metadata.name, ": ", reqs.status().message()));
  }
  t.requirements = std::move(*reqs);
  t.requirements.Intersect(Requirements::FromLabels(TemplateLabels(pool)));
  for (std::string_view key : kInternalRequirementKeys) {
    t.requirements.Add(Requirement::In(std::string(key), {std::string_view("true")}));
  }
  t.labels = pool.spec.template_.metadata.labels;
  t.annotations = pool.spec.template_.metadata.annotations;
  t.taints = pool.spec.template_.spec.taints;
  t.startup_taints = pool.spec.template_.spec.startup_taints;
  t.remaining_limits = std::move(remaining_limits);
  t.instance_types = std::move(instance_types);
  ASSIGN_OR_RETURN(t.node_overhead_per_hour, NodeOverheadPerHour(pool));
  return t;
}

}  // namespace dovetail::scenario
