// Catalog: the instance types a CloudProvider offers, sorted by name, with an index by name. The
// position of a type in the catalog is its stable index for the scheduler's TypeSet bitsets (same
// input => same order, whatever order the provider produced them in).
// Immutable after construction; safe to share and read from any number of threads.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "dovetail/cloudprovider/instance_type.h"

namespace dovetail::cloudprovider {

class Catalog {
 public:
  Catalog() = default;
  // Sorts `types` by name. Errors: InvalidArgument for a null entry or a duplicate name.
  static absl::StatusOr<Catalog> Create(std::vector<InstanceTypePtr> types);

  size_t size() const { return types_.size(); }
  bool empty() const { return types_.empty(); }
  const InstanceTypePtr& operator[](size_t index) const { return types_[index]; }
  std::vector<InstanceTypePtr>::const_iterator begin() const { return types_.begin(); }
  std::vector<InstanceTypePtr>::const_iterator end() const { return types_.end(); }
  const std::vector<InstanceTypePtr>& instance_types() const { return types_; }

  // The type named `name`, or nullptr.
  const InstanceType* Find(std::string_view name) const;
  // The position of `name` in the catalog, or nullopt.
  std::optional<size_t> IndexOf(std::string_view name) const;

 private:
  std::vector<InstanceTypePtr> types_;
  absl::flat_hash_map<std::string_view, size_t> index_;  // views into types_[i]->name()
};

}  // namespace dovetail::cloudprovider
