// What the instance status controller (instance_status_controller.h) decides from EC2's
// DescribeInstanceStatus replies, as pure functions of the parsed statuses and the time, so that
// they can be tested without EC2 or an API server. Facts from upstream's instance status provider
// (karpenter-provider-aws v1.14.1, pkg/providers/instancestatus) and its controller
// (pkg/controllers/interruption/instancestatus_controller.go).
//
// clang-format off
//   EC2 part             category        counts when                      kind (metric reason)  action
//   instanceStatus       InstanceStatus  failed for >= 120 s              instance_status       forceful termination
//   systemStatus         SystemStatus    failed for >= 120 s              system_status         forceful termination
//   attachedEbsStatus    EBSStatus       failed for >= 120 s              none: skipped          none
//   eventsSet            EventStatus     always (a scheduled event)       event_status          delete (graceful)
// clang-format on
//
// "Forceful termination": the NodeClaim is annotated karpenter.sh/nodeclaim-termination-timestamp
// = now (so the termination controller stops waiting for a graceful drain: the instance is broken)
// and deleted. An instance is unhealthy when at least one of its checks counts; checks that passed,
// are initializing or lack data never count. EBS failures are reported but not acted on: upstream
// cannot yet tell a root-volume failure from a pod volume's.
//
// Free functions and a value type; thread-compatible.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "dovetail/providers/aws/ec2_client.h"
#include "dovetail/providers/aws/interruption/actions.h"
#include "dovetail/providers/aws/query_protocol.h"

namespace dovetail::providers::aws::interruption {

// How often the controller polls (upstream's InstanceStatusInterval).
inline constexpr absl::Duration kInstanceStatusInterval = absl::Minutes(1);
// How long a status check must have failed before it counts (upstream's UnhealthyThreshold).
inline constexpr absl::Duration kUnhealthyThreshold = absl::Seconds(120);

enum class StatusCategory { kInstanceStatus, kSystemStatus, kEbsStatus, kEventStatus };

// The EC2-side names, also the `category` label of
// karpenter_interruption_instance_status_unhealthy_total: "InstanceStatus", "SystemStatus",
// "EBSStatus", "EventStatus".
std::string_view StatusCategoryName(StatusCategory category);

// What a category of failure does to the NodeClaims of its instance.
struct CategoryAction {
  bool act = false;  // false: nothing (EBSStatus)
  // The message kind: karpenter_nodeclaims_disrupted_total's reason.
  std::string_view kind;
  // Annotate the termination timestamp before deleting (InstanceStatus, SystemStatus).
  bool forceful = false;
  bool operator==(const CategoryAction&) const = default;
};
CategoryAction ActionForCategory(StatusCategory category);

// Every acted-on category records actions.h's kUnhealthyEventReason / kUnhealthyEventMessage
// (InstanceUnhealthy) on the NodeClaim and its Node, as a Health scheduled change does.

// The filter sets of the three DescribeInstanceStatus calls of one poll. EC2 ANDs filters of
// different names, so the OR of "instance check impaired", "system check impaired" and "one of
// these scheduled events" takes a call each.
std::vector<std::vector<Filter>> InstanceStatusFilterSets();

struct StatusDetail {
  StatusCategory category = StatusCategory::kInstanceStatus;
  std::string name;    // the check's name (reachability) or the event's code
  std::string status;  // "failed" for every event
  absl::Time impaired_since = absl::InfinitePast();  // events: now
  bool operator==(const StatusDetail&) const = default;
};

struct UnhealthyInstance {
  std::string instance_id;
  std::vector<StatusDetail> details;                 // only those that count; never empty
  absl::Time impaired_since = absl::InfinitePast();  // the earliest of the details'
  // The distinct categories of `details`, in the order of the enum.
  std::vector<StatusCategory> Categories() const;
  bool operator==(const UnhealthyInstance&) const = default;
};

// The unhealthy instances among `statuses` (the replies of the calls of one poll, concatenated;
// an instance that appears more than once counts by its first appearance), in order.
std::vector<UnhealthyInstance> UnhealthyInstances(const std::vector<Ec2InstanceStatus>& statuses,
                                                  absl::Time now);

// Which (instance, category) pairs have been reported, so that the counter counts each once
// while it stays reported, and again if it comes back after a poll that did not report it.
class UnhealthySeen {
 public:
  using Key = std::pair<std::string, StatusCategory>;

  // One poll's reported keys: returns those that the previous poll did not report (to count),
  // and remembers exactly `reported` (keys not reported are forgotten).
  std::set<Key> Poll(std::set<Key> reported);

  size_t size() const { return seen_.size(); }

 private:
  std::set<Key> seen_;
};

}  // namespace dovetail::providers::aws::interruption
