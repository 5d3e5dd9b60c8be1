#include "dovetail/controllers/launch/on_demand_base.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::controllers::launch {
namespace {

namespace v1 = apis::v1;
using cloudprovider::InstanceTypePtr;
using scheduling::Requirement;
using scheduling::Requirements;

// Whether `types` still offer every minValues of `requirements`.
bool KeepsMinValues(const std::vector<InstanceTypePtr>& types, const Requirements& requirements) {
  for (const Requirement& r : requirements) {
    if (!r.min_values().has_value()) continue;
    absl::flat_hash_set<std::string> values;
    for (const InstanceTypePtr& type : types) {
      const Requirement* own = type->requirements().Find(r.key());
      if (own == nullptr || own->complement()) continue;
      for (const std::string& v : own->values()) {
        if (r.Has(v)) values.insert(v);
      }
    }
    if (static_cast<int64_t>(values.size()) < *r.min_values()) return false;
  }
  return true;
}

}  // namespace

int64_t OnDemandBase::Required(int64_t total) const {
  if (total <= 0) return 0;
  if (percent.has_value()) return (*percent * total + 99) / 100;
  return std::min(count, total);
}

std::string OnDemandBase::String() const {
  return percent.has_value() ? absl::StrCat(*percent, "%") : absl::StrCat(count);
}

absl::StatusOr<OnDemandBase> ParseOnDemandBase(std::string_view value) {
  const absl::string_view v = absl::StripAsciiWhitespace(AsAbsl(value));
  auto invalid = [&] {
    return absl::InvalidArgumentError(
        Cat("invalid ", kOnDemandBaseAnnotationKey, " \"", value,
            "\": want a node count N (an integer >= 0) or a percentage P% (an integer 0-100)"));
  };
  const bool is_percent = !v.empty() && v.back() == '%';
  const absl::string_view digits = is_percent ? v.substr(0, v.size() - 1) : v;
  // Digits only: SimpleAtoi would also take signs and surrounding spaces ("+2", "2 %").
  if (digits.empty() || digits.size() > 9) return invalid();
  for (char c : digits) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return invalid();
  }
  int64_t n = 0;
  if (!absl::SimpleAtoi(digits, &n)) return invalid();
  OnDemandBase base;
  if (is_percent) {
    if (n > 100) return invalid();
    base.percent = n;
  } else {
    base.count = n;
  }
  return base;
}

absl::StatusOr<std::optional<OnDemandBase>> OnDemandBaseOf(const v1::NodePool& pool) {
  auto it = pool.metadata.annotations.find(std::string(kOnDemandBaseAnnotationKey));
  if (it == pool.metadata.annotations.end()) return std::nullopt;
  absl::StatusOr<OnDemandBase> base = ParseOnDemandBase(it->second);
  if (!base.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("NodePool/", pool.metadata.name, ": ", base.status().message()));
  }
  return *base;
}

bool AllowsSpotAndOnDemand(const Requirements& requirements) {
  const Requirement ct = requirements.Get(v1::kCapacityTypeLabelKey);
  return ct.Has(v1::kCapacityTypeSpot) && ct.Has(v1::kCapacityTypeOnDemand);
}

bool OnDemandOnly(const Requirements& requirements) {
  const Requirement* ct = requirements.Find(v1::kCapacityTypeLabelKey);
  return ct != nullptr && !ct->complement() && ct->values().size() == 1 &&
         ct->values().front() == v1::kCapacityTypeOnDemand;
}

bool IsOnDemand(const state::StateNode& node) {
  const apis::core::StringMap labels = node.Labels();
  auto it = labels.find(std::string(v1::kCapacityTypeLabelKey));
  if (it != labels.end()) return it->second == v1::kCapacityTypeOnDemand;
  if (node.node_claim == nullptr) return false;
  if (node.node != nullptr) {
    auto claimed = node.node_claim->metadata.labels.find(std::string(v1::kCapacityTypeLabelKey));
    if (claimed != node.node_claim->metadata.labels.end()) {
      return claimed->second == v1::kCapacityTypeOnDemand;
    }
  }
  absl::StatusOr<Requirements> reqs =
      Requirements::FromNodeSelectorRequirements(node.node_claim->spec.requirements);
  return reqs.ok() && OnDemandOnly(*reqs);
}

absl::flat_hash_map<std::string, CapacityCount> CountCapacityTypes(
    std::span<const state::StateNode> nodes) {
  absl::flat_hash_map<std::string, CapacityCount> out;
  for (const state::StateNode& node : nodes) {
    if (!node.Managed() || !node.Active()) continue;
    const std::string pool = node.NodePool();
    if (pool.empty()) continue;
    CapacityCount& count = out[pool];
    ++count.total;
    if (IsOnDemand(node)) ++count.on_demand;
  }
  return out;
}

