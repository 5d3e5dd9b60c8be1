#include "dovetail/solver/solver.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "dovetail/apis/core/pod_requests.h"
#include "dovetail/solver/internal/solver_impl.h"

namespace dovetail::solver {

using cloudprovider::Offering;

// What re-packing with smaller NodeClaims could save, roughly: for every NodeClaim with more than
// one pod, its requests priced at its own instance type's rate per unit of the dominant resource,
// minus the same requests at the cheapest rate of any type of the pool in the same zone and
// capacity type. Re-packing cannot fix the rounding up to whole instance types, nor a zone or
// capacity type that constraints impose, only the choice of a dear type: that is what this
// measures.
double RepackPotential(const Input& input, const Plan& plan) {
  // pool/zone/capacity type/resource -> cheapest price per milli-unit of allocatable.
  absl::flat_hash_map<std::string, double> min_rate;
  auto key = [](const std::string& pool, const std::string& zone, const std::string& ct,
                const std::string& resource) {
    return absl::StrCat(pool, "\x1f", zone, "\x1f", ct, "\x1f", resource);
  };
  for (const auto& pool : input.pools) {
    for (const auto& it : pool.instance_types) {
      for (const auto& o : it->offerings()) {
        if (!o.available) continue;
        for (const auto& [name, q] : it->Allocatable()) {
          if (q.MilliValue() <= 0) continue;
          const double rate = o.price / static_cast<double>(q.MilliValue());
          auto [r, inserted] =
              min_rate.emplace(key(pool.name, o.zone, o.capacity_type, name), rate);
          if (!inserted) r->second = std::min(r->second, rate);
        }
      }
    }
  }
  double potential = 0;
  for (const auto& c : plan.node_claims) {
    if (c.pods.size() < 2 || c.instance_types.empty()) continue;
    const ResourceList& alloc = c.instance_types.front()->Allocatable();
    double at_type = 0, at_best = 0;
    for (const auto& [name, q] : c.requests) {
      auto best = min_rate.find(key(c.pool, c.zone, c.capacity_type, name));
      auto own = alloc.find(name);
      if (best == min_rate.end() || own == alloc.end() || own->second.MilliValue() <= 0) continue;
      const double amount = static_cast<double>(q.MilliValue());
      at_type = std::max(at_type, amount * c.price / static_cast<double>(own->second.MilliValue()));
      at_best = std::max(at_best, amount * best->second);
    }
    potential += std::max(0.0, at_type - at_best);
  }
  return potential;
}

absl::StatusOr<Plan> Solve(const Input& input) {
  std::vector<ResourceList> pod_requests;
  pod_requests.reserve(input.pods.size());
  for (const Pod* p : input.pods) {
    if (p == nullptr) return absl::InvalidArgumentError("null pod in input");
    pod_requests.push_back(apis::core::PodRequests(*p));
  }
  internal::SolverImpl base(input, input.pods, pod_requests, nullptr);
  auto plan = base.Run();
  if (!plan.ok() || !input.options.improve || plan->node_claims.size() < 2) return plan;
  // Re-packing costs several packings; skip it when it could save less than 1 %.
  if (RepackPotential(input, *plan) <= 0.01 * plan->total_price) return plan;
  // Greedy packing lets a NodeClaim grow to the largest type before it is priced, which is not
  // always the cheapest way to buy the capacity. Re-pack with new NodeClaims capped at the sizes
  // the cheapest types of the first plan have, and keep the cheapest plan that places as many pods.
  auto cpu_mem = [](const cloudprovider::InstanceType& t) {
    const ResourceList& a = t.Allocatable();
    auto cpu = a.find("cpu");
    auto mem = a.find("memory");
    return std::make_pair(cpu == a.end() ? 0 : cpu->second.MilliValue(),
                          mem == a.end() ? 0 : mem->second.MilliValue());
  };
  std::vector<const cloudprovider::InstanceType*> caps;
  {
    absl::flat_hash_map<std::string, const cloudprovider::InstanceType*> by_name;
    for (const auto& pool : input.pools) {
      for (const auto& it : pool.instance_types) by_name[it->name()] = it.get();
    }
    // The types the plan chose, by how much money they carry, plus the cheapest type per unit of
    // the plan's dominant resource among the options of its largest NodeClaims.
    absl::flat_hash_map<std::string, double> spend;
    for (const auto& c : plan->node_claims) spend[c.instance_type] += c.price;
    std::vector<std::pair<double, std::string>> ranked;
    for (const auto& [name, money] : spend) ranked.emplace_back(money, name);
    std::sort(ranked.rbegin(), ranked.rend());
    for (const auto& [money, name] : ranked) {
      if (caps.size() >= 3) break;
      auto it = by_name.find(name);
      if (it != by_name.end()) caps.push_back(it->second);
    }
    // Types that are cheap per vCPU among the first claim's options (sized at most its type).
    const auto& first = plan->node_claims.front();
    const cloudprovider::InstanceType* best = nullptr;
    double best_ratio = std::numeric_limits<double>::infinity();
    for (const auto& it : first.instance_types) {
      const Offering* o = nullptr;
      double price = std::numeric_limits<double>::infinity();
      for (const auto& off : it->offerings()) {
        if (off.available && off.price < price) {
          price = off.price;
          o = &off;
        }
      }
      auto cpu = it->Allocatable().find("cpu");
      if (o == nullptr || cpu == it->Allocatable().end() || cpu->second.MilliValue() <= 0) continue;
      double ratio = price / static_cast<double>(cpu->second.MilliValue());
      if (ratio < best_ratio) {
        best_ratio = ratio;
        best = it.get();
      }
    }
    if (best != nullptr && std::find(caps.begin(), caps.end(), best) == caps.end()) {
      caps.push_back(best);
    }
    // The types that buy the pods' aggregate cpu and memory, in the proportion the pods ask for
    // them, at the lowest price, among those that hold the largest pod: NodeClaims capped there
    // fill up in that proportion.
    double demand_cpu = 0, demand_mem = 0, max_cpu = 0, max_mem = 0;
    for (const auto& r : pod_requests) {
      auto cpu = r.find("cpu");
      auto mem = r.find("memory");
      const double c = cpu == r.end() ? 0 : static_cast<double>(cpu->second.MilliValue());
      const double m = mem == r.end() ? 0 : static_cast<double>(mem->second.MilliValue());
      demand_cpu += c;
      demand_mem += m;
      max_cpu = std::max(max_cpu, c);
      max_mem = std::max(max_mem, m);
    }
    std::vector<std::pair<double, const cloudprovider::InstanceType*>> shaped;
    for (const auto& pool : input.pools) {
      for (const auto& it : pool.instance_types) {
        double price = std::numeric_limits<double>::infinity();
        for (const auto& off : it->offerings()) {
          if (off.available) price = std::min(price, off.price);
        }
        const auto [cpu, mem] = cpu_mem(*it);
        if (!std::isfinite(price) || cpu < max_cpu || mem < max_mem) continue;
        double share = std::numeric_limits<double>::infinity();
        if (demand_cpu > 0) share = std::min(share, static_cast<double>(cpu) / demand_cpu);
        if (demand_mem > 0) share = std::min(share, static_cast<double>(mem) / demand_mem);
        if (!std::isfinite(share) || share <= 0) continue;
        shaped.emplace_back(price / share, it.get());
      }
    }
    std::sort(shaped.begin(), shaped.end());
    for (size_t i = 0; i < shaped.size() && i < 2; ++i) {
      if (std::find(caps.begin(), caps.end(), shaped[i].second) == caps.end()) {
        caps.push_back(shaped[i].second);
      }
    }
  }
  // The bound stays the first plan's: capped runs see fewer instance types, so an LP over them
  // would not bound the real problem. (A plan placing more pods only costs more, so the first
  // plan's bound still holds for it.)
  Input capped_input = input;
  capped_input.options.lower_bound = false;
  const std::optional<double> bound = plan->lower_bound;
  const std::string bound_error = plan->lower_bound_error;
  const double bound_seconds = plan->lower_bound_seconds;
  for (const auto* cap : caps) {
    // A cap that admits every type the plan launches admits every intermediate state of every
    // NodeClaim too (pods are only added), so it would repeat the packing (up to zone choices).
    const auto [cap_cpu, cap_mem] = cpu_mem(*cap);
    bool excludes = false;
    for (const auto& c : plan->node_claims) {
      if (c.instance_types.empty()) continue;
      const auto [cpu, mem] = cpu_mem(*c.instance_types.front());
      if (cpu > cap_cpu || mem > cap_mem) excludes = true;
    }
    if (!excludes) continue;
    internal::SolverImpl capped(capped_input, capped_input.pods, pod_requests, cap);
    auto alt = capped.Run();
    if (!alt.ok()) continue;
    // Only a plan that places every pod the current one places may replace it (it must not
    // trade one pod for another, and the bound of the first plan then still holds).
    absl::flat_hash_set<const Pod*> left_out;
    for (const auto& u : plan->unschedulable) left_out.insert(u.pod);
    bool superset = true;
    for (const auto& u : alt->unschedulable) {
      if (!left_out.contains(u.pod)) superset = false;
    }
    if (superset && alt->total_price < plan->total_price - 1e-9) plan = std::move(alt);
  }
  plan->lower_bound = bound;
  plan->lower_bound_error = bound_error;
  plan->lower_bound_seconds = bound_seconds;
  return plan;
}

}  // namespace dovetail::solver
