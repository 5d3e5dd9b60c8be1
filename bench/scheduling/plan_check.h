// CheckPlan: an independent re-check of a solver plan for the benchmark workloads (a benchmark
// that times an invalid plan measures nothing). It reads only the input pods and the plan's
// output (each NodeClaim's priced instance type, zone and pods) and checks:
//   - every input pod appears exactly once (on a NodeClaim, an existing node, or unschedulable);
//   - each NodeClaim's pods fit the allocatable of the instance type it is priced with (every
//     resource apis::core::PodRequests gives, `pods: 1` included);
//   - required hostname pod anti-affinity: no two pods on a NodeClaim where one's term selects
//     the other;
//   - DoNotSchedule topology spread on hostname: at most maxSkew selected pods per NodeClaim (new
//     nodes can always be empty, so the global minimum is 0);
//   - DoNotSchedule topology spread on zone: max - min of selected pods over `zones` <= maxSkew;
//   - required zonal pod self-affinity: all pods of one selector land in one zone.
// It covers the constraint shapes workloads.h generates (match_labels selectors, same namespace),
// not the general case; the solver's own property tests do that. Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/solver/solver.h"

namespace dovetail::bench {

// Errors: FailedPrecondition naming the first violated rule and the pods or NodeClaim involved.
absl::Status CheckPlan(const std::vector<const apis::core::Pod*>& pods, const solver::Plan& plan,
                       const std::vector<std::string>& zones);

}  // namespace dovetail::bench
