// NodeClaim (karpenter.sh/v1): one requested machine — its requirements, resource requests,
// taints, node class and lifetime settings (spec, immutable once created) and what the cloud
// provider and the lifecycle controllers learnt about it (status). Also NodeClassReference, shared
// with NodePool.
//
// Decoding leaves every field the manifest does not set unset (std::nullopt / empty); ApplyDefaults
// fills what the API server's CRD defaulting would. Durations are kept as the text the user wrote
// ("720h", "Never"); parse them with dovetail::ParseNillableDuration (common/duration.h).
// Plain data with a JSON codec (DecodeJson/EncodeJson in apis/core/codec.h); thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/meta.h"
#include "dovetail/common/quantity.h"
#include "nlohmann/json.hpp"

namespace dovetail::apis::v1 {

inline constexpr std::string_view kApiVersion = "karpenter.sh/v1";
inline constexpr std::string_view kNodeClaimKind = "NodeClaim";

// CRD defaults.
inline constexpr std::string_view kDefaultExpireAfter = "720h";

// Reference to the provider-specific node class (e.g. karpenter.k8s.aws/EC2NodeClass/default).
struct NodeClassReference {
  std::string group;
  std::string kind;
  std::string name;
  bool operator==(const NodeClassReference&) const = default;
};

struct NodeClaimResources {
  ResourceList requests;
};

struct NodeClaimSpec {
  std::vector<core::Taint> taints;
  std::vector<core::Taint> startup_taints;
  std::vector<core::NodeSelectorRequirement> requirements;  // always written, may be empty
  NodeClaimResources resources;
  std::optional<NodeClassReference> node_class_ref;     // required by the CRD
  std::optional<std::string> termination_grace_period;  // unset: wait for pods forever
  std::optional<std::string> expire_after;              // default "720h"; or "Never"
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct NodeClaimStatus {
  std::string node_name;
  std::string provider_id;  // providerID
  std::string image_id;     // imageID
  ResourceList capacity;
  ResourceList allocatable;
  std::vector<core::Condition> conditions;
  std::optional<absl::Time> last_pod_event_time;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct NodeClaim {
  std::string api_version;
  std::string kind;
  core::ObjectMeta metadata;
  NodeClaimSpec spec;
  NodeClaimStatus status;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

// Fills CRD defaults left unset: spec.expireAfter = 720h.
void ApplyDefaults(NodeClaim& claim);

// The condition of the given type in a Karpenter status, or nullptr.
const core::Condition* FindCondition(const std::vector<core::Condition>& conditions,
                                     std::string_view type);

// Codec hooks (apis/core/codec.h).
void DescribeFields(core::FieldCodec& c, NodeClassReference& v);
void DescribeFields(core::FieldCodec& c, NodeClaimResources& v);
void DescribeFields(core::FieldCodec& c, NodeClaimSpec& v);
void DescribeFields(core::FieldCodec& c, NodeClaimStatus& v);
void DescribeFields(core::FieldCodec& c, NodeClaim& v);

// Describes a NodeClaimSpec or a NodePool's NodeClaimTemplateSpec (the same fields but resources),
// in this order: taints, startupTaints, requirements (always written), resources (only when Spec
// has a `resources` member), nodeClassRef, terminationGracePeriod, expireAfter, unknown fields.
template <typename Spec>
void DescribeNodeClaimSpec(core::FieldCodec& c, Spec& v) {
  c.Field("taints", v.taints);
  c.Field("startupTaints", v.startup_taints);
  c.Field("requirements", v.requirements, {.emit_empty = true});
  if constexpr (requires { v.resources; }) c.Field("resources", v.resources);
  c.Field("nodeClassRef", v.node_class_ref);
  c.Field("terminationGracePeriod", v.termination_grace_period);
  c.Field("expireAfter", v.expire_after);
  c.UnknownFields(v.unknown_fields);
}

}  // namespace dovetail::apis::v1
