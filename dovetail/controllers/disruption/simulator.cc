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
#include "dovetail/scenario/solver_input.h"
#include "dovetail/solver/session.h"

namespace dovetail::controllers::disruption {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;

std::string PodKey(const core::Pod& pod) {
  return absl::StrCat(pod.metadata.namespace_, "/", pod.metadata.name);
}

class SolveSimulator final : public Simulator {
 public:
  absl::Status Init(const ClusterView& view, const Options& options, scenario::PodCache* pods) {
    pods_ = pods;
    question_ = scenario::BuildSolverInput(
        view, {.solver = {.respect_preferences = options.respect_preferences,
                          .min_values_strict = options.min_values_strict,
                          .improve = false,
                          .lower_bound = false},
               .pods = pods});
    const solver::Input& base = question_.input;
    for (size_t i = 0; i < base.nodes.size(); ++i) node_index_[base.nodes[i].name] = i;
    for (const auto& pod : question_.existing.pods) bound_by_key_[PodKey(*pod)] = pod.get();
    ASSIGN_OR_RETURN(session_, solver::Session::Create(std::move(question_.input)));
    return absl::OkStatus();
  }

  absl::StatusOr<Result> Simulate(std::span<const Candidate> candidates) const override {
    std::vector<size_t> removed;
    std::vector<const core::Pod*> moved;
    std::vector<scenario::SharedPod> converted;  // pods the base input does not hold
    for (const Candidate& c : candidates) {
      auto it = node_index_.find(c.name);
      if (it != node_index_.end()) removed.push_back(it->second);
      for (const state::PodPtr& info : c.reschedulable) {
        auto pod = bound_by_key_.find(info->meta.Key());
        if (pod != bound_by_key_.end()) {
          moved.push_back(pod->second);
          continue;
        }
        converted.push_back(scenario::ConvertPod(info, pods_));
        moved.push_back(converted.back().get());
      }
    }
    std::sort(removed.begin(), removed.end());
    removed.erase(std::unique(removed.begin(), removed.end()), removed.end());

    ASSIGN_OR_RETURN(solver::Plan plan, Run(removed, moved));

    Result result;
    const absl::flat_hash_set<const core::Pod*> moved_set(moved.begin(), moved.end());
    for (const solver::Unschedulable& u : plan.unschedulable) {
      if (moved_set.contains(u.pod) || question_.rescheduled.contains(u.pod)) {
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
        if (question_.rescheduled.contains(pod) || !moved_set.contains(pod)) continue;
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

  scenario::PodCache* pods_ = nullptr;  // not owned; may be null
  // Holds what the session's input points into (its input moved into the session).
  scenario::SolverQuestion question_;
  std::unique_ptr<solver::Session> session_;
  absl::flat_hash_map<std::string, size_t> node_index_;
  absl::flat_hash_map<std::string, const core::Pod*> bound_by_key_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Simulator>> Simulator::Create(const ClusterView& view,
                                                             const Options& options,
                                                             scenario::PodCache* pods) {
  auto simulator = std::make_unique<SolveSimulator>();
  RETURN_IF_ERROR(simulator->Init(view, options, pods));
  return simulator;
}

}  // namespace dovetail::controllers::disruption
