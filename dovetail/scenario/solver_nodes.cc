#include "dovetail/scenario/solver_nodes.h"

#include <utility>

namespace dovetail::scenario {

namespace core = apis::core;

solver::ExistingNode ToExistingNode(const state::StateNode& node) {
  solver::ExistingNode out;
  out.name = node.Name();
  out.labels = node.Labels();
  out.taints = node.Taints();
  if (node.node != nullptr && node.node->unschedulable) {
    core::Taint taint;
    taint.key = std::string(kTaintNodeUnschedulable);
    taint.effect = core::TaintEffect::kNoSchedule;
    out.taints.push_back(std::move(taint));
  }
  out.allocatable = node.Allocatable();
  out.node_pool = node.NodePool();
  out.initialized = node.Initialized();
  out.startup_taint_keys = node.StartupTaintKeys();
  return out;
}

SolverNodes ToSolverNodes(const state::Snapshot& snapshot, const SolverNodesOptions& options) {
  SolverNodes out;
  for (const state::StateNode& node : snapshot.nodes) {
    if (!node.Launched()) continue;  // nothing known about its shape yet
    if (!options.include_inactive && !node.Active()) continue;
    out.nodes.push_back(ToExistingNode(node));
    auto pods = snapshot.pods_by_node.find(out.nodes.back().name);
    if (pods == snapshot.pods_by_node.end()) continue;
    for (const state::PodPtr& info : pods->second) {
      out.pods.push_back(ConvertPod(info, options.pods));
    }
  }
  return out;
}

void SolverNodes::AppendTo(solver::Input& input) const {
  input.nodes.insert(input.nodes.end(), nodes.begin(), nodes.end());
  for (const auto& pod : pods) input.bound_pods.push_back(pod.get());
}

}  // namespace dovetail::scenario
