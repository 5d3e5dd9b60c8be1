// NodePool disruption budgets (spec.disruption.budgets): how many of a NodePool's nodes voluntary
// disruption may take at once, for one reason (Empty, Underutilized, Drifted), at one instant.
// Semantics as upstream's (docs/disruption.md, "Budgets"):
//  - `nodes` is an integer or a percentage of the NodePool's nodes, rounded up;
//  - a budget with `schedule` + `duration` is active from each cron activation for `duration`
//    (active iff the first activation after now - duration is not after now); without them it is
//    always active; an inactive budget does not limit;
//  - a budget limits the reasons it lists (all reasons when it lists none);
//  - the allowed count is the minimum over active budgets that apply; none: unlimited;
//  - unset budgets mean [{nodes: "10%"}], an empty list means unlimited;
//  - an invalid budget (unparseable nodes, cron or duration; schedule without duration) allows 0:
//    it fails closed;
//  - nodes already disrupting (NotReady or being deleted) consume budget.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "absl/time/time.h"
#include "dovetail/apis/v1/nodepool.h"

namespace dovetail::controllers::disruption {

inline constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

// Allowed disruptions for `reason` among the NodePool's `total_nodes` (its managed, initialized
// nodes) at `now`, before subtracting nodes already disrupting. kUnlimited when no active budget
// applies. When a budget is invalid, returns 0 and describes it in `*error` (if not null).
int64_t AllowedDisruptions(const apis::v1::NodePool& node_pool, apis::v1::DisruptionReason reason,
                           int64_t total_nodes, absl::Time now, std::string* error = nullptr);

// max(0, allowed - disrupting): what a disruption pass may still start.
int64_t RemainingDisruptions(const apis::v1::NodePool& node_pool, apis::v1::DisruptionReason reason,
                             int64_t total_nodes, int64_t disrupting, absl::Time now,
                             std::string* error = nullptr);

}  // namespace dovetail::controllers::disruption
