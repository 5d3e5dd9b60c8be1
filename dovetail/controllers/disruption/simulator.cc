// The scheduling simulation of disruption's drift and consolidation (docs/scheduling.md,
// "Disruption simulations"): the solver's input built once per view into a solver::Session, then
// one question per candidate set.
#include <algorithm>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/controllers/disruption/disruption.h"
#include "dovetail/controllers/launch/node_claim_builder.h"
#include "dovetail/scenario/pod_filter.h"
#include "dovetail/scenario/pool_template.h"
#include "dovetail/scenario/solver_nodes.h"
#include "dovetail/solver/session.h"
#include "dovetail/state/pod_conversion.h"

namespace dovetail::controllers::disruption {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;

std::string PodKey(const core::Pod& pod) {
  return absl::StrCat(pod.metadata.namespace_, "/", pod.metadata.name);
}

class SolveSimulator final : public Simulator {
 public:
  absl::Status Init(const ClusterView& view, const Options& options) {
    ASSIGN_OR_RETURN(existing_, scenario::ToSolverNodes(view.snapshot));
    solver::Input base;
    existing_.AppendTo(base);
    for (size_t i = 0; i < base.nodes.size(); ++i) node_index_[base.nodes[i].name] = i;
    for (const auto& pod : existing_.pods) bound_by_key_[PodKey(*pod)] = pod.get();

    // NodePools, by name for a deterministic input.
    std::vector<const v1::NodePool*> pools;
    for (const auto& [name, pool] : view.node_pools) pools.push_back(&pool);
    std::sort(pools.begin(), pools.end(), [](const v1::NodePool* a, const v1::NodePool* b) {
      return a->metadata.name < b->metadata.name;
    });
    for (const v1::NodePool* pool : pools) {
      if (pool->metadata.deletion_timestamp.has_value() || v1::IsStatic(*pool)) continue;
      auto types = view.instance_types.find(pool->metadata.name);
      if (types == view.instance_types.end()) continue;
      ASSIGN_OR_RETURN(
          solver::PoolTemplate t,
          scenario::BuildPoolTemplate(*pool, {}, view.snapshot.RemainingLimits(*pool)));
      for (const cloudprovider::InstanceTypePtr& type : types->second) {
        if (type == nullptr) continue;
        if (!cloudprovider::RequirementsIntersect(type->requirements(), t.requirements)) continue;
        if (!type->offerings().Available().HasCompatible(t.requirements)) continue;
        t.instance_types.push_back(type);
      }
      if (t.instance_types.empty()) continue;
      base.pools.push_back(std::move(t));
    }

    for (const core::DaemonSet& ds : view.daemon_sets) {
      owned_.push_back(scenario::DaemonSetPod(ds));
      base.daemon_sets.push_back(
          {absl::StrCat(ds.metadata.namespace_, "/", ds.metadata.name), owned_.back().get()});
    }
    for (const auto& [ns, labels] : view.namespace_labels) base.namespace_labels[ns] = labels;

    // Pending pods, then the pods of nodes that are going away.
    for (const state::PodPtr& info : view.pending_pods) {
      absl::StatusOr<core::Pod> pod = state::ToPod(*info);
      if (!pod.ok()) continue;  // provisioning reports it
      owned_.push_back(std::make_unique<core::Pod>(std::move(*pod)));
      base.pods.push_back(owned_.back().get());
    }
    for (const state::StateNode& node : view.snapshot.nodes) {
      if (node.Active()) continue;
      auto pods = view.snapshot.pods_by_node.find(node.Name());
      if (pods == view.snapshot.pods_by_node.end()) continue;
      for (const state::PodPtr& info : pods->second) {
        if (!scenario::IsReschedulable(*info, view.now)) continue;
        absl::StatusOr<core::Pod> pod = state::ToPod(*info);
        if (!pod.ok()) continue;
        pod->spec.node_name.clear();
        owned_.push_back(std::make_unique<core::Pod>(std::move(*pod)));
        base.pods.push_back(owned_.back().get());
        deleting_pods_.insert(owned_.back().get());
      }
    }
    std::sort(base.pods.begin(), base.pods.end(), [](const core::Pod* a, const core::Pod* b) {
      return std::tie(a->metadata.namespace_, a->metadata.name) <
             std::tie(b->metadata.namespace_, b->metadata.name);
    });

    base.options.respect_preferences = options.respect_preferences;
    base.options.min_values_strict = options.min_values_strict;
    base.options.improve = false;
    base.options.lower_bound = false;
    ASSIGN_OR_RETURN(session_, solver::Session::Create(std::move(base)));
    return absl::OkStatus();
  }

