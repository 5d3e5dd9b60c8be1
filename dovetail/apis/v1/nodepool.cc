#include "dovetail/apis/v1/nodepool.h"

#include <utility>

#include "dovetail/apis/hash/drift_hash.h"

namespace dovetail::apis::v1 {
namespace {
constexpr std::string_view kConsolidationPolicyNames[] = {"WhenEmptyOrUnderutilized", "WhenEmpty",
                                                          "Balanced"};
constexpr std::string_view kDisruptionReasonNames[] = {"Underutilized", "Empty", "Drifted"};
}  // namespace

std::span<const std::string_view> EnumNames(ConsolidationPolicy) {
  return kConsolidationPolicyNames;
}
std::span<const std::string_view> EnumNames(DisruptionReason) { return kDisruptionReasonNames; }

void ApplyDefaults(NodePool& pool) {
  NodeClaimTemplateSpec& spec = pool.spec.template_.spec;
  if (!spec.expire_after.has_value()) spec.expire_after = std::string(kDefaultExpireAfter);
  if (!pool.spec.disruption.has_value()) pool.spec.disruption.emplace();
  Disruption& disruption = *pool.spec.disruption;
  if (!disruption.consolidate_after.has_value()) {
    disruption.consolidate_after = std::string(kDefaultConsolidateAfter);
  }
  if (!disruption.consolidation_policy.has_value()) {
    disruption.consolidation_policy = ConsolidationPolicy::kWhenEmptyOrUnderutilized;
  }
  if (!disruption.budgets.has_value()) {
    Budget budget;
    budget.nodes = std::string(kDefaultBudgetNodes);
    disruption.budgets.emplace().push_back(std::move(budget));
  }
  for (Budget& budget : *disruption.budgets) {
    if (!budget.nodes.has_value()) budget.nodes = std::string(kDefaultBudgetNodes);
  }
}

void DescribeFields(core::FieldCodec& c, NodeClaimTemplateMetadata& v) {
  c.Field("labels", v.labels);
  c.Field("annotations", v.annotations);
}

void DescribeFields(core::FieldCodec& c, NodeClaimTemplateSpec& v) { DescribeNodeClaimSpec(c, v); }

void DescribeFields(core::FieldCodec& c, NodeClaimTemplate& v) {
  c.Field("metadata", v.metadata);
  c.Field("spec", v.spec, {.emit_empty = true});
}

void DescribeFields(core::FieldCodec& c, Budget& v) {
  c.Field("reasons", v.reasons);
  c.Field("nodes", v.nodes);
  c.Field("schedule", v.schedule);
  c.Field("duration", v.duration);
}

void DescribeFields(core::FieldCodec& c, Disruption& v) {
  c.Field("consolidateAfter", v.consolidate_after);
  c.Field("consolidationPolicy", v.consolidation_policy);
  c.Field("budgets", v.budgets);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(core::FieldCodec& c, NodePoolSpec& v) {
  c.Field("template", v.template_, {.emit_empty = true});
  c.Field("disruption", v.disruption);
  c.Field("limits", v.limits);
  c.Field("weight", v.weight);
  c.Field("replicas", v.replicas);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(core::FieldCodec& c, NodePoolStatus& v) {
  c.Field("resources", v.resources);
  c.Field("nodes", v.nodes);
  c.Field("conditions", v.conditions);
  c.Field("nodeClassObservedGeneration", v.node_class_observed_generation);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(core::FieldCodec& c, NodePool& v) {
  core::DescribeObject(c, v, {.emit_empty = true});
  if (c.decoding() && c.input() != nullptr) {
    v.template_empty_fields = hash::PresentEmpty(*c.input(), hash::kNodePoolCollections);
  }
}

absl::StatusOr<std::string> TemplateHash(const NodePool& pool) {
  nlohmann::json json = core::EncodeJson(pool);
  hash::RestorePresentEmpty(json, hash::kNodePoolCollections, pool.template_empty_fields);
  return hash::NodePoolHash(json);
}

}  // namespace dovetail::apis::v1
