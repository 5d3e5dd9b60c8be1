#include "dovetail/scenario/solver_input.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/scenario/pod_filter.h"
#include "dovetail/scenario/pool_template.h"

namespace dovetail::scenario {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;

using Why = SkippedNodePool::Why;

// Why `pool` is not used at all, before its instance types are looked at.
std::optional<SkippedNodePool> Unusable(const v1::NodePool& pool, bool require_ready) {
  auto skip = [&pool](Why why, std::string reason) {
    return SkippedNodePool{.name = pool.metadata.name, .why = why, .reason = std::move(reason)};
  };
  if (pool.metadata.deletion_timestamp.has_value()) return skip(Why::kDeleting, "being deleted");
  if (v1::IsStatic(pool)) {
    return skip(Why::kStatic, "static NodePool (replicas): not provisioned for pending pods");
  }
  const core::Condition* ready = v1::FindCondition(pool.status.conditions, "Ready");
  if (ready == nullptr ? require_ready : ready->status != core::ConditionStatus::kTrue) {
    return skip(Why::kNotReady, require_ready ? "not Ready=True" : "Ready is not True");
  }
  return std::nullopt;
}

// Step 1: the NodePools, each as a template with its compatible instance types, or skipped.
void AddPools(const Scenario& scenario, bool require_ready, SolverQuestion& q) {
  std::vector<const v1::NodePool*> pools;
  for (const auto& [name, pool] : scenario.node_pools) pools.push_back(&pool);
  std::sort(pools.begin(), pools.end(), [](const v1::NodePool* a, const v1::NodePool* b) {
    return a->metadata.name < b->metadata.name;
  });
  for (const v1::NodePool* pool : pools) {
    const std::string& name = pool->metadata.name;
    if (std::optional<SkippedNodePool> skip = Unusable(*pool, require_ready)) {
      q.skipped.push_back(*std::move(skip));
      continue;
    }
    auto types = scenario.instance_types.find(name);
    if (types == scenario.instance_types.end()) {
      auto error = scenario.instance_type_errors.find(name);
      const absl::Status status = error != scenario.instance_type_errors.end()
                                      ? error->second
                                      : absl::NotFoundError("no instance types resolved");
      q.skipped.push_back({.name = name,
                           .why = Why::kInstanceTypes,
                           .reason = Cat("instance types: ", status.message()),
                           .error = status});
      continue;
    }
    absl::StatusOr<solver::PoolTemplate> t =
        BuildPoolTemplate(*pool, {}, scenario.snapshot.RemainingLimits(*pool));
    if (!t.ok()) {
      q.skipped.push_back({.name = name,
                           .why = Why::kInvalid,
                           .reason = std::string(t.status().message()),
                           .error = t.status()});
      continue;
    }
    for (const cloudprovider::InstanceTypePtr& type : types->second) {
      if (type == nullptr) continue;
      if (!cloudprovider::RequirementsIntersect(type->requirements(), t->requirements)) continue;
      if (!type->offerings().Available().HasCompatible(t->requirements)) continue;
      t->instance_types.push_back(type);
    }
    if (t->instance_types.empty()) {
      q.skipped.push_back({.name = name,
                           .why = Why::kNoCompatibleInstanceTypes,
                           .reason = kNoCompatibleInstanceTypesMessage});
      continue;
    }
    q.input.pools.push_back(*std::move(t));
  }
}

// Step 2: the pods to place: pending pods that are not ignored, then the pods of nodes going away.
void AddPods(const Scenario& scenario, PodCache* cache, SolverQuestion& q) {
  for (const state::PodPtr& info : scenario.pending_pods) {
    SharedPod owned = ConvertPod(info, cache);
    if (info->has_dra_requirements) {
      q.ignored.push_back({.pod = std::move(owned), .message = std::string(kDraIgnoredMessage)});
      continue;
    }
    if (std::optional<IgnoreReason> why = IgnoredReason(*owned)) {
      q.ignored.push_back({.pod = std::move(owned),
                           .message = why->silent ? "" : why->message,
                           .silent = why->silent});
      continue;
    }
    q.pods.push_back(std::move(owned));
  }
  for (const state::StateNode& node : scenario.snapshot.nodes) {
    if (node.Active()) continue;
    auto pods = scenario.snapshot.pods_by_node.find(node.Name());
    if (pods == scenario.snapshot.pods_by_node.end()) continue;
    for (const state::PodPtr& info : pods->second) {
      if (!IsReschedulable(*info, scenario.now)) continue;
      auto pod = std::make_shared<core::Pod>(*ConvertPod(info, cache));
      pod->spec.node_name.clear();  // to be placed again
      q.pods.push_back(std::move(pod));
      q.rescheduled.insert(q.pods.back().get());
    }
  }
  // A deterministic order (the solver sorts too; this keeps the callers' event order stable).
  std::sort(q.pods.begin(), q.pods.end(), [](const auto& a, const auto& b) {
    return std::tie(a->metadata.namespace_, a->metadata.name) <
           std::tie(b->metadata.namespace_, b->metadata.name);
  });
  for (const auto& pod : q.pods) q.input.pods.push_back(pod.get());
  std::sort(q.ignored.begin(), q.ignored.end(), [](const IgnoredPod& a, const IgnoredPod& b) {
    return std::tie(a.pod->metadata.namespace_, a.pod->metadata.name) <
           std::tie(b.pod->metadata.namespace_, b.pod->metadata.name);
  });
}

// Step 3: DaemonSets as the pods they run on a new node, and namespace labels.
void AddDaemonSetsAndNamespaces(const Scenario& scenario, SolverQuestion& q) {
  std::vector<const core::DaemonSet*> daemon_sets;
  for (const core::DaemonSet& ds : scenario.daemon_sets) daemon_sets.push_back(&ds);
  std::sort(daemon_sets.begin(), daemon_sets.end(),
            [](const core::DaemonSet* a, const core::DaemonSet* b) {
              return std::tie(a->metadata.namespace_, a->metadata.name) <
                     std::tie(b->metadata.namespace_, b->metadata.name);
            });
  for (const core::DaemonSet* ds : daemon_sets) {
    if (HasDraRequirements(ds->spec.template_.spec)) continue;  // as upstream (pod_filter.h)
    q.daemon_pods.push_back(DaemonSetPod(*ds));
    q.input.daemon_sets.push_back(
        {Cat(ds->metadata.namespace_, "/", ds->metadata.name), q.daemon_pods.back().get()});
  }
  for (const auto& [ns, labels] : scenario.namespace_labels) q.input.namespace_labels[ns] = labels;
}

// Step 4: the volume topology of the pods to place and of the bound pods.
void AddVolumeTopology(const Scenario& scenario, SolverQuestion& q) {
  if (scenario.volumes.claims.empty()) return;
  const VolumeTopology topology(scenario.volumes);
  auto add = [&](const core::Pod* pod) {
    if (auto alternatives = topology.Alternatives(*pod)) {
      q.input.volume_requirements[pod] = *std::move(alternatives);
    }
  };
  for (const core::Pod* pod : q.input.pods) add(pod);
  for (const core::Pod* pod : q.input.bound_pods) add(pod);
}

}  // namespace

SolverQuestion BuildSolverInput(const Scenario& scenario, const InputOptions& options) {
  SolverQuestion q;
  q.existing = ToSolverNodes(scenario.snapshot, {.pods = options.pods});
  q.existing.AppendTo(q.input);
  AddPools(scenario, options.require_ready_node_pools, q);
  AddPods(scenario, options.pods, q);
  AddDaemonSetsAndNamespaces(scenario, q);
  AddVolumeTopology(scenario, q);
  q.input.options = options.solver;
  if (options.pods != nullptr) options.pods->Sweep();
  return q;
}

}  // namespace dovetail::scenario
