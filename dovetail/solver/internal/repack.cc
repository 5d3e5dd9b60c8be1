// SolverImpl::SplitClaims: re-packing NodeClaims onto cheaper instance types.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/solver/internal/solver_impl.h"
#include "dovetail/solver/type_set.h"

namespace dovetail::solver::internal {

void SolverImpl::SplitClaims() {
  absl::flat_hash_map<const Pod*, int> class_of;
  for (size_t i = 0; i < q_pods_.size(); ++i) class_of[q_pods_[i]] = q_class_[i];
  auto hostname_bound = [&](const PodClass& c) {
    if (!c.ports.empty()) return true;
    for (const std::vector<int>* list :
         {&c.selected_by, &c.inverse, &c.required_affinity, &c.required_anti, &c.spread_required,
          &c.preferred_affinity, &c.preferred_anti, &c.spread_anyway}) {
      for (int gid : *list) {
        if (groups_[gid].is_hostname) return true;
      }
    }
    return false;
  };
  std::vector<int8_t> class_bound(classes_.size(), -1);
  auto eligible = [&](const Claim& claim) {
    const PoolInfo& pool = pools_[claim.pool];
    if (pool.remaining || pool.remaining_nodes || claim.min_values_relaxed) return false;
    for (const auto& r : claim.reqs) {
      if (r.min_values()) return false;
    }
    for (const Pod* p : claim.pods) {
      const int cls = class_of.at(p);
      if (class_bound[cls] < 0) class_bound[cls] = hostname_bound(classes_[cls]) ? 1 : 0;
      if (class_bound[cls] == 1) return false;
    }
    return true;
  };
  // Claims that can trade pods: same pool, requirements and offering pairs.
  struct Group {
    std::vector<size_t> claims;
    double price = 0;
  };
  std::vector<Group> groups;
  std::vector<bool> regrouped(claims_.size(), false);
  for (size_t ci = 0; ci < claims_.size(); ++ci) {
    const Claim& claim = claims_[ci];
    if (claim.pods.empty() || !eligible(claim)) continue;
    double price = kInfPrice;
    claim.types.ForEach(
        [&](size_t i) { price = std::min(price, TypePrice(i, claim.pairs, nullptr)); });
    if (!std::isfinite(price)) continue;
    Group* g = nullptr;
    for (auto& candidate : groups) {
      const Claim& rep = claims_[candidate.claims.front()];
      if (rep.pool == claim.pool && rep.pairs == claim.pairs && rep.reqs == claim.reqs) {
        g = &candidate;
        break;
      }
    }
    if (g == nullptr) g = &groups.emplace_back();
    g->claims.push_back(ci);
    g->price += price;
  }
  std::vector<Claim> added;
  size_t next_name = claims_.size();
  for (const Group& g : groups) {
    const Claim& rep = claims_[g.claims.front()];
    const PoolInfo& pool = pools_[rep.pool];
    if (g.claims.size() < 2 && rep.pods.size() < 2) continue;
    std::vector<const Pod*> pods;
    std::vector<const Amounts*> requests;
    Amounts total(res_.size(), 0);
    for (size_t ci : g.claims) {
      for (const Pod* p : claims_[ci].pods) {
        pods.push_back(p);
        requests.push_back(&classes_[class_of.at(p)].requests);
        AddTo(total, *requests.back());
      }
    }
    // Types the group may use: compatible with its requirements and offerings.
    TypeSet compatible(types_.size());
    std::vector<double> price(types_.size(), kInfPrice);
    pool.types.ForEach([&](size_t t) {
      const double pr = TypePrice(t, rep.pairs, nullptr);
      if (!std::isfinite(pr)) return;
      if (!cloudprovider::RequirementsIntersect(types_[t].type->requirements(), rep.reqs)) return;
      compatible.Set(t);
      price[t] = pr;
    });
    struct Packing {
      double cost = kInfPrice;
      std::vector<std::vector<size_t>> bins;
      std::vector<Amounts> used;
    };
    // A cheaper packing wins; at the same cost (to a millionth of a cent), the one with fewer
    // nodes. A packing without bins is no packing: only a budget to stay within.
    auto better = [](const Packing& a, const Packing& b) {
      if (a.bins.empty()) return false;
      if (b.bins.empty()) return a.cost <= b.cost + 1e-8;
      if (a.cost < b.cost - 1e-8) return true;
      return a.cost <= b.cost + 1e-8 && a.bins.size() < b.bins.size();
    };
    // Packs `items`, sorted largest first, first fit onto nodes of type `t`; gives up (no bins)
    // past `max_bins` nodes.
    constexpr size_t kOpen = 16;  // first fit over the most recent bins only
    auto pack_on = [&](const std::vector<size_t>& items, size_t t, size_t max_bins) {
      const Amounts& room = pool.effective[t];
      Packing p;
      for (size_t i : items) {
        size_t b = p.bins.size() > kOpen ? p.bins.size() - kOpen : 0;
        while (b < p.bins.size() && !Fits(p.used[b], *requests[i], room)) ++b;
        if (b == p.bins.size()) {
          if (p.bins.size() + 1 > max_bins) return Packing{};
          p.bins.emplace_back();
          p.used.emplace_back(res_.size(), 0);
        }
        p.bins[b].push_back(i);
        AddTo(p.used[b], *requests[i]);
      }
      p.cost = static_cast<double>(p.bins.size()) * price[t];
      return p;
    };
    // Packs `items` (largest cpu first, then memory) for less than `budget`: every node of the one
    // type that comes cheapest, trying types in order of their price floor; and, while `depth` > 0,
    // "bulk and tail": most nodes of a type that is cheap per unit of what the pods need, with the
    // pods of its least-filled one or two nodes packed again (recursively) onto whatever suits the
    // remainder, so 223 small pods can go on one large node plus two small ones rather than on 15
    // mid-sized ones or two large ones. Returns the cost and the bins (no bins: nothing under
    // budget).
    std::function<Packing(std::vector<size_t>, double, int)> pack = [&](std::vector<size_t> items,
                                                                        double budget, int depth) {
      Packing best;
      best.cost = budget;
      if (items.empty()) {
        best.cost = 0;
        return best;
      }
      std::stable_sort(items.begin(), items.end(), [&](size_t a, size_t b) {
        const Amounts& ra = *requests[a];
        const Amounts& rb = *requests[b];
        return ra[0] != rb[0] ? ra[0] > rb[0] : ra[1] > rb[1];
      });
      Amounts need(res_.size(), 0), largest(res_.size(), 0);
      for (size_t i : items) {
        AddTo(need, *requests[i]);
        for (size_t d = 0; d < largest.size(); ++d) {
          largest[d] = std::max(largest[d], (*requests[i])[d]);
        }
      }
      struct Floor {
        double whole;  // whole nodes of the type
        double part;   // fractional nodes: what the capacity the pods need costs on it
        size_t t;
      };
      std::vector<Floor> order;
      compatible.ForEach([&](size_t t) {
        const Amounts& room = pool.effective[t];
        if (!FitsIn(largest, room)) return;
        double nodes = 0;
        for (size_t d = 0; d < room.size(); ++d) {
          if (need[d] > 0) {
            nodes = std::max(nodes, static_cast<double>(need[d]) / static_cast<double>(room[d]));
          }
        }
        order.push_back({std::max(1.0, std::ceil(nodes)) * price[t], nodes * price[t], t});
      });
      std::sort(order.begin(), order.end(), [](const Floor& a, const Floor& b) {
        return a.whole != b.whole ? a.whole < b.whole : a.t < b.t;
      });
      for (const Floor& f : order) {
        if (f.whole >= best.cost + 1e-8) break;
        Packing p = pack_on(items, f.t, static_cast<size_t>(best.cost / price[f.t]) + 1);
        if (better(p, best)) best = std::move(p);
      }
      if (depth <= 0) return best;
      constexpr int kBulkTypes = 4;
      std::sort(order.begin(), order.end(), [](const Floor& a, const Floor& b) {
        return a.part != b.part ? a.part < b.part : a.t < b.t;
      });
      int tried = 0;
      for (const Floor& f : order) {
        if (f.part >= best.cost + 1e-8 || tried == kBulkTypes) break;
        if (f.whole < 2 * price[f.t]) continue;  // all on one node: the loop above had it
        ++tried;
        const size_t t = f.t;
        Packing p = pack_on(items, t, static_cast<size_t>(best.cost / price[t]) + 2);
        if (p.bins.size() < 2) continue;  // over budget, or one node after all
        // Least filled last (fill: the largest share of the node any resource takes).
        const Amounts& room = pool.effective[t];
        std::vector<double> fill(p.bins.size(), 0);
        for (size_t b = 0; b < p.bins.size(); ++b) {
          for (size_t d = 0; d < room.size(); ++d) {
            if (room[d] > 0) {
              fill[b] = std::max(fill[b],
                                 static_cast<double>(p.used[b][d]) / static_cast<double>(room[d]));
            }
          }
        }
        std::vector<size_t> by_fill(p.bins.size());
        std::iota(by_fill.begin(), by_fill.end(), 0);
        std::stable_sort(by_fill.begin(), by_fill.end(),
                         [&](size_t a, size_t b) { return fill[a] > fill[b]; });
        for (size_t j = 1; j <= 2 && j < p.bins.size(); ++j) {
          const size_t kept = p.bins.size() - j;
          const double bulk = static_cast<double>(kept) * price[t];
          if (bulk >= best.cost) break;
          std::vector<size_t> tail;
          for (size_t k = kept; k < by_fill.size(); ++k) {
            const auto& bin = p.bins[by_fill[k]];
            tail.insert(tail.end(), bin.begin(), bin.end());
          }
          Packing rest = pack(std::move(tail), best.cost - bulk, depth - 1);
          if (rest.bins.empty()) continue;
          Packing mixed;
          mixed.cost = bulk + rest.cost;
          for (size_t k = 0; k < kept; ++k) {
            mixed.bins.push_back(p.bins[by_fill[k]]);
            mixed.used.push_back(p.used[by_fill[k]]);
          }
          for (auto& b : rest.bins) mixed.bins.push_back(std::move(b));
          for (auto& u : rest.used) mixed.used.push_back(std::move(u));
          if (better(mixed, best)) best = std::move(mixed);
        }
      }
      return best;
    };
    // Up to the group's cost: a re-packing is kept when it is cheaper, or as cheap on fewer nodes.
    const double budget = g.price + 1e-8;
    std::vector<size_t> all(pods.size());
    std::iota(all.begin(), all.end(), 0);
    constexpr int kTailDepth = 2;
    Packing together = pack(all, budget, kTailDepth);
    // Pods by shape (memory per cpu, rounded to a power of two GiB per vCPU), each shape on the
    // type that suits it best.
    std::map<int, std::vector<size_t>> shapes;
    for (size_t i = 0; i < pods.size(); ++i) {
      const double cpu = static_cast<double>((*requests[i])[0]);
      const double mem = static_cast<double>((*requests[i])[1]);
      int shape =
          cpu <= 0 ? 100
                   : static_cast<int>(std::lround(std::log2(std::max(1.0, mem / cpu) / (1 << 20))));
      shapes[shape].push_back(i);
    }
    Packing by_shape;
    if (shapes.size() > 1) {
      by_shape.cost = 0;
      for (auto& [shape, items] : shapes) {
        Packing p = pack(items, std::min(budget, together.cost) - by_shape.cost, kTailDepth);
        if (p.bins.empty()) {
          by_shape.cost = kInfPrice;
          break;
        }
        by_shape.cost += p.cost;
        for (auto& b : p.bins) by_shape.bins.push_back(std::move(b));
        for (auto& u : p.used) by_shape.used.push_back(std::move(u));
      }
    }
    Packing* best = better(by_shape, together) ? &by_shape : &together;
    if (best->bins.empty()) continue;
    if (best->cost >= g.price * (1 - 1e-6) && best->bins.size() >= g.claims.size()) continue;
    for (size_t b = 0; b < best->bins.size(); ++b) {
      Claim part;
      part.pool = rep.pool;
      part.hostname = absl::StrCat("hostname-placeholder-", next_name++);
      part.hostname_domain = domains_[std::string(v1::kLabelHostname)].Intern(part.hostname);
      part.reqs = rep.reqs;
      part.pairs = rep.pairs;
      part.used = best->used[b];
      TypeSet types = compatible;
      types.ForEach([&](size_t t) {
        if (!FitsIn(part.used, pool.effective[t])) types.Reset(t);
      });
      part.types = TypeSet(types_.size());
      SetTypes(part, std::move(types));
      part.ports = pool.ds_ports;
      for (size_t ci : g.claims) {
        for (int v : claims_[ci].variants) {
          if (std::find(part.variants.begin(), part.variants.end(), v) == part.variants.end()) {
            part.variants.push_back(v);
          }
        }
      }
      for (size_t i : best->bins[b]) part.pods.push_back(pods[i]);
      added.push_back(std::move(part));
    }
    for (size_t ci : g.claims) regrouped[ci] = true;
  }
  if (added.empty()) return;
  std::vector<Claim> out;
  out.reserve(claims_.size() + added.size());
  for (size_t ci = 0; ci < claims_.size(); ++ci) {
    if (!regrouped[ci]) out.push_back(std::move(claims_[ci]));
  }
  for (auto& c : added) out.push_back(std::move(c));
  claims_ = std::move(out);
}

}  // namespace dovetail::solver::internal
