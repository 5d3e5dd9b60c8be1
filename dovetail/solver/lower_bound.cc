#include "dovetail/solver/lower_bound.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

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

// True when s copies of launchable column k hold launchable column j's capacity for at most j's
// price, with s = max_r cap_j[r] / cap_k[r] (at least 1 when j counts towards a distinct group).
bool Covers(const LpColumn& k, const LpColumn& j, bool j_in_group) {
  double s = j_in_group ? 1.0 : 0.0;
  for (size_t r = 0; r < j.capacity.size(); ++r) {
    if (j.capacity[r] <= 0) continue;
    if (k.capacity[r] <= 0) return false;
    s = std::max(s, j.capacity[r] / k.capacity[r]);
  }
  return s * k.price <= j.price;
}

// Launchable columns (unbounded count) that another launchable column makes redundant. k makes j
// redundant when every row j appears in (demand and distinct-group rows) k appears in too and k
// covers j (Covers): replacing x_j by s * x_k and moving j's pods to k keeps every row satisfied
// at no higher cost, so dropping j leaves the optimum unchanged. Catalogs hold many types whose
// price per resource is beaten by a bigger or newer type; the LP only needs the rest. Columns are
// first compared within groups of identical rows, then the survivors across groups.
std::vector<bool> RedundantColumns(const LpProblem& p) {
  const size_t ncols = p.columns.size();
  const size_t nrows = p.demands.size() + p.distinct_groups.size();
  const size_t words = (nrows + 63) / 64;
  std::vector<uint64_t> member(ncols * words, 0);
  std::vector<bool> in_group(ncols, false);
  auto mark = [&](int j, size_t row) { member[j * words + row / 64] |= uint64_t{1} << (row % 64); };
  for (size_t d = 0; d < p.demands.size(); ++d) {
    for (int j : p.demands[d].columns) mark(j, d);
  }
  for (size_t g = 0; g < p.distinct_groups.size(); ++g) {
    for (int j : p.distinct_groups[g].columns) {
      mark(j, p.demands.size() + g);
      in_group[j] = true;
    }
  }
  auto rows_of = [&](size_t j) { return member.data() + j * words; };
  auto includes = [&](size_t k, size_t j) {  // rows(j) is a subset of rows(k)
    const uint64_t* a = rows_of(k);
    const uint64_t* b = rows_of(j);
    for (size_t w = 0; w < words; ++w) {
      if ((b[w] & ~a[w]) != 0) return false;
    }
    return true;
  };
  std::vector<bool> redundant(ncols, false);
  std::map<std::vector<uint64_t>, std::vector<size_t>> by_rows;
  for (size_t j = 0; j < ncols; ++j) {
    if (!std::isinf(p.columns[j].max_count)) continue;
    by_rows[std::vector<uint64_t>(rows_of(j), rows_of(j) + words)].push_back(j);
  }
  std::vector<size_t> survivors;
  for (const auto& [rows, cols] : by_rows) {
    for (size_t j : cols) {
      for (size_t k : cols) {
        if (k != j && !redundant[k] && Covers(p.columns[k], p.columns[j], in_group[j])) {
          redundant[j] = true;
          break;
        }
      }
    }
    for (size_t j : cols) {
      if (!redundant[j]) survivors.push_back(j);
    }
  }
  for (size_t j : survivors) {
    for (size_t k : survivors) {
      if (k != j && !redundant[k] && Covers(p.columns[k], p.columns[j], in_group[j]) &&
          includes(k, j)) {
        redundant[j] = true;
        break;
      }
    }
  }
  return redundant;
}

// `problem` without its redundant columns; `original[j]` is the index in `problem` of kept
// column j (the dropped ones get x_j = 0 in the result).
LpProblem WithoutRedundantColumns(const LpProblem& problem, std::vector<int>* original) {
  const std::vector<bool> redundant = RedundantColumns(problem);
  std::vector<int> kept_index(problem.columns.size(), -1);
  LpProblem p{.dimensions = problem.dimensions};
  for (size_t j = 0; j < problem.columns.size(); ++j) {
    if (redundant[j]) continue;
    kept_index[j] = static_cast<int>(p.columns.size());
    original->push_back(static_cast<int>(j));
    p.columns.push_back(problem.columns[j]);
  }
  auto remap = [&](const std::vector<int>& cols) {
    std::vector<int> out;
    for (int j : cols) {
      if (kept_index[j] >= 0) out.push_back(kept_index[j]);
    }
    return out;
  };
  for (const LpDemand& d : problem.demands) {
    p.demands.push_back({d.count, d.request, remap(d.columns)});
  }
  for (const LpDistinctGroup& g : problem.distinct_groups) {
    p.distinct_groups.push_back({g.count, remap(g.columns)});
  }
  return p;
}

