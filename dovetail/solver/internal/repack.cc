// SolverImpl::SplitClaims: re-packing NodeClaims onto cheaper instance types.
#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/solver/internal/bin_packer.h"
#include "dovetail/solver/internal/solver_impl.h"
#include "dovetail/solver/type_set.h"

namespace dovetail::solver::internal {

namespace {

// Claims that can trade pods: same pool, requirements and offering pairs; `price` is what the
// claims cost today (each at its cheapest type).
struct RepackGroup {
  std::vector<size_t> claims;
  double price = 0;
};

}  // namespace

bool SolverImpl::HostnameBound(const PodClass& c) const {
  if (!c.ports.empty()) return true;
  for (const std::vector<int>* list :
       {&c.selected_by, &c.inverse, &c.required_affinity, &c.required_anti, &c.spread_required,
        &c.preferred_affinity, &c.preferred_anti, &c.spread_anyway}) {
    for (int gid : *list) {
      if (groups_[gid].is_hostname) return true;
    }
  }
  return false;
}

void SolverImpl::SplitClaims() {
  absl::flat_hash_map<const Pod*, int> class_of;
  for (size_t i = 0; i < q_pods_.size(); ++i) class_of[q_pods_[i]] = q_class_[i];

  // 1. Group the claims that may trade pods: no limits or minValues in the way, no pod with a
  //    hostname-level constraint.
  std::vector<int8_t> class_bound(classes_.size(), -1);
  auto eligible = [&](const Claim& claim) {
    const PoolInfo& pool = pools_[claim.pool];
    if (pool.remaining || pool.remaining_nodes || claim.min_values_relaxed) return false;
    for (const auto& r : claim.reqs) {
      if (r.min_values()) return false;
    }
    for (const Pod* p : claim.pods) {
      const int cls = class_of.at(p);
      if (class_bound[cls] < 0) class_bound[cls] = HostnameBound(classes_[cls]) ? 1 : 0;
      if (class_bound[cls] == 1) return false;
    }
    return true;
  };
  std::vector<RepackGroup> groups;
  for (size_t ci = 0; ci < claims_.size(); ++ci) {
    const Claim& claim = claims_[ci];
    if (claim.pods.empty() || !eligible(claim)) continue;
    double price = kInfPrice;
    claim.types.ForEach(
        [&](size_t i) { price = std::min(price, TypePrice(i, claim.pairs, nullptr)); });
    if (!std::isfinite(price)) continue;
    RepackGroup* g = nullptr;
    for (auto& candidate : groups) {
      const Claim& rep = claims_[candidate.claims.front()];
      if (rep.pool == claim.pool && rep.pairs == claim.pairs && rep.reqs == claim.reqs) {
        g = &candidate;
        break;
      }
    }
    if (g == nullptr) g = &groups.emplace_back();
    g->claims.push_back(ci);
    g->price += price + pools_[claim.pool].t->node_overhead_per_hour;
  }

  // 2. Re-pack each group; keep the packing when it is cheaper, or as cheap on fewer nodes.
  std::vector<Claim> added;
  std::vector<bool> regrouped(claims_.size(), false);
  size_t next_name = claims_.size();
  for (const RepackGroup& g : groups) {
    const Claim& rep = claims_[g.claims.front()];
    const PoolInfo& pool = pools_[rep.pool];
    if (g.claims.size() < 2 && rep.pods.size() < 2) continue;
    std::vector<const Pod*> pods;
    std::vector<const Amounts*> requests;
    for (size_t ci : g.claims) {
      for (const Pod* p : claims_[ci].pods) {
        pods.push_back(p);
        requests.push_back(&classes_[class_of.at(p)].requests);
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
      price[t] = pr + pool.t->node_overhead_per_hour;  // every bin is a NodeClaim
    });
    const BinPacker packer(requests, pool.effective, price, compatible, res_.size());
    const Packing best = packer.Best(g.price + 1e-8);
    if (best.bins.empty()) continue;
    if (best.cost >= g.price * (1 - 1e-6) && best.bins.size() >= g.claims.size()) continue;
    for (size_t b = 0; b < best.bins.size(); ++b) {
      std::vector<const Pod*> bin_pods;
      for (size_t i : best.bins[b]) bin_pods.push_back(pods[i]);
      added.push_back(
          RepackedClaim(rep, g.claims, best.used[b], compatible, std::move(bin_pods), next_name++));
    }
    for (size_t ci : g.claims) regrouped[ci] = true;
  }

  // 3. Replace the re-packed groups' claims by the new ones, after the others.
  if (added.empty()) return;
  std::vector<Claim> out;
  out.reserve(claims_.size() + added.size());
  for (size_t ci = 0; ci < claims_.size(); ++ci) {
    if (!regrouped[ci]) out.push_back(std::move(claims_[ci]));
  }
  for (auto& c : added) out.push_back(std::move(c));
  claims_ = std::move(out);
}

Claim SolverImpl::RepackedClaim(const Claim& rep, const std::vector<size_t>& group,
                                const Amounts& used, const TypeSet& compatible,
                                std::vector<const Pod*> pods, size_t name) {
  const PoolInfo& pool = pools_[rep.pool];
  Claim part;
  part.pool = rep.pool;
  part.hostname = absl::StrCat("hostname-placeholder-", name);
  part.hostname_domain = domains_[std::string(v1::kLabelHostname)].Intern(part.hostname);
  part.reqs = rep.reqs;
  part.pairs = rep.pairs;
  part.used = used;
  TypeSet types = compatible;
  types.ForEach([&](size_t t) {
    if (!FitsIn(part.used, pool.effective[t])) types.Reset(t);
  });
  part.types = TypeSet(types_.size());
  SetTypes(part, std::move(types));
  part.ports = pool.ds_ports;
  for (size_t ci : group) {
    for (int v : claims_[ci].variants) {
      if (std::find(part.variants.begin(), part.variants.end(), v) == part.variants.end()) {
        part.variants.push_back(v);
      }
    }
  }
  part.pods = std::move(pods);
  return part;
}

}  // namespace dovetail::solver::internal
