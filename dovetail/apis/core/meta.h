// Kubernetes core API structures shared by every kind Dovetail reads or writes: object metadata,
// owner references, taints, tolerations, node selector requirements/terms, label selectors and
// status conditions. Plain data (no behaviour beyond equality); the algebra over them lives in
// dovetail/scheduling, the JSON/YAML codecs in dovetail/apis/core/codec.h. Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace dovetail::apis::core {

using StringMap = std::map<std::string, std::string, std::less<>>;

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
  std::optional<bool> block_owner_deletion;
  bool operator==(const OwnerReference&) const = default;
};

struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::optional<absl::Time> creation_timestamp;
  std::optional<absl::Time> deletion_timestamp;
  std::optional<int64_t> deletion_grace_period_seconds;
  StringMap labels;
  StringMap annotations;
  std::vector<OwnerReference> owner_references;
  std::vector<std::string> finalizers;
  // Fields Dovetail does not model (managedFields, ...), kept so a write-back loses nothing.
  nlohmann::json unknown_fields = nlohmann::json::object();
};

enum class TaintEffect { kNoSchedule, kPreferNoSchedule, kNoExecute };

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;
  std::optional<absl::Time> time_added;
  bool operator==(const Taint&) const = default;
};

enum class TolerationOperator { kEqual, kExists };

struct Toleration {
  std::string key;  // empty with kExists tolerates every key
  TolerationOperator op = TolerationOperator::kEqual;
  std::string value;
  std::optional<TaintEffect> effect;  // unset tolerates every effect
  std::optional<int64_t> toleration_seconds;
  bool operator==(const Toleration&) const = default;
};

// Node selector operators, including Karpenter's Gte/Lte extensions.
enum class SelectorOperator { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt, kGte, kLte };

// A NodeSelectorRequirement (pods, PVs) or, with min_values, Karpenter's
// NodeSelectorRequirementWithMinValues (NodePools, NodeClaims).
struct NodeSelectorRequirement {
  std::string key;
  SelectorOperator op = SelectorOperator::kIn;
  std::vector<std::string> values;
  std::optional<int32_t> min_values;
  bool operator==(const NodeSelectorRequirement&) const = default;
};

struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
  std::vector<NodeSelectorRequirement> match_fields;
  bool operator==(const NodeSelectorTerm&) const = default;
};

struct NodeSelector {
  std::vector<NodeSelectorTerm> terms;  // ORed
  bool operator==(const NodeSelector&) const = default;
};

enum class LabelSelectorOperator { kIn, kNotIn, kExists, kDoesNotExist };

struct LabelSelectorRequirement {
  std::string key;
  LabelSelectorOperator op = LabelSelectorOperator::kIn;
  std::vector<std::string> values;
  bool operator==(const LabelSelectorRequirement&) const = default;
};

// metav1.LabelSelector. An absent selector (std::nullopt where optional) matches nothing in the
// contexts Kubernetes says so (e.g. pod affinity); an empty selector matches everything.
struct LabelSelector {
  StringMap match_labels;
  std::vector<LabelSelectorRequirement> match_expressions;
  bool operator==(const LabelSelector&) const = default;
};

enum class ConditionStatus { kTrue, kFalse, kUnknown };

struct Condition {
  std::string type;
  ConditionStatus status = ConditionStatus::kUnknown;
  std::string reason;
  std::string message;
  int64_t observed_generation = 0;
  std::optional<absl::Time> last_transition_time;
  bool operator==(const Condition&) const = default;
};

}  // namespace dovetail::apis::core
