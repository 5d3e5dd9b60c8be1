// NodePool (karpenter.sh/v1): the template NodeClaims are made from (labels, annotations,
// requirements, taints, node class, lifetime), the disruption policy (consolidation policy and
// delay, budgets), limits, weight and static replicas; status carries the pool's resources, node
// count and conditions. Every field of the v1 API is modelled; unknown keys are kept at the object,
// spec, template spec, disruption and status levels.
//
// Decoding leaves every field the manifest does not set unset; ApplyDefaults fills exactly what
// the API server's CRD defaulting adds (expireAfter 720h; disruption {consolidateAfter 0s,
// consolidationPolicy WhenEmptyOrUnderutilized, budgets [{nodes: "10%"}]}; budget nodes "10%"), so
// encoding a decoded object writes back what the user wrote. Durations stay text ("720h",
// "Never"); parse them with dovetail::ParseNillableDuration (common/duration.h).
// Plain data with a JSON codec (DecodeJson/EncodeJson in apis/core/codec.h); thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/meta.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/common/quantity.h"
#include "nlohmann/json.hpp"

namespace dovetail::apis::v1 {

inline constexpr std::string_view kNodePoolKind = "NodePool";

// CRD defaults (kDefaultExpireAfter is in nodeclaim.h).
inline constexpr std::string_view kDefaultConsolidateAfter = "0s";
inline constexpr std::string_view kDefaultBudgetNodes = "10%";

// Labels and annotations the pool puts on its NodeClaims and Nodes.
struct NodeClaimTemplateMetadata {
  core::StringMap labels;
  core::StringMap annotations;
};

struct NodeClaimTemplateSpec {
  std::vector<core::Taint> taints;
  std::vector<core::Taint> startup_taints;
  std::vector<core::NodeSelectorRequirement> requirements;  // always written, may be empty
  std::optional<NodeClassReference> node_class_ref;         // required by the CRD
  std::optional<std::string> termination_grace_period;      // unset: wait for pods forever
  std::optional<std::string> expire_after;                  // default "720h"; or "Never"
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct NodeClaimTemplate {
  NodeClaimTemplateMetadata metadata;
  NodeClaimTemplateSpec spec;
};

enum class ConsolidationPolicy { kWhenEmptyOrUnderutilized, kWhenEmpty, kBalanced };
enum class DisruptionReason { kUnderutilized, kEmpty, kDrifted };

struct Budget {
  std::vector<DisruptionReason> reasons;  // empty: every reason
  std::optional<std::string> nodes;       // "10%" or "5"; default "10%"
  std::optional<std::string> schedule;    // cron, UTC; set together with duration
  std::optional<std::string> duration;    // "1h", "30m", "1h30m"
};

struct Disruption {
  std::optional<std::string> consolidate_after;             // default "0s"; or "Never"
  std::optional<ConsolidationPolicy> consolidation_policy;  // default WhenEmptyOrUnderutilized
  // Unset: the default [{nodes: "10%"}]; set and empty: no budget limits disruption.
  std::optional<std::vector<Budget>> budgets;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct NodePoolSpec {
  NodeClaimTemplate template_;
  std::optional<Disruption> disruption;  // default {consolidateAfter: 0s} (then defaulted further)
  ResourceList limits;                   // cpu, memory, nodes, extended resources
  std::optional<int32_t> weight;         // 1..100; unset counts as 0
  std::optional<int64_t> replicas;       // static pool (alpha)
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct NodePoolStatus {
  ResourceList resources;
  std::optional<int64_t> nodes;
  std::vector<core::Condition> conditions;
  int64_t node_class_observed_generation = 0;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct NodePool {
  std::string api_version;
  std::string kind;
  core::ObjectMeta metadata;
  NodePoolSpec spec;
  NodePoolStatus status;
  nlohmann::json unknown_fields = nlohmann::json::object();
  // Not part of the API: the hashed collections the decoded JSON held present but empty, which
  // upstream's drift hash tells from absent ones and typed fields cannot (hash::PresentEmpty of
  // hash::kNodePoolCollections).
  std::vector<std::string> template_empty_fields;
};

// Upstream's drift hash (karpenter.sh/nodepool-hash, version v3) of the pool as it is now, with
// the present-but-empty fields its JSON had (template_empty_fields). Errors: InvalidArgument when
// a hashed field does not hash (an unparsable expireAfter or terminationGracePeriod).
absl::StatusOr<std::string> TemplateHash(const NodePool& pool);

// Fills the CRD defaults listed in the file comment; leaves set fields alone. Idempotent.
void ApplyDefaults(NodePool& pool);

// A static pool: spec.replicas is set.
inline bool IsStatic(const NodePool& pool) { return pool.spec.replicas.has_value(); }

// Codec hooks (apis/core/codec.h).
std::span<const std::string_view> EnumNames(ConsolidationPolicy);
std::span<const std::string_view> EnumNames(DisruptionReason);
void DescribeFields(core::FieldCodec& c, NodeClaimTemplateMetadata& v);
void DescribeFields(core::FieldCodec& c, NodeClaimTemplateSpec& v);
void DescribeFields(core::FieldCodec& c, NodeClaimTemplate& v);
void DescribeFields(core::FieldCodec& c, Budget& v);
void DescribeFields(core::FieldCodec& c, Disruption& v);
void DescribeFields(core::FieldCodec& c, NodePoolSpec& v);
void DescribeFields(core::FieldCodec& c, NodePoolStatus& v);
void DescribeFields(core::FieldCodec& c, NodePool& v);

}  // namespace dovetail::apis::v1
