#include "dovetail/state/snapshot.h"

namespace dovetail::state {

std::optional<ResourceList> Snapshot::RemainingLimits(const apis::v1::NodePool& node_pool) const {
  if (node_pool.spec.limits.empty()) return std::nullopt;
  ResourceList remaining = node_pool.spec.limits;
  auto usage = node_pool_usage.find(node_pool.metadata.name);
  if (usage == node_pool_usage.end()) return remaining;
  for (auto& [name, quantity] : remaining) {
    auto used = usage->second.find(name);
    if (used != usage->second.end()) quantity -= used->second;
  }
  return remaining;
}

}  // namespace dovetail::state
