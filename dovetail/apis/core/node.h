// Node (core/v1) as Dovetail reads it: labels (in metadata), taints, unschedulable, providerID,
// capacity, allocatable, conditions and addresses. Everything else is kept in unknown_fields.
// Plain data with a JSON codec (codec.h); helpers are pure functions. Thread-compatible.
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

namespace dovetail::apis::core {

struct NodeSpec {
  std::string provider_id;  // providerID
  bool unschedulable = false;
  std::vector<Taint> taints;
  nlohmann::json unknown_fields = nlohmann::json::object();  // podCIDR(s), ...
};

struct NodeCondition {
  std::string type;
  ConditionStatus status = ConditionStatus::kUnknown;
  std::optional<absl::Time> last_heartbeat_time;
  std::optional<absl::Time> last_transition_time;
  std::string reason;
  std::string message;
};

struct NodeAddress {
  std::string type;  // InternalIP, ExternalIP, Hostname, ...
  std::string address;
};

struct NodeStatus {
  ResourceList capacity;
  ResourceList allocatable;
  std::vector<NodeCondition> conditions;
  std::vector<NodeAddress> addresses;
  nlohmann::json unknown_fields = nlohmann::json::object();  // nodeInfo, images, ...
};

struct Node {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  NodeSpec spec;
  NodeStatus status;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

// The node's condition of the given type, or nullptr.
const NodeCondition* FindCondition(const NodeStatus& status, std::string_view type);
// Condition Ready is True.
bool IsReady(const Node& node);

// Codec hooks (codec.h).
void DescribeFields(FieldCodec& c, NodeSpec& v);
void DescribeFields(FieldCodec& c, NodeCondition& v);
void DescribeFields(FieldCodec& c, NodeAddress& v);
void DescribeFields(FieldCodec& c, NodeStatus& v);
void DescribeFields(FieldCodec& c, Node& v);

}  // namespace dovetail::apis::core
