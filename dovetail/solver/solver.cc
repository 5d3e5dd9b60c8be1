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
          const double rate = o.EffectivePrice() / static_cast<double>(q.MilliValue());
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
      at_type = std::max(
          at_type, amount * c.effective_price / static_cast<double>(own->second.MilliValue()));
      at_best = std::max(at_best, amount * best->second);
    }
    potential += std::max(0.0, at_type - at_best);
  }
  return potential;
}

namespace {

std::pair<int64_t, int64_t> CpuMemory(const cloudprovider::InstanceType& t) {
  const ResourceList& a = t.Allocatable();
  auto cpu = a.find("cpu");
  auto mem = a.find("memory");
  return {cpu == a.end() ? 0 : cpu->second.MilliValue(),
          mem == a.end() ? 0 : mem->second.MilliValue()};
}

void AddCap(const cloudprovider::InstanceType* t,
            std::vector<const cloudprovider::InstanceType*>* caps) {
  if (t != nullptr && std::find(caps->begin(), caps->end(), t) == caps->end()) caps->push_back(t);
}

// The size caps the improvement pass tries (see Solve): the types the plan chose, by how much money
// they carry (three at most); the cheapest type per vCPU among the first NodeClaim's options; and
// the two types that buy the pods' aggregate cpu and memory, in the proportion the pods ask for
// them, at the lowest price, among those that hold the largest pod (NodeClaims capped there fill
// up in that proportion).
std::vector<const cloudprovider::InstanceType*> CapCandidates(
    const Input& input, const Plan& plan, const std::vector<ResourceList>& pod_requests) {
  std::vector<const cloudprovider::InstanceType*> caps;
  absl::flat_hash_map<std::string, const cloudprovider::InstanceType*> by_name;
  for (const auto& pool : input.pools) {
    for (const auto& it : pool.instance_types) by_name[it->name()] = it.get();
  }
  absl::flat_hash_map<std::string, double> spend;
  for (const auto& c : plan.node_claims) spend[c.instance_type] += c.effective_price;
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [name, money] : spend) ranked.emplace_back(money, name);
  std::sort(ranked.rbegin(), ranked.rend());
  for (const auto& [money, name] : ranked) {
    if (caps.size() >= 3) break;
    auto it = by_name.find(name);
    if (it != by_name.end()) caps.push_back(it->second);
  }
  // Cheap per vCPU among the first claim's options (sized at most its type).
  const cloudprovider::InstanceType* best = nullptr;
  double best_ratio = std::numeric_limits<double>::infinity();
  for (const auto& it : plan.node_claims.front().instance_types) {
    const Offering* o = nullptr;
    double price = std::numeric_limits<double>::infinity();
    for (const auto& off : it->offerings()) {
      if (off.available && off.EffectivePrice() < price) {
        price = off.EffectivePrice();
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
  AddCap(best, &caps);
  // Shaped like the demand.
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
        if (off.available) price = std::min(price, off.EffectivePrice());
      }
      const auto [cpu, mem] = CpuMemory(*it);
      if (!std::isfinite(price) || cpu < max_cpu || mem < max_mem) continue;
      double share = std::numeric_limits<double>::infinity();
      if (demand_cpu > 0) share = std::min(share, static_cast<double>(cpu) / demand_cpu);
      if (demand_mem > 0) share = std::min(share, static_cast<double>(mem) / demand_mem);
      if (!std::isfinite(share) || share <= 0) continue;
      shaped.emplace_back(price / share, it.get());
    }
  }
  std::sort(shaped.begin(), shaped.end());
  for (size_t i = 0; i < shaped.size() && i < 2; ++i) AddCap(shaped[i].second, &caps);
  return caps;
}

// Whether `cap` leaves out a type `plan` launches: a cap that admits them all admits every
// intermediate state of every NodeClaim too (pods are only added), so it would repeat the packing
// (up to zone choices).
bool Excludes(const cloudprovider::InstanceType& cap, const Plan& plan) {
  const auto [cap_cpu, cap_mem] = CpuMemory(cap);
  for (const auto& c : plan.node_claims) {
    if (c.instance_types.empty()) continue;
    const auto [cpu, mem] = CpuMemory(*c.instance_types.front());
    if (cpu > cap_cpu || mem > cap_mem) return true;
  }
  return false;
}

// Whether `alt` places every pod `plan` places (it must not trade one pod for another).
bool PlacesAllOf(const Plan& alt, const Plan& plan) {
  absl::flat_hash_set<const Pod*> left_out;
  for (const auto& u : plan.unschedulable) left_out.insert(u.pod);
  for (const auto& u : alt.unschedulable) {
    if (!left_out.contains(u.pod)) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<Plan> Solve(const Input& input) {
  std::vector<ResourceList> pod_requests;
  pod_requests.reserve(input.pods.size());
  for (const Pod* p : input.pods) {
    if (p == nullptr) return absl::InvalidArgumentError("null pod in input");
    pod_requests.push_back(apis::core::PodRequests(*p));
  }
  internal::SolverImpl base(input, input.pods, pod_requests, nullptr);
  absl::StatusOr<Plan> plan = base.Run();
  if (!plan.ok()) return plan;
  // Greedy packing lets a NodeClaim grow to the largest type before it is priced, which is not
  // always the cheapest way to buy the capacity. Re-pack with new NodeClaims capped at the sizes
  // the cheapest types of the first plan have, and keep the cheapest plan that places as many
  // pods. Re-packing costs several packings; skip it when it could save less than 1 %.
  if (input.options.improve && plan->node_claims.size() >= 2 &&
      RepackPotential(input, *plan) > 0.01 * plan->total_effective_price) {
    for (const auto* cap : CapCandidates(input, *plan, pod_requests)) {
      if (!Excludes(*cap, *plan)) continue;
      internal::SolverImpl capped(input, input.pods, pod_requests, cap);
      absl::StatusOr<Plan> alt = capped.Run();
      if (!alt.ok()) continue;
      if (PlacesAllOf(*alt, *plan) &&
          alt->total_effective_price < plan->total_effective_price - 1e-9) {
        plan = std::move(alt);
      }
    }
  }
  if (input.options.lower_bound) {
    absl::StatusOr<double> bound = LowerBound(input, *plan);
    if (bound.ok()) {
      plan->lower_bound = *bound;
    } else {
      plan->lower_bound_error = std::string(bound.status().message());
    }
  }
  return plan;
}

absl::StatusOr<double> LowerBound(const Input& input, const Plan& plan) {
  std::vector<ResourceList> pod_requests;
  pod_requests.reserve(input.pods.size());
  for (const Pod* p : input.pods) {
    if (p == nullptr) return absl::InvalidArgumentError("null pod in input");
    pod_requests.push_back(apis::core::PodRequests(*p));
  }
  absl::flat_hash_set<const Pod*> left_out;
  for (const auto& u : plan.unschedulable) left_out.insert(u.pod);
  std::vector<const Pod*> placed;
  for (const Pod* p : input.pods) {
    if (!left_out.contains(p)) placed.push_back(p);
  }
  internal::SolverImpl impl(input, input.pods, pod_requests, nullptr);
  return impl.LowerBound(placed);
}

}  // namespace dovetail::solver
