// What the interruption controller does for one parsed interruption message (reference §2.14.8):
// a pure mapping from the message kind (and the NodePool's opt-in) to actions, so that it can be
// tested without SQS or an API server.
//
//   kind                               delete NodeClaim  mark spot ICE  event
//   spot_interrupted                   yes               yes (spot)     SpotInterrupted
//   rebalance_recommendation           no                no             SpotRebalanceRecommendation
//   scheduled_change                   yes               no             InstanceUnhealthy
//   instance_stopped                   yes               no             InstanceStopping
//   instance_terminated                yes               no             InstanceTerminating
//   capacity_reservation_interrupted   yes               no CapacityReservationInterrupted unknown
//   / invalid                  no                no             none (logged, deleted)
//
// Beyond upstream: a rebalance recommendation for a node whose NodePool carries the annotation
// `dovetail.sh/rebalance-policy: Taint` also taints the Node `dovetail.sh/rebalance-recommended`
// with effect PreferNoSchedule, so new pods prefer other nodes while the spot instance is at
// elevated risk. Nothing else changes (no replacement is launched ahead of time).
#pragma once

#include <string>
#include <string_view>

#include "dovetail/providers/aws/interruption_messages.h"

namespace dovetail::providers::aws::interruption {

inline constexpr std::string_view kRebalancePolicyAnnotation = "dovetail.sh/rebalance-policy";
inline constexpr std::string_view kRebalancePolicyTaint = "Taint";
inline constexpr std::string_view kRebalanceTaintKey = "dovetail.sh/rebalance-recommended";

struct Action {
  bool delete_node_claim = false;
  bool mark_spot_unavailable = false;  // only when the NodeClaim's capacity type is spot
  bool taint_rebalance = false;        // PreferNoSchedule dovetail.sh/rebalance-recommended
  std::string event_reason;            // empty: no event
  std::string event_message;
  bool operator==(const Action&) const = default;
};

// `rebalance_policy`: the value of the NodePool's dovetail.sh/rebalance-policy annotation ("" when
// absent). Pure.
Action DecideAction(const InterruptionMessage& message, std::string_view rebalance_policy);

// The instance id of an AWS provider id (aws:///<zone>/<instance-id>); "" for anything else.
std::string InstanceIdFromProviderId(std::string_view provider_id);

}  // namespace dovetail::providers::aws::interruption
