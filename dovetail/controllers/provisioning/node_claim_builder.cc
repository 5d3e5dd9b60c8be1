#include "dovetail/controllers/provisioning/node_claim_builder.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/scheduling/requirements.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::provisioning {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;
using scheduling::Requirement;
using scheduling::Requirements;

// Internal requirements that only let DaemonSets selecting them count (stripped from NodeClaims).
constexpr std::string_view kInternalKeys[] = {v1::kNodeRegisteredLabelKey,
                                              v1::kNodeInitializedLabelKey};

core::StringMap TemplateLabels(const v1::NodePool& pool) {
  core::StringMap labels = pool.spec.template_.metadata.labels;
  labels[std::string(v1::kNodePoolLabelKey)] = pool.metadata.name;
  if (std::string key = NodeClassLabelKey(pool); !key.empty()) {
    labels[key] = pool.spec.template_.spec.node_class_ref->name;
  }
  return labels;
}

}  // namespace

std::string NodeClassLabelKey(const v1::NodePool& pool) {
  const auto& ref = pool.spec.template_.spec.node_class_ref;
  if (!ref.has_value() || ref->group.empty() || ref->kind.empty()) return "";
  return absl::StrCat(ref->group, "/", absl::AsciiStrToLower(ref->kind));
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

std::string NodePoolHash(const v1::NodePool& pool) {
  absl::StatusOr<std::string> hash = v1::TemplateHash(pool);
  return hash.ok() ? *std::move(hash) : "";
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
  for (std::string_view key : kInternalKeys) {
    t.requirements.Add(Requirement::In(std::string(key), {std::string_view("true")}));
  }
  t.labels = pool.spec.template_.metadata.labels;
  t.annotations = pool.spec.template_.metadata.annotations;
  t.taints = pool.spec.template_.spec.taints;
  t.startup_taints = pool.spec.template_.spec.startup_taints;
  t.remaining_limits = std::move(remaining_limits);
  t.instance_types = std::move(instance_types);
  return t;
}

v1::NodeClaim BuildNodeClaim(const v1::NodePool& pool, const solver::NewNodeClaim& planned,
                             const BuildOptions& options) {
  const v1::NodeClaimTemplate& t = pool.spec.template_;
  v1::NodeClaim claim;
  claim.api_version = std::string(v1::kApiVersion);
  claim.kind = std::string(v1::kNodeClaimKind);
  claim.metadata.generate_name = absl::StrCat(pool.metadata.name, "-");

  Requirements reqs = planned.requirements;
  for (std::string_view key : kInternalKeys) reqs.Remove(key);
  reqs.Remove(v1::kLabelHostname);

  claim.metadata.labels = TemplateLabels(pool);
  for (auto& [key, value] : reqs.Labels()) claim.metadata.labels.emplace(key, value);

  claim.metadata.annotations = t.metadata.annotations;
  claim.metadata.annotations[std::string(v1::kNodePoolHashAnnotationKey)] = NodePoolHash(pool);
  claim.metadata.annotations[std::string(v1::kNodePoolHashVersionAnnotationKey)] =
      std::string(v1::kNodePoolHashVersion);
  if (!options.min_values_strict) {
    claim.metadata.annotations[std::string(v1::kNodeClaimMinValuesRelaxedAnnotationKey)] =
        planned.min_values_relaxed ? "true" : "false";
  }

  core::OwnerReference owner;
  owner.api_version = std::string(v1::kApiVersion);
  owner.kind = std::string(v1::kNodePoolKind);
  owner.name = pool.metadata.name;
  owner.uid = pool.metadata.uid;
  owner.block_owner_deletion = true;
  claim.metadata.owner_references.push_back(std::move(owner));

  claim.spec.requirements = reqs.ToNodeSelectorRequirements();
  // The instance-type options cheapest first (the requirement algebra keeps values sorted by
  // name; the set is the same).
  for (core::NodeSelectorRequirement& r : claim.spec.requirements) {
    if (r.key != v1::kLabelInstanceType || r.op != core::SelectorOperator::kIn) continue;
    if (r.values.size() != planned.instance_types.size()) break;
    for (size_t i = 0; i < r.values.size(); ++i) r.values[i] = planned.instance_types[i]->name();
  }
  claim.spec.resources.requests = planned.requests;
  claim.spec.taints = planned.taints;
  claim.spec.startup_taints = planned.startup_taints;
  claim.spec.node_class_ref = t.spec.node_class_ref;
  claim.spec.expire_after = t.spec.expire_after.value_or(std::string(v1::kDefaultExpireAfter));
  claim.spec.termination_grace_period = t.spec.termination_grace_period;
  return claim;
}

}  // namespace dovetail::controllers::provisioning
