#include "dovetail/controllers/launch/node_claim_builder.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/scenario/pool_template.h"
#include "dovetail/scheduling/requirements.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::launch {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;
using scheduling::Requirements;

}  // namespace

std::string NodePoolHash(const v1::NodePool& pool) {
  absl::StatusOr<std::string> hash = v1::TemplateHash(pool);
  return hash.ok() ? *std::move(hash) : "";
}

v1::NodeClaim BuildNodeClaim(const v1::NodePool& pool, const solver::NewNodeClaim& planned,
                             const BuildOptions& options) {
  const v1::NodeClaimTemplate& t = pool.spec.template_;
  v1::NodeClaim claim;
  claim.api_version = std::string(v1::kApiVersion);
  claim.kind = std::string(v1::kNodeClaimKind);
  claim.metadata.generate_name = absl::StrCat(pool.metadata.name, "-");

  Requirements reqs = planned.requirements;
  for (std::string_view key : scenario::kInternalRequirementKeys) reqs.Remove(key);
  reqs.Remove(v1::kLabelHostname);

  claim.metadata.labels = scenario::TemplateLabels(pool);
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

}  // namespace dovetail::controllers::launch
