#include "dovetail/apis/v1/nodeclaim.h"

namespace dovetail::apis::v1 {

void ApplyDefaults(NodeClaim& claim) {
  if (!claim.spec.expire_after.has_value())
    claim.spec.expire_after = std::string(kDefaultExpireAfter);
}

const core::Condition* FindCondition(const std::vector<core::Condition>& conditions,
                                     std::string_view type) {
  for (const core::Condition& condition : conditions) {
    if (condition.type == type) return &condition;
  }
  return nullptr;
}

void DescribeFields(core::FieldCodec& c, NodeClassReference& v) {
  c.Field("group", v.group, {.emit_empty = true});
  c.Field("kind", v.kind, {.emit_empty = true});
  c.Field("name", v.name, {.emit_empty = true});
}

void DescribeFields(core::FieldCodec& c, NodeClaimResources& v) { c.Field("requests", v.requests); }

void DescribeFields(core::FieldCodec& c, NodeClaimSpec& v) { DescribeNodeClaimSpec(c, v); }

void DescribeFields(core::FieldCodec& c, NodeClaimStatus& v) {
  c.Field("nodeName", v.node_name);
  c.Field("providerID", v.provider_id);
  c.Field("imageID", v.image_id);
  c.Field("capacity", v.capacity);
  c.Field("allocatable", v.allocatable);
  c.Field("conditions", v.conditions);
  c.Field("lastPodEventTime", v.last_pod_event_time);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(core::FieldCodec& c, NodeClaim& v) {
  core::DescribeObject(c, v, {.emit_empty = true});
}

}  // namespace dovetail::apis::v1
