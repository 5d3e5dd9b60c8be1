// Snapshot: the StateNodes of the cluster and the pods bound to them, copied at one instant by
// Cluster::TakeSnapshot() (cluster.h says when to take it), with each NodePool's usage. The
// scenario library turns it into the solver's input (dovetail/scenario/solver_nodes.h).
//
// A Snapshot is a value (shared immutable objects inside). Thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/common/quantity.h"
#include "dovetail/state/state_node.h"

namespace dovetail::state {
struct Snapshot {
  absl::Time taken = absl::InfinitePast();
  std::vector<StateNode> nodes;  // ordered by key
  // Non-terminal pods bound to each node name of `nodes`, ordered by namespace/name.
  absl::flat_hash_map<std::string, std::vector<PodPtr>> pods_by_node;
  // Cluster::NodePoolUsage of every pool that has machines.
  absl::flat_hash_map<std::string, ResourceList> node_pool_usage;

  // Room left under the pool's spec.limits (limits minus usage, per limited resource; may be
  // negative when a pool is over its limits); nullopt when the pool has no limits.
  std::optional<ResourceList> RemainingLimits(const apis::v1::NodePool& node_pool) const;
};

}  // namespace dovetail::state
