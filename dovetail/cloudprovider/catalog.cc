#include "dovetail/cloudprovider/catalog.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dovetail::cloudprovider {

absl::StatusOr<Catalog> Catalog::Create(std::vector<InstanceTypePtr> types) {
  for (const InstanceTypePtr& type : types) {
    if (type == nullptr) return absl::InvalidArgumentError("catalog: null instance type");
  }
  std::sort(types.begin(), types.end(), [](const InstanceTypePtr& a, const InstanceTypePtr& b) {
    return a->name() < b->name();
  });
  Catalog catalog;
  catalog.index_.reserve(types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    if (!catalog.index_.emplace(types[i]->name(), i).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("catalog: duplicate instance type \"", types[i]->name(), "\""));
    }
  }
  // The index holds views into the names, which live in the (heap-allocated, immutable) instance
  // types; moving the vector does not move them.
  catalog.types_ = std::move(types);
  return catalog;
}

const InstanceType* Catalog::Find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : types_[it->second].get();
}

std::optional<size_t> Catalog::IndexOf(std::string_view name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

}  // namespace dovetail::cloudprovider
