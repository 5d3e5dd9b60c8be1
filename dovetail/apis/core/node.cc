#include "dovetail/apis/core/node.h"

namespace dovetail::apis::core {

const NodeCondition* FindCondition(const NodeStatus& status, std::string_view type) {
  for (const NodeCondition& condition : status.conditions) {
    if (condition.type == type) return &condition;
  }
  return nullptr;
}

bool IsReady(const Node& node) {
  const NodeCondition* ready = FindCondition(node.status, "Ready");
  return ready != nullptr && ready->status == ConditionStatus::kTrue;
}

void DescribeFields(FieldCodec& c, NodeSpec& v) {
  c.Field("providerID", v.provider_id);
  c.Field("unschedulable", v.unschedulable);
  c.Field("taints", v.taints);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, NodeCondition& v) {
  c.Field("type", v.type, {.emit_empty = true});
  c.Field("status", v.status);
  c.Field("lastHeartbeatTime", v.last_heartbeat_time);
  c.Field("lastTransitionTime", v.last_transition_time);
  c.Field("reason", v.reason);
  c.Field("message", v.message);
}

void DescribeFields(FieldCodec& c, NodeAddress& v) {
  c.Field("type", v.type, {.emit_empty = true});
  c.Field("address", v.address, {.emit_empty = true});
}

void DescribeFields(FieldCodec& c, NodeStatus& v) {
  c.Field("capacity", v.capacity);
  c.Field("allocatable", v.allocatable);
  c.Field("conditions", v.conditions);
  c.Field("addresses", v.addresses);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, Node& v) { DescribeObject(c, v); }

}  // namespace dovetail::apis::core