// The LP in Clp's column-major form. Rows: [demand equalities][capacity rows: column j, resource
// r][distinct groups]; columns: x_j first, then y_dj. Infinite bounds are COIN_DBL_MAX.
struct ClpForm {
  int nrows = 0;
  std::vector<CoinBigIndex> starts;
  std::vector<int> rows;
  std::vector<double> values, col_lb, col_ub, objective, row_lb, row_ub;
};

ClpForm ToClpForm(const LpProblem& p) {
  ClpForm f;
  const int ncols = static_cast<int>(p.columns.size());
  const int dims = p.dimensions;
  const int demand_rows = static_cast<int>(p.demands.size());
  const int capacity_base = demand_rows;
  const int group_base = capacity_base + ncols * dims;
  f.nrows = group_base + static_cast<int>(p.distinct_groups.size());

  f.row_lb.assign(f.nrows, 0);
  f.row_ub.assign(f.nrows, 0);
  for (int d = 0; d < demand_rows; ++d) f.row_lb[d] = f.row_ub[d] = p.demands[d].count;
  for (int i = capacity_base; i < group_base; ++i) {
    f.row_lb[i] = -kInf;
    f.row_ub[i] = 0;
  }
  for (size_t g = 0; g < p.distinct_groups.size(); ++g) {
    f.row_lb[group_base + g] = p.distinct_groups[g].count;
    f.row_ub[group_base + g] = kInf;
  }

  std::vector<std::vector<int>> group_rows_of_column(ncols);
  for (size_t g = 0; g < p.distinct_groups.size(); ++g) {
    for (int j : p.distinct_groups[g].columns) {
      group_rows_of_column[j].push_back(group_base + static_cast<int>(g));
    }
  }
  auto begin_column = [&](double lb, double ub, double cost) {
    f.starts.push_back(static_cast<CoinBigIndex>(f.rows.size()));
    f.col_lb.push_back(lb);
    f.col_ub.push_back(ub);
    f.objective.push_back(cost);
  };
  for (int j = 0; j < ncols; ++j) {
    const LpColumn& c = p.columns[j];
    begin_column(0, std::isinf(c.max_count) ? COIN_DBL_MAX : c.max_count, c.price);
    for (int r = 0; r < dims; ++r) {
      if (c.capacity[r] != 0) {
        f.rows.push_back(capacity_base + j * dims + r);
        f.values.push_back(-c.capacity[r]);
      }
    }
    for (int row : group_rows_of_column[j]) {
      f.rows.push_back(row);
      f.values.push_back(1.0);
    }
  }
  for (int d = 0; d < demand_rows; ++d) {
    const LpDemand& dem = p.demands[d];
    for (int j : dem.columns) {
      begin_column(0, COIN_DBL_MAX, 0);
      f.rows.push_back(d);
      f.values.push_back(1.0);
      for (int r = 0; r < dims; ++r) {
        if (dem.request[r] != 0) {
          f.rows.push_back(capacity_base + j * dims + r);
          f.values.push_back(dem.request[r]);
        }
      }
    }
  }
  f.starts.push_back(static_cast<CoinBigIndex>(f.rows.size()));
  for (double& v : f.row_lb) {
    if (std::isinf(v)) v = -COIN_DBL_MAX;
  }
  for (double& v : f.row_ub) {
    if (std::isinf(v)) v = COIN_DBL_MAX;
  }
  return f;
}

}  // namespace

absl::StatusOr<LpResult> SolveCostLowerBound(const LpProblem& problem) {
  if (absl::Status s = CheckProblem(problem); !s.ok()) return s;
  std::vector<int> original;
  const LpProblem p = WithoutRedundantColumns(problem, &original);
  const int ncols = static_cast<int>(p.columns.size());
  ClpForm f = ToClpForm(p);
  const int total_cols = static_cast<int>(f.col_lb.size());

  ClpSimplex model;
  model.setLogLevel(0);
  model.loadProblem(total_cols, f.nrows, f.starts.data(), f.rows.data(), f.values.data(),
                    f.col_lb.data(), f.col_ub.data(), f.objective.data(), f.row_lb.data(),
                    f.row_ub.data());
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
  result.column_counts.assign(problem.columns.size(), 0.0);
  for (int j = 0; j < ncols; ++j) result.column_counts[original[j]] = x[j];
  return result;
}

}  // namespace dovetail::solver
