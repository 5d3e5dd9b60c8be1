// Interruption messages: the bodies of the SQS messages EventBridge rules deliver to the
// interruption queue, parsed into typed values the interruption controller acts on
// (docs/aws.md). A message is recognised by its envelope (version "0", `source`, `detail-type`):
//
//   aws.ec2    "EC2 Spot Instance Interruption Warning"                kSpotInterruption
//   aws.ec2    "EC2 Instance Rebalance Recommendation"                 kRebalanceRecommendation
//   aws.health "AWS Health Event" (service EC2, scheduledChange)       kScheduledChange
//   aws.ec2    "EC2 Instance State-change Notification"
//                state stopping | stopped                              kInstanceStopped
//                state shutting-down | terminated                      kInstanceTerminated
//   aws.ec2    "EC2 Capacity Reservation Instance Interruption Warning"
//   kCapacityReservationInterruption
//
// Everything else never fails the caller: a well-formed JSON object that is not one of these
// events (another source or detail type, a state or Health category that is not acted on, an SNS
// envelope — upstream reads raw EventBridge events only) is kUnknown; a body that is not JSON, not
// an object, or a recognised event missing a required field (or with a field of the wrong type)
// is kInvalid. Both carry a `reason`; the controller deletes such messages and logs the reason.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"

namespace dovetail::providers::aws {

enum class InterruptionKind {
  kSpotInterruption,
  kRebalanceRecommendation,
  kScheduledChange,
  kInstanceStopped,
  kInstanceTerminated,
  kCapacityReservationInterruption,
  kUnknown,
  kInvalid,
};

// The message-type label upstream's metrics use ("spot_interrupted", "instance_stopped", ...;
// "unknown" and "invalid" for the rest).
std::string_view InterruptionKindName(InterruptionKind kind);

struct InterruptionMessage {
  InterruptionKind kind = InterruptionKind::kInvalid;
  std::string reason;  // why the message is kUnknown / kInvalid; empty otherwise

  // The EventBridge envelope (whatever was present, also for kUnknown).
  std::string id;
  std::string source;
  std::string detail_type;
  std::string account;
  std::string region;
  absl::Time time = absl::InfinitePast();  // InfinitePast: the event had no time
  std::vector<std::string> resources;

  // The EC2 instances the event is about (at least one for the acted-on kinds).
  std::vector<std::string> instance_ids;
  std::string instance_action;  // spot / capacity reservation: terminate | stop | hibernate
  std::string state;            // state change: the new state
  std::string event_type_code;  // Health: e.g. AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED
  std::string event_arn;        // Health
  // Health: the scheduled window, from detail.startTime / endTime (RFC 1123 as AWS Health writes
  // them, "Sat, 05 Dec 2026 15:00:00 GMT", or RFC 3339). InfinitePast when absent or unparseable:
  // the window is advisory, so a bad time never makes the message invalid.
  absl::Time start_time = absl::InfinitePast();
  absl::Time end_time = absl::InfinitePast();

  bool actionable() const {
    return kind != InterruptionKind::kUnknown && kind != InterruptionKind::kInvalid;
  }
};

// Parses one SQS message body. Never fails: see the kinds above.
InterruptionMessage ParseInterruptionMessage(std::string_view body);

}  // namespace dovetail::providers::aws
