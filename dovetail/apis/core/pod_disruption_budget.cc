#include "dovetail/apis/core/pod_disruption_budget.h"

namespace dovetail::apis::core {
namespace {
constexpr std::string_view kPolicyNames[] = {"IfHealthyBudget", "AlwaysAllow"};
}  // namespace

std::span<const std::string_view> EnumNames(UnhealthyPodEvictionPolicy) { return kPolicyNames; }

void DescribeFields(FieldCodec& c, PodDisruptionBudgetSpec& v) {
  c.Field("minAvailable", v.min_available);
  c.Field("selector", v.selector);
  c.Field("maxUnavailable", v.max_unavailable);
  c.Field("unhealthyPodEvictionPolicy", v.unhealthy_pod_eviction_policy);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, PodDisruptionBudgetStatus& v) {
  c.Field("observedGeneration", v.observed_generation);
  c.Field("disruptionsAllowed", v.disruptions_allowed, {.emit_empty = true});
  c.Field("currentHealthy", v.current_healthy, {.emit_empty = true});
  c.Field("desiredHealthy", v.desired_healthy, {.emit_empty = true});
  c.Field("expectedPods", v.expected_pods, {.emit_empty = true});
  c.Field("conditions", v.conditions);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, PodDisruptionBudget& v) { DescribeObject(c, v); }

}  // namespace dovetail::apis::core
