// SolverImpl's prices of NodeClaims and the Plan made from them.
#include <algorithm>
#include <array>
#include <memory>
#include <numeric>
#include <tuple>
#include <utility>

#include "dovetail/apis/v1/labels.h"
#include "dovetail/solver/internal/solver_impl.h"
#include "dovetail/solver/type_set.h"

namespace dovetail::solver::internal {

double SolverImpl::ClaimPrice(const TypeSet& types, const PairMask& pairs) const {
  double best = kInfPrice;
  types.ForEach([&](size_t t) { best = std::min(best, TypePrice(t, pairs, nullptr)); });
  return best;
}

double SolverImpl::AlonePrice(int vi, int pi) {
  PoolFit& fit = variants_[vi].pool_fit[pi];
  if (fit.alone_price < 0) {
    fit.alone_price = ClaimPrice(fit.types, fit.pairs) + pools_[pi].t->node_overhead_per_hour;
  }
  return fit.alone_price;
}

double SolverImpl::TypePrice(size_t t, const PairMask& pairs, int* pair) const {
  double best = kInfPrice;
  const TypeInfo& ti = types_[t];
  for (size_t p = 0; p < ti.pair_price.size(); ++p) {
    if (!pairs.test(p) || !ti.available.test(p)) continue;
    if (ti.pair_price[p] < best) {
      best = ti.pair_price[p];
      if (pair != nullptr) *pair = static_cast<int>(p);
    }
  }
  return best;
}

SolverImpl::ClaimLaunch SolverImpl::LaunchOf(const Claim& claim,
                                             const std::vector<uint32_t>& name_rank) const {
  ClaimLaunch l;
  const PoolInfo& pool = pools_[claim.pool];
  claim.types.ForEach([&](size_t i) {
    int pair = -1;
    double price = TypePrice(i, claim.pairs, &pair);
    if (pair >= 0) l.options.push_back({i, price, pair});
  });
  std::sort(l.options.begin(), l.options.end(),
            [&](const ClaimLaunch::Option& a, const ClaimLaunch::Option& b) {
              if (a.price != b.price) return a.price < b.price;
              return name_rank[a.type] < name_rank[b.type];
            });
  if (l.options.size() > in_.options.max_instance_types) {
    l.options.resize(in_.options.max_instance_types);
  }
  std::vector<std::string> names;
  names.reserve(l.options.size());
  PairMask offered;
  for (const auto& o : l.options) {
    l.instance_types.push_back(types_[o.type].type);
    names.push_back(types_[o.type].type->name());
    offered |= types_[o.type].available;
    if (l.min_overhead.empty()) {
      l.min_overhead = pool.overhead[o.type];
    } else {
      for (size_t r = 0; r < l.min_overhead.size(); ++r) {
        l.min_overhead[r] = std::min(l.min_overhead[r], pool.overhead[o.type][r]);
      }
    }
  }
  offered &= claim.pairs;
  std::vector<std::string> cts;
  for (size_t p = 0; p < pairs_.zones.size(); ++p) {
    if (offered.test(p) &&
        std::find(cts.begin(), cts.end(), pairs_.capacity_types[p]) == cts.end()) {
      cts.push_back(pairs_.capacity_types[p]);
    }
  }
  l.type_requirement = Requirement::In(std::string(v1::kLabelInstanceType), names);
  l.capacity_type_requirement = Requirement::In(std::string(v1::kCapacityTypeLabelKey), cts);
  return l;
}

NewNodeClaim SolverImpl::ToNodeClaim(const Claim& claim, const ClaimLaunch& launch) const {
  const PoolInfo& pool = pools_[claim.pool];
  NewNodeClaim out;
  out.pool = pool.t->name;
  out.hostname = claim.hostname;
  out.instance_types = launch.instance_types;
  Amounts requests = claim.used;
  if (!launch.min_overhead.empty()) AddTo(requests, launch.min_overhead);
  out.requirements = claim.reqs;
  out.requirements.Add(launch.type_requirement);
  out.requirements.Add(launch.capacity_type_requirement);
  if (!launch.options.empty()) {
    const ClaimLaunch::Option& best = launch.options.front();
    const TypeInfo& ti = types_[best.type];
    out.instance_type = ti.type->name();
    out.zone = pairs_.zones[best.pair];
    out.capacity_type = pairs_.capacity_types[best.pair];
    out.node_overhead = pool.t->node_overhead_per_hour;
    out.effective_price = best.price + out.node_overhead;
    out.price = best.price - ti.pair_node_price[best.pair];
    // Resolved labels of the node the plan is priced with.
    out.labels = ti.type->requirements().SingleValuedLabels();
    for (const auto& [k, val] : out.requirements.SingleValuedLabels()) out.labels[k] = val;
    out.labels[std::string(v1::kLabelInstanceType)] = out.instance_type;
    out.labels[std::string(v1::kLabelTopologyZone)] = out.zone;
    out.labels[std::string(v1::kCapacityTypeLabelKey)] = out.capacity_type;
    for (const auto& [k, val] : claim.reqs.Labels()) out.labels.emplace(k, val);
  }
  for (const auto& [k, val] : pool.t->labels) out.labels[k] = val;
  out.labels[std::string(v1::kNodePoolLabelKey)] = pool.t->name;
  out.labels[std::string(v1::kLabelHostname)] = claim.hostname;
  out.requests = res_.ToList(requests);
  out.taints = pool.t->taints;
  out.startup_taints = pool.t->startup_taints;
  out.pods = claim.pods;
  out.min_values_relaxed = claim.min_values_relaxed;
  return out;
}

Plan SolverImpl::Finalize() {
  Plan plan;
  // Ties in price are broken by instance-type name; rank the names once.
  std::vector<uint32_t> name_rank(types_.size());
  {
    std::vector<uint32_t> by_name(types_.size());
    std::iota(by_name.begin(), by_name.end(), 0);
    std::sort(by_name.begin(), by_name.end(), [&](uint32_t a, uint32_t b) {
      return types_[a].type->name() < types_[b].type->name();
    });
    for (uint32_t r = 0; r < by_name.size(); ++r) name_rank[by_name[r]] = r;
  }
  // Claims of one pool with the same instance types and offering pairs share their launch options
  // (common: every claim of a hostname anti-affinity workload looks alike).
  using LaunchKey = std::tuple<int, TypeSet, std::array<uint64_t, kMaxPairs / 64>>;
  absl::flat_hash_map<LaunchKey, std::unique_ptr<ClaimLaunch>> launches;
  auto pair_words = [](const PairMask& m) {
    std::array<uint64_t, kMaxPairs / 64> w{};
    for (size_t i = 0; i < kMaxPairs; ++i) {
      if (m.test(i)) w[i / 64] |= uint64_t{1} << (i % 64);
    }
    return w;
  };
  for (auto& claim : claims_) {
    auto& launch = launches[LaunchKey(claim.pool, claim.types, pair_words(claim.pairs))];
    if (launch == nullptr) launch = std::make_unique<ClaimLaunch>(LaunchOf(claim, name_rank));
    NewNodeClaim out = ToNodeClaim(claim, *launch);
    plan.total_price += out.price;
    plan.total_effective_price += out.effective_price;
    plan.node_claims.push_back(std::move(out));
  }
  for (const auto& n : nodes_) {
    if (!n.placed.empty()) plan.existing.push_back({n.node->name, n.placed});
  }
  return plan;
}

}  // namespace dovetail::solver::internal
