// PodDisruptionBudget (policy/v1): selector, minAvailable / maxUnavailable, the unhealthy pod
// eviction policy and the status the disruption controller maintains (disruptionsAllowed, ...).
// Plain data with a JSON codec (codec.h); thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/int_or_string.h"
#include "dovetail/apis/core/meta.h"
#include "nlohmann/json.hpp"

namespace dovetail::apis::core {

enum class UnhealthyPodEvictionPolicy { kIfHealthyBudget, kAlwaysAllow };

struct PodDisruptionBudgetSpec {
  std::optional<IntOrString> min_available;
  // Unset selects no pods; an empty selector selects every pod of the namespace.
  std::optional<LabelSelector> selector;
  std::optional<IntOrString> max_unavailable;
  std::optional<UnhealthyPodEvictionPolicy>
      unhealthy_pod_eviction_policy;  // unset: IfHealthyBudget
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct PodDisruptionBudgetStatus {
  int64_t observed_generation = 0;
  int32_t disruptions_allowed = 0;
  int32_t current_healthy = 0;
  int32_t desired_healthy = 0;
  int32_t expected_pods = 0;
  std::vector<Condition> conditions;
  nlohmann::json unknown_fields = nlohmann::json::object();  // disruptedPods
};

struct PodDisruptionBudget {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  PodDisruptionBudgetSpec spec;
  // Unset until the disruption controller has written it.
  std::optional<PodDisruptionBudgetStatus> status;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

// Codec hooks (codec.h).
std::span<const std::string_view> EnumNames(UnhealthyPodEvictionPolicy);
void DescribeFields(FieldCodec& c, PodDisruptionBudgetSpec& v);
void DescribeFields(FieldCodec& c, PodDisruptionBudgetStatus& v);
void DescribeFields(FieldCodec& c, PodDisruptionBudget& v);

}  // namespace dovetail::apis::core
