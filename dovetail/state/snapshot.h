// Snapshot: the StateNodes of the cluster and the pods bound to them, copied at one instant by
// Cluster::TakeSnapshot() (cluster.h says when to take it), and its conversion into the solver's
// input: every launched, active StateNode becomes a solver::ExistingNode (an in-flight NodeClaim
// without a Node included, with the NodeClaim's labels, taints and estimated allocatable), the
// pods bound to those nodes become Input::bound_pods, and NodePool usage gives each pool's
// remaining limits.
//
// Nodes whose spec.unschedulable is set get the node.kubernetes.io/unschedulable:NoSchedule taint
// in the solver's view: the kube-scheduler's NodeUnschedulable filter is exactly that taint, so
// only pods that tolerate it may be placed there.
//
// A Snapshot is a value (shared immutable objects inside); SolverNodes owns the pods the solver
// input points into and must outlive it. Thread-compatible.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/common/quantity.h"
#include "dovetail/solver/solver.h"
#include "dovetail/state/state_node.h"

namespace dovetail::state {

inline constexpr std::string_view kTaintNodeUnschedulable = "node.kubernetes.io/unschedulable";

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

struct SolverNodesOptions {
  // Also convert StateNodes that are marked for deletion or deleting (disruption simulations);
  // provisioning leaves them out, their pods being rescheduled elsewhere.
  bool include_inactive = false;
};

// The solver's view of a snapshot. Owns the converted pods.
struct SolverNodes {
  std::vector<solver::ExistingNode> nodes;
  std::vector<std::unique_ptr<apis::core::Pod>> pods;  // bound to `nodes`

  // Appends `nodes` and pointers to `pods` to the input, which then points into this object.
  void AppendTo(solver::Input& input) const;
};

solver::ExistingNode ToExistingNode(const StateNode& node);

// Errors: InvalidArgument when a bound pod's affinity or topology spread does not decode.
absl::StatusOr<SolverNodes> ToSolverNodes(const Snapshot& snapshot,
                                          const SolverNodesOptions& options = {});

}  // namespace dovetail::state