  absl::StatusOr<Result> Simulate(std::span<const Candidate> candidates) const override {
    std::vector<size_t> removed;
    std::vector<const core::Pod*> moved;
    std::vector<std::unique_ptr<core::Pod>> converted;  // pods the base input does not hold
    for (const Candidate& c : candidates) {
      auto it = node_index_.find(c.name);
      if (it != node_index_.end()) removed.push_back(it->second);
      for (const state::PodPtr& info : c.reschedulable) {
        auto pod = bound_by_key_.find(info->meta.Key());
        if (pod != bound_by_key_.end()) {
          moved.push_back(pod->second);
          continue;
        }
        ASSIGN_OR_RETURN(core::Pod copy, state::ToPod(*info));
        converted.push_back(std::make_unique<core::Pod>(std::move(copy)));
        moved.push_back(converted.back().get());
      }
    }
    std::sort(removed.begin(), removed.end());
    removed.erase(std::unique(removed.begin(), removed.end()), removed.end());

    ASSIGN_OR_RETURN(solver::Plan plan, Run(removed, moved));

    Result result;
    const absl::flat_hash_set<const core::Pod*> moved_set(moved.begin(), moved.end());
    for (const solver::Unschedulable& u : plan.unschedulable) {
      if (moved_set.contains(u.pod) || deleting_pods_.contains(u.pod)) {
        result.unschedulable.emplace_back(PodKey(*u.pod), u.reason);
      }
    }
    // Disruption must not count on nodes that are not initialized yet.
    absl::flat_hash_map<std::string_view, const solver::ExistingNode*> nodes;
    for (const solver::ExistingNode& n : session_->base().nodes) nodes[n.name] = &n;
    for (const solver::ExistingPlacement& placement : plan.existing) {
      auto n = nodes.find(placement.node);
      if (n == nodes.end() || n->second->initialized) continue;
      for (const core::Pod* pod : placement.pods) {
        if (deleting_pods_.contains(pod) || !moved_set.contains(pod)) continue;
        result.uses_uninitialized_nodes = true;
        result.unschedulable.emplace_back(
            PodKey(*pod),
            absl::StrCat("would schedule against uninitialized node \"", placement.node, "\""));
      }
    }
    result.plan = std::move(plan);
    return result;
  }

 private:
  absl::StatusOr<solver::Plan> Run(std::span<const size_t> removed,
                                   std::span<const core::Pod* const> moved) const {
    return session_->Simulate(removed, moved);
  }

  scenario::SolverNodes existing_;
  std::vector<std::unique_ptr<core::Pod>> owned_;
  std::unique_ptr<solver::Session> session_;
  absl::flat_hash_map<std::string, size_t> node_index_;
  absl::flat_hash_map<std::string, const core::Pod*> bound_by_key_;
  absl::flat_hash_set<const core::Pod*> deleting_pods_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Simulator>> Simulator::Create(const ClusterView& view,
                                                             const Options& options) {
  auto simulator = std::make_unique<SolveSimulator>();
  RETURN_IF_ERROR(simulator->Init(view, options));
  return simulator;
}

}  // namespace dovetail::controllers::disruption
