// Reference plans for unconstrained pods: simple, independent packers whose costs are achievable
// (upper bounds on the optimum). Next to the solver's plan and its LP lower bound they tell a loose
// bound from a poor packing: if a naive plan is cheaper than the solver's, the solver left that
// much money on the table; if it is close to the bound, the bound is tight.
//
//   BestSingleTypePlan  every node is the same instance type at that type's cheapest available
//                       offering; pods packed first-fit decreasing. The best of the `candidates`
//                       types with the lowest per-type lower bound (nodes needed by the most
//                       constrained resource x price).
//   LpGuidedPlan        iterated LP rounding: solves the same kind of LP as the solver's bound
//                       (solver/lower_bound.h; one column per type at its cheapest offering) for
//                       the pods still unplaced, buys floor(x_j) nodes of every type (or one node
//                       of the type it buys most of, when it buys no whole node), places the pods
//                       largest first by best fit into every node bought so far, and repeats for
//                       up to `rounds` rounds; pods still left go to BestSingleTypePlan. Nodes that
//                       stay empty are not paid for.
//
// Both ignore every constraint but resources (requests from apis::core::PodRequests, `pods: 1`
// included, against InstanceType::Allocatable()); use them only for pods without selectors,
// affinities, spread constraints or tolerations, and no DaemonSets. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/cloudprovider/catalog.h"

namespace dovetail::bench {

struct SingleTypePlan {
  std::string instance_type;
  std::string capacity_type;
  std::string zone;
  int nodes = 0;
  double cost = 0;  // per hour
};

// nullopt when no type can hold every pod.
std::optional<SingleTypePlan> BestSingleTypePlan(
    const std::vector<const apis::core::Pod*>& pods,
    const std::vector<cloudprovider::InstanceTypePtr>& types, int candidates = 12);

struct LpGuidedResult {
  double lp_bound = 0;  // the LP optimum (a lower bound, for cross-checking the solver's)
  double cost = 0;      // the rounded plan, per hour
  int nodes = 0;
  std::string lp_mix;  // the first LP's purchases by spend, e.g. "812.3x spot t4g.small (40%)"
  int rounds = 0;
  int leftover_pods = 0;  // pods left to BestSingleTypePlan after the last round
};

// Errors: FailedPrecondition when a pod fits no type; the LP's errors (lower_bound.h).
absl::StatusOr<LpGuidedResult> LpGuidedPlan(
    const std::vector<const apis::core::Pod*>& pods,
    const std::vector<cloudprovider::InstanceTypePtr>& types, int rounds = 8);

}  // namespace dovetail::bench
