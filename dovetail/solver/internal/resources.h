// Resource dimensions: every resource name the question mentions is interned to an index (cpu 0,
// memory 1, pods 2, ephemeral-storage 3, then first use); an Amounts vector holds milli-units per
// index. Amounts saturate at INT64_MAX instead of overflowing (dovetail/common/saturating.h).
// Value types; thread-compatible.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "dovetail/common/saturating.h"
#include "dovetail/solver/internal/names.h"
#include "dovetail/solver/solver.h"

namespace dovetail::solver::internal {

using Amounts = absl::InlinedVector<int64_t, 6>;

class ResourceIndex {
 public:
  ResourceIndex() {
    for (std::string_view n : {"cpu", "memory", "pods", "ephemeral-storage"}) Intern(n);
  }
  int Intern(std::string_view name) {
    auto it = ids_.find(std::string(name));
    if (it != ids_.end()) return it->second;
    int id = static_cast<int>(names_.size());
    names_.emplace_back(name);
    ids_.emplace(names_.back(), id);
    return id;
  }
  void InternAll(const ResourceList& list) {
    for (const auto& [name, _] : list) Intern(name);
  }
  size_t size() const { return names_.size(); }
  const std::string& name(size_t i) const { return names_[i]; }
  Amounts ToAmounts(const ResourceList& list) const {
    Amounts a(names_.size(), 0);
    for (const auto& [name, q] : list) {
      auto it = ids_.find(name);
      if (it != ids_.end()) a[it->second] = q.MilliValue();
    }
    return a;
  }
  ResourceList ToList(const Amounts& a) const {
    ResourceList out;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] == 0) continue;
      QuantityFormat f = names_[i] == "memory" || names_[i] == "ephemeral-storage"
                             ? QuantityFormat::kBinarySI
                             : QuantityFormat::kDecimalSI;
      out[names_[i]] = Quantity::FromMilli(a[i], f);
    }
    return out;
  }

 private:
  std::vector<std::string> names_;
  absl::flat_hash_map<std::string, int> ids_;
};

inline bool Fits(const Amounts& used, const Amounts& add, const Amounts& cap) {
  for (size_t i = 0; i < add.size(); ++i) {
    // Amounts are saturated at INT64_MAX but otherwise finite: a saturated request fills a
    // saturated capacity (cap - used cannot overflow: both are within [0, INT64_MAX]).
    if (add[i] > cap[i] - used[i]) return false;
  }
  return true;
}
inline bool FitsIn(const Amounts& used, const Amounts& cap) {
  for (size_t i = 0; i < used.size(); ++i) {
    if (used[i] > cap[i]) return false;
  }
  return true;
}
inline void AddTo(Amounts& a, const Amounts& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] = SaturatingAdd(a[i], b[i]);
}
inline void SubFloor(Amounts& a, const Amounts& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::max<int64_t>(0, SaturatingSub(a[i], b[i]));
}

}  // namespace dovetail::solver::internal
