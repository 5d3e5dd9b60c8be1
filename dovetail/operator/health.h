// The verdict of the operator's /healthz (operator.cc): what the health endpoint's handler
// gathers (the leader elector's status, each controller's oldest unit of work in progress) in,
// healthy or not with a one-line reason out. Pure: no clock, no I/O; the handler passes `now`.
//
// Unhealthy when
//  - this process believes it leads but its Lease has not been renewed for the lease duration
//    plus kLeaseRenewalGrace: the semantics of client-go's leader-election healthz adaptor (the
//    elector's renew loop gives up after renew_deadline, so a leader this late has a stuck elector
//    thread, and another replica may already lead);
//  - a unit of work (a reconcile, a provisioning or disruption pass, the handling of an
//    interruption message; controllers/controller.h, OldestWorkStart) has been running for more
//    than kStuckWorkLimit: a stuck loop that no retry will free.
// A kubelet liveness probe on /healthz then restarts the container. Readiness (/readyz) is not
// decided here: it is the cluster state's sync.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace dovetail::op {

// The tolerance kube-controller-manager gives client-go's leader-election healthz adaptor.
inline constexpr absl::Duration kLeaseRenewalGrace = absl::Seconds(20);
// The longest a unit of work may run before /healthz fails: well beyond a legitimate pass (a
// disruption pass stops its consolidation searches after 1 and 3 minutes, controllers/disruption/
// disruption.h; remote calls end at their clients' timeouts).
inline constexpr absl::Duration kStuckWorkLimit = absl::Minutes(15);

struct LeaseHealthInput {
  std::string lease_name;
  bool leading = false;
  absl::Time last_renewal = absl::InfinitePast();
  absl::Duration lease_duration;
};

struct WorkHealthInput {
  std::string controller;                  // Controller::Name()
  std::optional<absl::Time> oldest_start;  // Controller::OldestWorkStart()
};

struct HealthInput {
  absl::Time now;
  std::optional<LeaseHealthInput> lease;  // none without leader election
  std::vector<WorkHealthInput> work;
};

struct HealthVerdict {
  bool healthy = true;
  // "ok", or why not: one line naming the lease or the controller and how late it is. When
  // several checks fail, the lease first, then the controller with the oldest work.
  std::string reason = "ok";
};

HealthVerdict DecideHealth(const HealthInput& input);

}  // namespace dovetail::op
