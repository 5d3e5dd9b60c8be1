#include "dovetail/solver/lower_bound.h"

#include <cmath>

#include "ClpSimplex.hpp"
#include "CoinPackedMatrix.hpp"
#include "absl/strings/str_cat.h"

namespace dovetail::solver {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

absl::Status CheckProblem(const LpProblem& p) {
  const int ncols = static_cast<int>(p.columns.size());
  for (size_t j = 0; j < p.columns.size(); ++j) {
    if (static_cast<int>(p.columns[j].capacity.size()) != p.dimensions) {
      return absl::InvalidArgumentError(absl::StrCat(
          "column ", j, " has ", p.columns[j].capacity.size(), " dimensions, want ", p.dimensions));
    }
  }
  for (size_t d = 0; d < p.demands.size(); ++d) {
    const LpDemand& dem = p.demands[d];
    if (static_cast<int>(dem.request.size()) != p.dimensions) {
      return absl::InvalidArgumentError(absl::StrCat("demand ", d, " has ", dem.request.size(),
                                                     " dimensions, want ", p.dimensions));
    }
    if (dem.count > 0 && dem.columns.empty()) {
      return absl::FailedPreconditionError(absl::StrCat("demand ", d, " has no column"));
    }
    for (int j : dem.columns) {
      if (j < 0 || j >= ncols) {
        return absl::InvalidArgumentError(absl::StrCat("demand ", d, " names column ", j));
      }
    }
  }
  for (size_t g = 0; g < p.distinct_groups.size(); ++g) {
    for (int j : p.distinct_groups[g].columns) {
      if (j < 0 || j >= ncols) {
        return absl::InvalidArgumentError(absl::StrCat("group ", g, " names column ", j));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LpResult> SolveCostLowerBound(const LpProblem& p) {
  if (absl::Status s = CheckProblem(p); !s.ok()) return s;
  const int ncols = static_cast<int>(p.columns.size());
  const int dims = p.dimensions;

  // Rows: [demand equalities][capacity rows: column j, resource r][distinct groups].
  const int demand_rows = static_cast<int>(p.demands.size());
  const int capacity_base = demand_rows;
  const int group_base = capacity_base + ncols * dims;
  const int nrows = group_base + static_cast<int>(p.distinct_groups.size());

  std::vector<double> row_lb(nrows), row_ub(nrows);
  for (int d = 0; d < demand_rows; ++d) row_lb[d] = row_ub[d] = p.demands[d].count;
  for (int i = capacity_base; i < group_base; ++i) {
    row_lb[i] = -kInf;
    row_ub[i] = 0;
  }
  for (size_t g = 0; g < p.distinct_groups.size(); ++g) {
    row_lb[group_base + g] = p.distinct_groups[g].count;
    row_ub[group_base + g] = kInf;
  }

  // Column-major matrix: x_j first, then y_dj.
  std::vector<std::vector<int>> group_rows_of_column(ncols);
  for (size_t g = 0; g < p.distinct_groups.size(); ++g) {
    for (int j : p.distinct_groups[g].columns) {
      group_rows_of_column[j].push_back(group_base + static_cast<int>(g));
    }
  }
  std::vector<CoinBigIndex> starts;
  std::vector<int> rows;
  std::vector<double> values, col_lb, col_ub, objective;
  auto begin_column = [&](double lb, double ub, double cost) {
    starts.push_back(static_cast<CoinBigIndex>(rows.size()));
    col_lb.push_back(lb);
    col_ub.push_back(ub);
    objective.push_back(cost);
  };
  for (int j = 0; j < ncols; ++j) {
    const LpColumn& c = p.columns[j];
    begin_column(0, std::isinf(c.max_count) ? COIN_DBL_MAX : c.max_count, c.price);
    for (int r = 0; r < dims; ++r) {
      if (c.capacity[r] != 0) {
        rows.push_back(capacity_base + j * dims + r);
        values.push_back(-c.capacity[r]);
      }
    }
    for (int row : group_rows_of_column[j]) {
      rows.push_back(row);
      values.push_back(1.0);
    }
  }
  for (int d = 0; d < demand_rows; ++d) {
    const LpDemand& dem = p.demands[d];
    for (int j : dem.columns) {
      begin_column(0, COIN_DBL_MAX, 0);
      rows.push_back(d);
      values.push_back(1.0);
      for (int r = 0; r < dims; ++r) {
        if (dem.request[r] != 0) {
          rows.push_back(capacity_base + j * dims + r);
          values.push_back(dem.request[r]);
        }
      }
    }
  }
  starts.push_back(static_cast<CoinBigIndex>(rows.size()));
  const int total_cols = static_cast<int>(col_lb.size());

  for (double& v : row_lb) {
    if (std::isinf(v)) v = -COIN_DBL_MAX;
  }
  for (double& v : row_ub) {
    if (std::isinf(v)) v = COIN_DBL_MAX;
  }

  ClpSimplex model;
  model.setLogLevel(0);
  model.loadProblem(total_cols, nrows, starts.data(), rows.data(), values.data(), col_lb.data(),
                    col_ub.data(), objective.data(), row_lb.data(), row_ub.data());
  model.setOptimizationDirection(1);
  model.dual();
  if (!model.isProvenOptimal()) {
    // Dual can stall on degenerate problems; primal from scratch is the fallback.
    model.primal();
  }
  if (model.isProvenPrimalInfeasible()) {
    return absl::FailedPreconditionError("the pods cannot be covered by the offered columns");
  }
  if (!model.isProvenOptimal()) {
    return absl::InternalError(
        absl::StrCat("Clp did not reach an optimum (status ", model.status(), ")"));
  }
  LpResult result;
  result.bound = model.objectiveValue();
  const double* x = model.primalColumnSolution();
  result.column_counts.assign(x, x + ncols);
  return result;
}

}  // namespace dovetail::solver
