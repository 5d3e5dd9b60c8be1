// A provable lower bound on the cost of launching capacity for a set of pods: the LP relaxation of
// assigning pods (fractionally) to nodes (fractionally counted) of each launchable offering.
//
//   minimise   sum_j price_j * x_j
//   subject to sum_{j in cols(d)} y_dj           = count_d          for every demand class d
//              sum_d request_dr * y_dj           <= capacity_jr*x_j for every column j, resource r
//              sum_{j in cols(g)} x_j            >= count_g         for every distinct-node group g
//              0 <= x_j <= max_count_j, y >= 0
//
// Every integral plan (pods on whole nodes) is feasible for this LP, so its optimum is a lower
// bound on any plan's cost. A column is one launchable (pool, instance type, offering) with its
// allocatable after DaemonSet overhead, or the free room of an existing node at price 0 with
// max_count 1. A distinct-node group holds pods that each need a node of their own (hostname
// anti-affinity). Solved with COIN-OR Clp. Pure function; thread-safe.
#pragma once

#include <limits>
#include <vector>

#include "absl/status/statusor.h"

namespace dovetail::solver {

struct LpColumn {
  double price = 0;              // per hour
  std::vector<double> capacity;  // one entry per resource dimension
  double max_count = std::numeric_limits<double>::infinity();
};

struct LpDemand {
  double count = 0;             // pods in this class
  std::vector<double> request;  // per pod, one entry per resource dimension
  std::vector<int> columns;     // columns able to host one of these pods
};

struct LpDistinctGroup {
  double count = 0;
  std::vector<int> columns;
};

struct LpProblem {
  int dimensions = 0;
  std::vector<LpColumn> columns;
  std::vector<LpDemand> demands;
  std::vector<LpDistinctGroup> distinct_groups;
};

struct LpResult {
  double bound = 0;                   // optimal LP objective
  std::vector<double> column_counts;  // x_j at the optimum (fractional)
};

// Errors: InvalidArgument for inconsistent dimensions or column indices; FailedPrecondition when a
// demand class has no column (the bound is then undefined); Internal when Clp fails.
absl::StatusOr<LpResult> SolveCostLowerBound(const LpProblem& problem);

}  // namespace dovetail::solver
