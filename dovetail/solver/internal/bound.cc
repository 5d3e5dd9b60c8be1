// SolverImpl::ComputeLowerBound: the LP lower bound (solver/lower_bound.h) of a plan's question.
#include <algorithm>
#include <map>
#include <utility>

#include "dovetail/solver/internal/solver_impl.h"
#include "dovetail/solver/lower_bound.h"
#include "dovetail/solver/type_set.h"

namespace dovetail::solver::internal {

namespace {

std::vector<double> ToDouble(const Amounts& a) { return std::vector<double>(a.begin(), a.end()); }

}  // namespace

std::vector<std::pair<int, double>> SolverImpl::BoundDemands(
    std::span<const Pod* const> placed, std::vector<std::vector<int>>* lp_variants) {
  // Demands: pods that were placed, by class. A bound must hold for every plan the constraints
  // allow, so each class is taken at its most relaxed: preferences dropped, PreferNoSchedule
  // tolerated, and any of its required node-affinity terms (they are ORed).
  absl::flat_hash_map<int, double> count_by_class;
  absl::flat_hash_map<const Pod*, int> class_of;
  for (size_t i = 0; i < class_pods_.size(); ++i) class_of.emplace(class_pods_[i], pod_class_[i]);
  for (const Pod* pod : placed) count_by_class[class_of.at(pod)] += 1;
  std::vector<std::pair<int, double>> demands(count_by_class.begin(), count_by_class.end());
  std::sort(demands.begin(), demands.end());
  const size_t nd = demands.size();
  lp_variants->assign(nd, {});
  for (size_t di = 0; di < nd; ++di) {
    const PodClass& c = classes_[demands[di].first];
    const int terms = std::max<int>(1, static_cast<int>(c.required_terms.size()));
    for (int k = 0; k < terms; ++k) {
      RelaxState relaxed;
      relaxed.required_term = k;
      relaxed.pref_affinity_dropped = static_cast<int>(c.preferred_affinity.size());
      relaxed.pref_anti_dropped = static_cast<int>(c.preferred_anti.size());
      relaxed.pref_node_dropped = static_cast<int>(c.preferred_node_terms.size());
      relaxed.spread_anyway_dropped = static_cast<int>(c.spread_anyway.size());
      relaxed.tolerate_prefer_no_schedule = true;
      (*lp_variants)[di].push_back(VariantFor(demands[di].first, relaxed));
    }
  }
  return demands;
}

std::vector<std::vector<int>> SolverImpl::AddLaunchColumns(
    const std::vector<std::vector<int>>& lp_variants, LpProblem* lp) {
  const size_t nd = lp_variants.size();
  // Which offerings each demand may use on each pool, and which (pool, type) it fits.
  std::vector<std::vector<PairMask>> allowed(nd, std::vector<PairMask>(pools_.size()));
  // (pool, type) -> demands that fit it.
  absl::flat_hash_map<std::pair<int, int>, std::vector<int>> fitting;
  for (size_t di = 0; di < nd; ++di) {
    for (size_t pi = 0; pi < pools_.size(); ++pi) {
      TypeSet types(types_.size());
      for (int vi : lp_variants[di]) {
        const PoolFit& fit = FitForPool(vi, static_cast<int>(pi));
        if (!fit.status.ok()) continue;
        Requirements reqs = pools_[pi].t->requirements;
        reqs.Intersect(variants_[vi].reqs);
        allowed[di][pi] |= pairs_.Allowed(reqs);
        types |= fit.types;
      }
      types.ForEach([&](size_t t) {
        fitting[{static_cast<int>(pi), static_cast<int>(t)}].push_back(static_cast<int>(di));
      });
    }
  }
  // Columns: for each (pool, type), the offerings some demand may use, dropping an offering when
  // a cheaper (or equal) kept one is usable by every demand that could use it. Every real node is
  // then matched by a column at most as expensive that its pods may all use, which keeps the LP a
  // valid bound, and in the usual case only the cheapest offering of each type remains.
  std::vector<std::vector<int>> demand_columns(nd);
  std::vector<std::pair<std::pair<int, int>, std::vector<int>>> fit_list(fitting.begin(),
                                                                         fitting.end());
  std::sort(fit_list.begin(), fit_list.end());
  for (const auto& [key, ds] : fit_list) {
    const auto [pi, t] = key;
    const TypeInfo& ti = types_[t];
    struct Candidate {
      int pair;
      double price;
      std::vector<int> users;
    };
    std::vector<Candidate> candidates;
    for (size_t p = 0; p < pairs_.zones.size(); ++p) {
      if (!ti.available.test(p)) continue;
      Candidate c{static_cast<int>(p), ti.pair_price[p], {}};
      for (int d : ds) {
        if (allowed[d][pi].test(p)) c.users.push_back(d);
      }
      if (!c.users.empty()) candidates.push_back(std::move(c));
    }
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      return a.price != b.price ? a.price < b.price : a.pair < b.pair;
    });
    std::vector<const Candidate*> kept;
    for (const auto& c : candidates) {
      bool dominated = false;
      for (const Candidate* k : kept) {
        if (std::includes(k->users.begin(), k->users.end(), c.users.begin(), c.users.end())) {
          dominated = true;
          break;
        }
      }
      if (dominated) continue;
      kept.push_back(&c);
      LpColumn col;
      col.price = c.price;
      col.capacity = ToDouble(pools_[pi].effective[t]);
      const int column = static_cast<int>(lp->columns.size());
      lp->columns.push_back(std::move(col));
      for (int d : c.users) demand_columns[d].push_back(column);
    }
  }
  return demand_columns;
}

