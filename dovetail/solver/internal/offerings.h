// Offerings as bits: every distinct (zone, capacity type) of the catalog is a "pair" with an index
// and a bit in a PairMask, so the offerings a NodeClaim may still use are one bitset AND. TypeInfo
// is one instance type with its amounts and its price per pair (+inf where it has no available
// offering). At most kMaxPairs pairs. Value types; thread-compatible.
#pragma once

#include <algorithm>
#include <bitset>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "dovetail/solver/internal/names.h"
#include "dovetail/solver/internal/resources.h"
#include "dovetail/solver/solver.h"

namespace dovetail::solver::internal {

constexpr double kInfPrice = std::numeric_limits<double>::infinity();
constexpr size_t kMaxPairs = 256;
using PairMask = std::bitset<kMaxPairs>;

struct PairTable {
  std::vector<std::string> zones;
  std::vector<std::string> capacity_types;
  std::vector<Requirements> requirements;  // zone In [z], capacity-type In [ct] (+ zone-id)
  absl::flat_hash_map<std::pair<std::string, std::string>, int> index;
  std::vector<std::string> keys;  // every key the pairs' requirements use
  PairMask all;

  absl::StatusOr<int> Intern(const cloudprovider::Offering& o) {
    auto key = std::make_pair(o.zone, o.capacity_type);
    auto it = index.find(key);
    if (it != index.end()) return it->second;
    if (zones.size() >= kMaxPairs) {
      return absl::InvalidArgumentError(
          absl::StrCat("more than ", kMaxPairs, " zone/capacity-type combinations in the catalog"));
    }
    int id = static_cast<int>(zones.size());
    zones.push_back(o.zone);
    capacity_types.push_back(o.capacity_type);
    requirements.push_back(o.requirements);
    index.emplace(key, id);
    all.set(id);
    for (const auto& r : o.requirements) {
      if (std::find(keys.begin(), keys.end(), r.key()) == keys.end()) keys.push_back(r.key());
    }
    return id;
  }
  // The pairs whose offering requirements intersect `reqs` (cloudprovider::RequirementsIntersect,
  // looking only at the keys offerings use).
  PairMask Allowed(const Requirements& reqs) const {
    const Requirement* found[8];
    size_t n = 0;
    for (const auto& k : keys) {
      const Requirement* r = reqs.Find(k);
      if (r == nullptr) continue;
      if (n == std::size(found)) return AllowedSlow(reqs);
      found[n++] = r;
    }
    if (n == 0) return all;
    PairMask m;
    for (size_t i = 0; i < requirements.size(); ++i) {
      bool ok = true;
      for (size_t j = 0; j < n && ok; ++j) {
        const Requirement* pr = requirements[i].Find(found[j]->key());
        if (pr == nullptr) continue;
        if (IsNegativeRequirement(*pr) && IsNegativeRequirement(*found[j])) continue;
        ok = pr->Intersects(*found[j]);
      }
      if (ok) m.set(i);
    }
    return m;
  }
  PairMask AllowedSlow(const Requirements& reqs) const {
    PairMask m;
    for (size_t i = 0; i < requirements.size(); ++i) {
      if (cloudprovider::RequirementsIntersect(requirements[i], reqs)) m.set(i);
    }
    return m;
  }
  static bool IsNegativeRequirement(const Requirement& r) {
    return r.Operator() == apis::core::SelectorOperator::kNotIn ||
           r.Operator() == apis::core::SelectorOperator::kDoesNotExist;
  }
};

struct TypeInfo {
  InstanceTypePtr type;
  Amounts allocatable;
  Amounts capacity;
  PairMask available;
  // Per pair: the lowest effective price of an available offering (+inf when there is none), and
  // that offering's node_price (what the effective price adds to its offering price).
  std::vector<double> pair_price;
  std::vector<double> pair_node_price;
};

}  // namespace dovetail::solver::internal
