#include "dovetail/providers/aws/interruption/actions.h"

#include <algorithm>

#include "dovetail/common/absl_compat.h"
#include "dovetail/common/duration.h"

namespace dovetail::providers::aws::interruption {

RebalanceSettings ParseRebalanceSettings(const std::map<std::string, std::string>& annotations,
                                         std::string* problem) {
  RebalanceSettings s;
  std::string issues;
  if (auto it = annotations.find(std::string(kRebalancePolicyAnnotation));
      it != annotations.end()) {
    if (it->second == kRebalancePolicyTaint) {
      s.policy = RebalancePolicy::kTaint;
    } else if (it->second == kRebalancePolicyReplace) {
      s.policy = RebalancePolicy::kReplace;
    } else if (!it->second.empty()) {
      CatTo(&issues, kRebalancePolicyAnnotation, " \"", it->second,
            "\" is neither \"\", \"Taint\" nor \"Replace\"; using \"\" (event only)");
    }
  }
  if (auto it = annotations.find(std::string(kRebalanceDrainAfterAnnotation));
      it != annotations.end()) {
    absl::StatusOr<absl::Duration> d = ParseGoDuration(it->second);
    if (d.ok() && *d >= absl::ZeroDuration()) {
      s.drain_after = *d;
    } else {
      if (!issues.empty()) issues += "; ";
      CatTo(&issues, kRebalanceDrainAfterAnnotation, " \"", it->second, "\" is ",
            d.ok() ? "negative" : "not a Go duration (e.g. 10m, 1h30m)", "; using ",
            FormatGoDuration(kDefaultRebalanceDrainAfter));
    }
  }
  if (problem != nullptr) *problem = std::move(issues);
  return s;
}

Action DecideAction(const InterruptionMessage& message, const DecisionContext& context) {
  Action a;
  const absl::Time now = context.now;
  switch (message.kind) {
    case InterruptionKind::kSpotInterruption: {
      a.delete_node_claim = true;
      a.mark_spot_unavailable = true;
      a.replace = true;
      absl::Time event = message.time;
      if (event == absl::InfinitePast()) event = context.received;
      if (event == absl::InfinitePast()) event = now;
      // Never in the past; never later than a warning received now would allow (an event time
      // ahead of our clock is skew, not extra notice).
      const absl::Duration lead = kSpotInterruptionNotice - context.drain_reserve;
      a.replace_deadline = std::clamp(event + lead, now, std::max(now, now + lead));
      a.event_reason = "SpotInterrupted";
      a.event_message = "Spot interruption warning was triggered";
      break;
    }
    case InterruptionKind::kRebalanceRecommendation:
      a.event_reason = "SpotRebalanceRecommendation";
      a.event_message = "Spot rebalance recommendation was triggered";
      a.taint_rebalance = context.rebalance.policy != RebalancePolicy::kNone;
      if (context.rebalance.policy == RebalancePolicy::kReplace) {
        a.replace = true;
        a.replace_cordon = false;
        a.replace_delete_when_ready = false;
        a.replace_deadline = now + context.rebalance.drain_after;
      }
      break;
    case InterruptionKind::kScheduledChange: {
      a.delete_node_claim = true;
      a.replace = true;
      absl::Time deadline = now + context.scheduled_change_max_wait;
      if (message.start_time != absl::InfinitePast()) {
        deadline = std::min(deadline, message.start_time - context.drain_reserve);
      }
      a.replace_deadline = std::max(now, deadline);
      a.event_reason = kUnhealthyEventReason;
      a.event_message = kUnhealthyEventMessage;
      break;
    }
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