absl::Status NarrowToOnDemand(solver::NewNodeClaim& claim) {
  const std::string ct_key(v1::kCapacityTypeLabelKey);
  if (!claim.requirements.Get(ct_key).Has(v1::kCapacityTypeOnDemand)) {
    return absl::FailedPreconditionError("its requirements do not admit on-demand");
  }
  Requirements reqs = claim.requirements;
  reqs.Add(Requirement::In(ct_key, {v1::kCapacityTypeOnDemand}));
  // Cheapest first by the on-demand offering the claim would be priced with.
  std::vector<std::pair<const cloudprovider::Offering*, InstanceTypePtr>> priced;
  for (const InstanceTypePtr& type : claim.instance_types) {
    const cloudprovider::Offering* o = type->CheapestOffering(reqs);
    if (o != nullptr) priced.emplace_back(o, type);
  }
  if (priced.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("none of its ", claim.instance_types.size(),
                     " instance types has an available on-demand offering compatible with its "
                     "requirements"));
  }
  std::stable_sort(priced.begin(), priced.end(), [](const auto& a, const auto& b) {
    if (a.first->EffectivePrice() != b.first->EffectivePrice()) {
      return a.first->EffectivePrice() < b.first->EffectivePrice();
    }
    return a.second->name() < b.second->name();
  });
  std::vector<InstanceTypePtr> types;
  std::vector<std::string> names;
  for (const auto& [offering, type] : priced) {
    types.push_back(type);
    names.push_back(type->name());
  }
  const std::string it_key(v1::kLabelInstanceType);
  std::optional<int32_t> min_values;
  if (const Requirement* old = reqs.Find(it_key)) min_values = old->min_values();
  reqs.Remove(it_key);
  Requirement in = Requirement::In(it_key, names);
  in.set_min_values(min_values);
  reqs.Add(std::move(in));
  if (!KeepsMinValues(types, reqs)) {
    return absl::FailedPreconditionError(
        "its on-demand instance types would no longer satisfy minValues");
  }
  const cloudprovider::Offering& cheapest = *priced.front().first;
  claim.requirements = std::move(reqs);
  claim.instance_types = std::move(types);
  claim.instance_type = claim.instance_types.front()->name();
  claim.zone = cheapest.zone;
  claim.capacity_type = cheapest.capacity_type;
  claim.price = cheapest.price;
  claim.effective_price = cheapest.EffectivePrice() + claim.node_overhead;
  return absl::OkStatus();
}

std::vector<OnDemandBaseOutcome> ApplyOnDemandBase(
    std::span<solver::NewNodeClaim> claims,
    const absl::flat_hash_map<std::string, OnDemandBase>& bases,
    const absl::flat_hash_map<std::string, CapacityCount>& existing) {
  absl::flat_hash_map<std::string, OnDemandBaseOutcome> by_pool;
  for (const solver::NewNodeClaim& claim : claims) {
    auto base = bases.find(claim.pool);
    if (base == bases.end()) continue;
    auto [it, inserted] = by_pool.try_emplace(claim.pool);
    OnDemandBaseOutcome& o = it->second;
    if (inserted) {
      o.pool = claim.pool;
      o.base = base->second;
      if (auto e = existing.find(claim.pool); e != existing.end()) {
        o.total = e->second.total;
        o.on_demand = e->second.on_demand;
      }
    }
    ++o.total;
    if (OnDemandOnly(claim.requirements)) ++o.on_demand;
  }
  for (auto& [pool, o] : by_pool) o.required = o.base.Required(o.total);
  for (solver::NewNodeClaim& claim : claims) {
    auto it = by_pool.find(claim.pool);
    if (it == by_pool.end()) continue;
    OnDemandBaseOutcome& o = it->second;
    if (o.Met() || !AllowsSpotAndOnDemand(claim.requirements)) continue;
    if (absl::Status narrowed = NarrowToOnDemand(claim); !narrowed.ok()) {
      o.failures.push_back(absl::StrCat(claim.hostname, ": ", narrowed.message()));
      continue;
    }
    ++o.narrowed;
    ++o.on_demand;
  }
  std::vector<OnDemandBaseOutcome> out;
  out.reserve(by_pool.size());
  for (auto& [pool, o] : by_pool) out.push_back(std::move(o));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.pool < b.pool; });
  return out;
}

}  // namespace dovetail::controllers::launch
