#include "bench/scheduling/reference_plans.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dovetail/apis/core/pod_requests.h"
#include "dovetail/solver/lower_bound.h"

namespace dovetail::bench {
namespace {

using Vec = std::vector<int64_t>;

struct Candidate {
  const cloudprovider::InstanceType* type = nullptr;
  const cloudprovider::Offering* offering = nullptr;
  Vec allocatable;
  double lower_bound = 0;
};

// First-fit decreasing (pods already sorted largest first); returns the number of nodes.
int PackFirstFit(const std::vector<Vec>& pods, const Vec& capacity) {
  std::vector<Vec> free;
  size_t first_open = 0;  // bins before this cannot take even the smallest pod
  const Vec& smallest = pods.back();
  for (const Vec& p : pods) {
    bool placed = false;
    for (size_t b = first_open; b < free.size() && !placed; ++b) {
      Vec& f = free[b];
      bool fits = true;
      for (size_t r = 0; r < p.size() && fits; ++r) fits = p[r] <= f[r];
      if (!fits) continue;
      for (size_t r = 0; r < p.size(); ++r) f[r] -= p[r];
      placed = true;
    }
    if (!placed) {
      Vec f = capacity;
      for (size_t r = 0; r < p.size(); ++r) f[r] -= p[r];
      free.push_back(std::move(f));
    }
    while (first_open < free.size()) {
      bool any = true;
      for (size_t r = 0; r < smallest.size() && any; ++r) any = smallest[r] <= free[first_open][r];
      if (any) break;
      ++first_open;
    }
  }
  return static_cast<int>(free.size());
}

// Pods as vectors over the resources any of them requests.
struct Demand {
  std::map<std::string, size_t> dims;
  std::vector<Vec> pods;
  Vec total;
};

Demand ToDemand(const std::vector<const apis::core::Pod*>& pods) {
  Demand d;
  std::vector<ResourceList> requests;
  for (const auto* p : pods) {
    requests.push_back(apis::core::PodRequests(*p));
    for (const auto& [r, q] : requests.back()) d.dims.emplace(r, d.dims.size());
  }
  d.total.assign(d.dims.size(), 0);
  for (const auto& req : requests) {
    Vec v(d.dims.size(), 0);
    for (const auto& [r, q] : req) v[d.dims.at(r)] = q.MilliValue();
    for (size_t r = 0; r < v.size(); ++r) d.total[r] += v[r];
    d.pods.push_back(std::move(v));
  }
  return d;
}

Vec AllocatableVec(const cloudprovider::InstanceType& t,
                   const std::map<std::string, size_t>& dims) {
  Vec v(dims.size(), 0);
  for (const auto& [r, i] : dims) {
    auto it = t.Allocatable().find(r);
    v[i] = it == t.Allocatable().end() ? 0 : it->second.MilliValue();
  }
  return v;
}

const cloudprovider::Offering* CheapestAvailable(const cloudprovider::InstanceType& t) {
  const cloudprovider::Offering* best = nullptr;
  for (const auto& o : t.offerings()) {
    if (o.available && o.price > 0 && (best == nullptr || o.price < best->price)) best = &o;
  }
  return best;
}

bool Fits(const Vec& need, const Vec& free) {
  for (size_t r = 0; r < need.size(); ++r) {
    if (need[r] > free[r]) return false;
  }
  return true;
}

}  // namespace

std::optional<SingleTypePlan> BestSingleTypePlan(
    const std::vector<const apis::core::Pod*>& pods,
    const std::vector<cloudprovider::InstanceTypePtr>& types, int candidates) {
  if (pods.empty()) return SingleTypePlan{};
  const Demand d = ToDemand(pods);
  const auto& dims = d.dims;
  const auto& demand = d.pods;
  const auto& total = d.total;

  std::vector<Candidate> cands;
  for (const auto& t : types) {
    const cloudprovider::Offering* best = CheapestAvailable(*t);
    if (best == nullptr) continue;
    Candidate c{t.get(), best, AllocatableVec(*t, dims), 0};
    bool holds_all = true;
    double nodes = 0;
    for (size_t r = 0; r < dims.size(); ++r) {
      int64_t biggest = 0;
      for (const Vec& v : demand) biggest = std::max(biggest, v[r]);
      if (biggest > c.allocatable[r]) {
        holds_all = false;
        break;
      }
      if (total[r] > 0) {
        nodes = std::max(nodes,
                         static_cast<double>((total[r] + c.allocatable[r] - 1) / c.allocatable[r]));
      }
    }
    if (!holds_all) continue;
    c.lower_bound = nodes * best->price;
    cands.push_back(std::move(c));
  }
  if (cands.empty()) return std::nullopt;
  std::sort(cands.begin(), cands.end(),
            [](const Candidate& a, const Candidate& b) { return a.lower_bound < b.lower_bound; });
  if (cands.size() > static_cast<size_t>(candidates)) cands.resize(candidates);

  std::optional<SingleTypePlan> best;
  for (const Candidate& c : cands) {
    // Largest first by the share of the node a pod takes in its tightest dimension.
    std::vector<Vec> sorted = demand;
    auto share = [&](const Vec& v) {
      double s = 0;
      for (size_t r = 0; r < v.size(); ++r) {
        if (c.allocatable[r] > 0) {
          s = std::max(s, static_cast<double>(v[r]) / static_cast<double>(c.allocatable[r]));
        }
      }
      return s;
    };
    std::stable_sort(sorted.begin(), sorted.end(),
                     [&](const Vec& a, const Vec& b) { return share(a) > share(b); });
    const int nodes = PackFirstFit(sorted, c.allocatable);
    const double cost = nodes * c.offering->price;
    if (!best || cost < best->cost) {
      best =
          SingleTypePlan{c.type->name(), c.offering->capacity_type, c.offering->zone, nodes, cost};
    }
  }
  return best;
}

absl::StatusOr<LpGuidedResult> LpGuidedPlan(
    const std::vector<const apis::core::Pod*>& pods,
    const std::vector<cloudprovider::InstanceTypePtr>& types, int rounds) {
  LpGuidedResult out;
  if (pods.empty()) return out;
  const Demand d = ToDemand(pods);
  const size_t nd = d.dims.size();

  struct Column {
    double price;
    Vec allocatable;
    std::string name;
  };
  std::vector<Column> columns;
  for (const auto& t : types) {
    const cloudprovider::Offering* o = CheapestAvailable(*t);
    if (o != nullptr) {
      columns.push_back({o->price, AllocatableVec(*t, d.dims), o->capacity_type + " " + t->name()});
    }
  }
  // The LP over `remaining` pods: x_j per column.
  auto solve = [&](const std::vector<size_t>& remaining) -> absl::StatusOr<solver::LpResult> {
    solver::LpProblem lp;
    lp.dimensions = static_cast<int>(nd);
    for (const Column& c : columns) {
      lp.columns.push_back(
          {c.price, std::vector<double>(c.allocatable.begin(), c.allocatable.end())});
    }
    std::map<Vec, double> classes;
    for (size_t i : remaining) classes[d.pods[i]] += 1;
    for (const auto& [v, count] : classes) {
      solver::LpDemand dem;
      dem.count = count;
      dem.request.assign(v.begin(), v.end());
      for (size_t j = 0; j < columns.size(); ++j) {
        if (Fits(v, columns[j].allocatable)) dem.columns.push_back(static_cast<int>(j));
      }
      if (dem.columns.empty()) return absl::FailedPreconditionError("a pod fits no instance type");
      lp.demands.push_back(std::move(dem));
    }
    return solver::SolveCostLowerBound(lp);
  };

  struct Node {
    size_t column;
    Vec free;
    bool used = false;
  };
  std::vector<Node> nodes;
  // Largest pods first.
  std::vector<size_t> remaining(d.pods.size());
  for (size_t i = 0; i < remaining.size(); ++i) remaining[i] = i;
  std::stable_sort(remaining.begin(), remaining.end(),
                   [&](size_t a, size_t b) { return d.pods[a] > d.pods[b]; });
  for (int round = 0; round < rounds && !remaining.empty(); ++round) {
    absl::StatusOr<solver::LpResult> lp = solve(remaining);
    if (!lp.ok()) return lp.status();
    if (round == 0) {
      out.lp_bound = lp->bound;
      std::vector<std::pair<double, size_t>> spend;
      for (size_t j = 0; j < columns.size(); ++j) {
        if (lp->column_counts[j] > 1e-9)
          spend.emplace_back(lp->column_counts[j] * columns[j].price, j);
      }
      std::sort(spend.rbegin(), spend.rend());
      for (size_t k = 0; k < spend.size() && k < 3; ++k) {
        const size_t j = spend[k].second;
        absl::StrAppend(&out.lp_mix, k == 0 ? "" : ", ",
                        absl::StrFormat("%.1fx %s (%.0f%%)", lp->column_counts[j], columns[j].name,
                                        100 * spend[k].first / std::max(lp->bound, 1e-12)));
      }
      if (spend.size() > 3) absl::StrAppend(&out.lp_mix, ", +", spend.size() - 3, " more");
    }
    // Buy the whole nodes the LP buys; when it buys none whole, the one it buys most of.
    size_t opened = 0, most = 0;
    for (size_t j = 0; j < columns.size(); ++j) {
      const int n = static_cast<int>(std::floor(lp->column_counts[j] + 1e-6));
      for (int k = 0; k < n; ++k) nodes.push_back({j, columns[j].allocatable});
      opened += n;
      if (lp->column_counts[j] > lp->column_counts[most]) most = j;
    }
    if (opened == 0) nodes.push_back({most, columns[most].allocatable});
    // Each pod to the node it leaves with the least normalised slack.
    std::vector<size_t> left;
    for (size_t i : remaining) {
      const Vec& p = d.pods[i];
      double best_slack = std::numeric_limits<double>::infinity();
      Node* best = nullptr;
      for (Node& n : nodes) {
        if (!Fits(p, n.free)) continue;
        const Vec& cap = columns[n.column].allocatable;
        double slack = 0;
        for (size_t r = 0; r < nd; ++r) {
          if (cap[r] > 0) {
            slack += static_cast<double>(n.free[r] - p[r]) / static_cast<double>(cap[r]);
          }
        }
        if (slack < best_slack) {
          best_slack = slack;
          best = &n;
        }
      }
      if (best == nullptr) {
        left.push_back(i);
        continue;
      }
      for (size_t r = 0; r < nd; ++r) best->free[r] -= p[r];
      best->used = true;
    }
    remaining = std::move(left);
    ++out.rounds;
  }
  for (const Node& n : nodes) {
    if (!n.used) continue;
    out.cost += columns[n.column].price;
    ++out.nodes;
  }
  out.leftover_pods = static_cast<int>(remaining.size());
  if (!remaining.empty()) {
    std::vector<const apis::core::Pod*> rest_pods;
    for (size_t i : remaining) rest_pods.push_back(pods[i]);
    std::optional<SingleTypePlan> rest = BestSingleTypePlan(rest_pods, types);
    if (!rest) return absl::FailedPreconditionError("no type holds the leftover pods");
    out.cost += rest->cost;
    out.nodes += rest->nodes;
  }
  return out;
}

}  // namespace dovetail::bench