absl::StatusOr<double> SolverImpl::LowerBound(std::span<const Pod* const> placed) {
  if (absl::Status s = Build(); !s.ok()) return s;
  LpProblem lp;
  lp.dimensions = static_cast<int>(res_.size());
  std::vector<std::vector<int>> lp_variants;
  const std::vector<std::pair<int, double>> demands = BoundDemands(placed, &lp_variants);
  const size_t nd = demands.size();
  std::vector<std::vector<int>> demand_columns = AddLaunchColumns(lp_variants, &lp);
  // Existing nodes' free room.
  std::vector<int> node_column(nodes_.size(), -1);
  std::map<int, std::vector<LpDistinctGroup>> distinct;  // by topology group
  for (size_t di = 0; di < nd; ++di) {
    const auto [cls, count] = demands[di];
    const PodClass& c = classes_[cls];
    LpDemand d;
    d.count = count;
    d.request = ToDouble(c.requests);
    d.columns = std::move(demand_columns[di]);
    for (size_t ni = 0; ni < nodes_.size(); ++ni) {
      bool fits = false;
      for (int vi : lp_variants[di]) {
        if (variants_[vi].node_fit[ni] < 0) (void)TryNode(vi, ni);  // resolves the static fit
        if (variants_[vi].node_fit[ni] == 1) fits = true;
      }
      if (!fits) continue;
      if (node_column[ni] < 0) {
        Amounts free = nodes_[ni].allocatable;
        SubFloor(free, nodes_[ni].used);
        LpColumn col;
        col.price = 0;
        col.capacity = ToDouble(free);
        col.max_count = 1;
        node_column[ni] = static_cast<int>(lp.columns.size());
        lp.columns.push_back(std::move(col));
      }
      d.columns.push_back(node_column[ni]);
    }
    if (d.columns.empty()) continue;
    // A class no existing node can host needs at least one new node that can host it.
    bool any_existing = false;
    for (int col : d.columns) {
      if (lp.columns[col].max_count == 1 && lp.columns[col].price == 0) any_existing = true;
    }
    if (!any_existing) lp.distinct_groups.push_back({1, d.columns});
    // Hostname anti-affinity against itself: every such pod needs its own node.
    for (int gid : c.required_anti) {
      const TopologyGroup& g = groups_[gid];
      if (g.is_hostname && g.Selects(c.ns, c.labels)) {
        std::vector<int> cols = d.columns;
        std::sort(cols.begin(), cols.end());
        distinct[gid].push_back({count, std::move(cols)});
      }
    }
    lp.demands.push_back(std::move(d));
  }
  // Pods of one self-anti-affinity group need pairwise distinct nodes, whatever their class. For
  // each class k of the group, the nodes that can host it must number at least the pods of every
  // class of the group that can only use such nodes (its columns are a subset of k's).
  for (const auto& [gid, members] : distinct) {
    for (const auto& k : members) {
      double total = 0;
      for (const auto& m : members) {
        if (std::includes(k.columns.begin(), k.columns.end(), m.columns.begin(), m.columns.end())) {
          total += m.count;
        }
      }
      lp.distinct_groups.push_back({total, k.columns});
    }
  }
  absl::StatusOr<LpResult> result = SolveCostLowerBound(lp);
  if (!result.ok()) return result.status();
  return result->bound;
}

}  // namespace dovetail::solver::internal
