#include "dovetail/providers/aws/interruption/actions.h"


namespace dovetail::providers::aws::interruption {

Action DecideAction(const InterruptionMessage& message, std::string_view rebalance_policy) {
  Action a;
  switch (message.kind) {
    case InterruptionKind::kSpotInterruption:
      a.delete_node_claim = true;
      a.mark_spot_unavailable = true;
      a.event_reason = "SpotInterrupted";
      a.event_message = "Spot interruption warning was triggered";
      break;
    case InterruptionKind::kRebalanceRecommendation:
      a.event_reason = "SpotRebalanceRecommendation";
      a.event_message = "Spot rebalance recommendation was triggered";
      a.taint_rebalance = rebalance_policy == kRebalancePolicyTaint;
      break;
    case InterruptionKind::kScheduledChange:
      a.delete_node_claim = true;
      a.event_reason = "InstanceUnhealthy";
      a.event_message = "An unhealthy warning was triggered for the instance";
      break;
    case InterruptionKind::kInstanceStopped:
      a.delete_node_claim = true;
      a.event_reason = "InstanceStopping";
      a.event_message = "Instance is stopping";
      break;
    case InterruptionKind::kInstanceTerminated:
      a.delete_node_claim = true;
      a.event_reason = "InstanceTerminating";
      a.event_message = "Instance is terminating";
      break;
    case InterruptionKind::kCapacityReservationInterruption:
      a.delete_node_claim = true;
      a.event_reason = "CapacityReservationInterrupted";
      a.event_message = "Capacity reservation interruption warning was triggered";
      break;
    case InterruptionKind::kUnknown:
    case InterruptionKind::kInvalid:
      break;
  }
  return a;
}

std::string InstanceIdFromProviderId(std::string_view provider_id) {
  constexpr std::string_view kPrefix = "aws://";
  if (!provider_id.starts_with(kPrefix)) return "";
  const size_t slash = provider_id.rfind('/');
  std::string_view id = provider_id.substr(slash + 1);
  if (!id.starts_with("i-")) return "";
  return std::string(id);
}

}  // namespace dovetail::providers::aws::interruption
