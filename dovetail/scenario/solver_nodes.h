// The solver's view of a cluster state snapshot (state/snapshot.h): every launched, active
// StateNode becomes a solver::ExistingNode (an in-flight NodeClaim without a Node included, with
// the NodeClaim's labels, taints and estimated allocatable) and the pods bound to those nodes
// become Input::bound_pods.
//
// Nodes whose spec.unschedulable is set get the node.kubernetes.io/unschedulable:NoSchedule taint
// in the solver's view: the kube-scheduler's NodeUnschedulable filter is exactly that taint, so
// only pods that tolerate it may be placed there.
//
// SolverNodes holds the pods the solver input points into and must outlive it. The pods are
// converted once per pod version when a PodCache is given (pod_cache.h), else each time. Pure
// functions (but for the cache); thread-compatible values.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/scenario/pod_cache.h"
#include "dovetail/solver/solver.h"
#include "dovetail/state/snapshot.h"
#include "dovetail/state/state_node.h"

namespace dovetail::scenario {

inline constexpr std::string_view kTaintNodeUnschedulable = "node.kubernetes.io/unschedulable";

struct SolverNodesOptions {
  // Also convert StateNodes that are marked for deletion or deleting (disruption simulations);
  // provisioning leaves them out, their pods being rescheduled elsewhere.
  bool include_inactive = false;
  // Where the bound pods' conversions are kept between calls; null converts each pod.
  PodCache* pods = nullptr;
};

// The solver's view of a snapshot. Holds the converted pods.
struct SolverNodes {
  std::vector<solver::ExistingNode> nodes;
  std::vector<SharedPod> pods;  // bound to `nodes`

  // Appends `nodes` and pointers to `pods` to the input, which then points into this object.
  void AppendTo(solver::Input& input) const;
};

solver::ExistingNode ToExistingNode(const state::StateNode& node);

SolverNodes ToSolverNodes(const state::Snapshot& snapshot, const SolverNodesOptions& options = {});

}  // namespace dovetail::scenario
