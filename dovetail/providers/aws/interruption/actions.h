// What the interruption controller does for one parsed interruption message (docs/aws.md):
// a pure mapping from the message kind, the NodePool's opt-in and the time to actions, so that it
// can be tested without SQS or an API server.
//
// clang-format off
//   kind / rebalance policy replace first (with a Replacer)    else delete ICE  event
//   spot_interrupted        cordon, delete when ready;         yes         spot SpotInterrupted
//                           deadline event time + 2 min
//                           - drain_reserve, clamped to
//                           [now, now + 2 min - drain_reserve]
//   rebalance_recommendation                                                    SpotRebalance-
//     policy "" (upstream)  no                                 no          no   Recommendation
//     policy Taint          no (taint PreferNoSchedule)        no          no
//     policy Replace        taint; no cordon, keep until       no          no
//                           deadline now + drain-after
//   scheduled_change        cordon, delete when ready;         yes         no   InstanceUnhealthy
//                           deadline clamp(start - drain_
//                           reserve, now, now + scheduled_
//                           change_max_wait)
//   instance_stopped        no                                 yes         no   InstanceStopping
//   instance_terminated     no                                 yes         no   InstanceTerminating
//   capacity_reservation_   no                                 yes         no   CapacityReserv-
//     interrupted                                                               ationInterrupted
//   unknown / invalid       no                                 no          no   none (logged)
// clang-format on
//
// "Replace first": when the controller has a Replacer, it asks it to launch replacements for the
// node's pods and to delete the NodeClaim when they are Initialized or at the deadline; without
// one, or when the Replacer fails, `delete_node_claim` says whether to delete the NodeClaim at
// once (upstream's path). Instances already stopping or terminating are deleted at once: their
// pods are going anyway.
//
// Beyond upstream — the rebalance policy, the NodePool annotation `dovetail.sh/rebalance-policy`:
// "Taint" taints the Node `dovetail.sh/rebalance-recommended:PreferNoSchedule`, so new pods prefer
// other nodes while the spot instance is at elevated risk; "Replace" adds a pre-launched
// replacement: the node stays schedulable (PreferNoSchedule only) and is drained at
// now + `dovetail.sh/rebalance-drain-after` (a Go duration, default 10m) or as soon as a spot
// interruption for it follows (the Replacer then upgrades the held command). Any other value is
// upstream's behaviour (event only).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "dovetail/providers/aws/interruption_messages.h"

namespace dovetail::providers::aws::interruption {

inline constexpr std::string_view kRebalancePolicyAnnotation = "dovetail.sh/rebalance-policy";
inline constexpr std::string_view kRebalanceDrainAfterAnnotation =
    "dovetail.sh/rebalance-drain-after";
inline constexpr std::string_view kRebalancePolicyTaint = "Taint";
inline constexpr std::string_view kRebalancePolicyReplace = "Replace";
inline constexpr std::string_view kRebalanceTaintKey = "dovetail.sh/rebalance-recommended";

// How long a "Replace" rebalance pre-launch keeps the node before it is drained anyway. Ten
// minutes bounds the cost of running the old and the new instance side by side to ten minutes of
// one instance, while covering the usual lead of a rebalance recommendation over the interruption
// warning that may follow (AWS gives no guarantee; it is often minutes). After it the node leaves
// the at-risk instance on its own terms, onto a replacement that is already up.
inline constexpr absl::Duration kDefaultRebalanceDrainAfter = absl::Minutes(10);

// The event of a Health scheduled change, also of every instance status failure acted on
// (instance_status.h): upstream publishes one "Unhealthy" interruption event for all of them.
inline constexpr std::string_view kUnhealthyEventReason = "InstanceUnhealthy";
inline constexpr std::string_view kUnhealthyEventMessage =
    "An unhealthy warning was triggered for the instance";

// The spot interruption warning comes 2 minutes before EC2 reclaims the instance.
inline constexpr absl::Duration kSpotInterruptionNotice = absl::Minutes(2);

enum class RebalancePolicy { kNone, kTaint, kReplace };

// A NodePool's rebalance settings, from its annotations.
struct RebalanceSettings {
  RebalancePolicy policy = RebalancePolicy::kNone;
  absl::Duration drain_after = kDefaultRebalanceDrainAfter;
  bool operator==(const RebalanceSettings&) const = default;
};

// Reads dovetail.sh/rebalance-policy and dovetail.sh/rebalance-drain-after. An unknown policy
// means kNone; a drain-after that is not a non-negative Go duration means the default. Either
// problem is described in `*problem` (cleared when there is none) for the caller to log. Pure.
RebalanceSettings ParseRebalanceSettings(const std::map<std::string, std::string>& annotations,
                                         std::string* problem);

// What the time-dependent decisions need.
struct DecisionContext {
  absl::Time now = absl::UnixEpoch();
  // When the message reached the queue (SQS SentTimestamp); the event time of a spot warning
  // that has none. InfinitePast: unknown (now is used).
  absl::Time received = absl::InfinitePast();
  RebalanceSettings rebalance;  // of the node's NodePool
  // Time left for the drain between the deadline and the instance going away (ControllerOptions).
  absl::Duration drain_reserve = absl::Seconds(45);
  // Upper bound of a scheduled change's replace-first wait.
  absl::Duration scheduled_change_max_wait = absl::Minutes(10);
};

struct Action {
  // Delete the NodeClaim at once: always when `replace` is false, and as the fallback when there
  // is no Replacer or it fails.
  bool delete_node_claim = false;
  // Ask the Replacer first, with these fields of the ReplaceRequest.
  bool replace = false;
  bool replace_cordon = true;
  bool replace_delete_when_ready = true;
  absl::Time replace_deadline = absl::InfiniteFuture();
  bool mark_spot_unavailable = false;  // only when the NodeClaim's capacity type is spot
  bool taint_rebalance = false;        // PreferNoSchedule dovetail.sh/rebalance-recommended
  std::string event_reason;            // empty: no event; also the ReplaceRequest's reason
  std::string event_message;
  bool operator==(const Action&) const = default;
};

Action DecideAction(const InterruptionMessage& message, const DecisionContext& context);

// The instance id of an AWS provider id (aws:///<zone>/<instance-id>); "" for anything else.
std::string InstanceIdFromProviderId(std::string_view provider_id);

}  // namespace dovetail::providers::aws::interruption
