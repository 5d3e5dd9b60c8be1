// Test-only: the scene the tests of the disruption decisions (disruption.h) build, shared by
// disruption_test.cc and disruption_on_demand_base_test.cc.
//   - Scene: a ClusterView at kNow of NodePools, Nodes with their NodeClaims and pods bound to
//     them, built from JSON by the informers' own decoders (state_test_util.h), and the methods
//     run over it (Run) or a command validated against it (Validate);
//   - the instance types are the solver tests' SmallCatalog (small, medium, large, xlarge) unless
//     a test sets `types` before Pool();
//   - Names and Find read a command's candidates and a node's explanation.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/clock.h"
#include "dovetail/controllers/disruption/disruption.h"
#include "dovetail/controllers/nodeclaim/conditions.h"
#include "dovetail/solver/solver_test_builders.h"
#include "dovetail/state/state_test_util.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::disruption::testing {

inline const absl::Time kNow =
    absl::FromCivil(absl::CivilSecond(2026, 11, 30, 12, 0, 0), absl::UTCTimeZone());

inline std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

// A Node and its NodeClaim (named "<node>-claim"), registered and initialized unless said so.
struct NodeOptions {
  std::string type = "medium";
  std::string zone = "zone-a";
  std::string capacity_type = "on-demand";
  std::string pool = "default";
  bool consolidatable = true;
  std::optional<absl::Time> drifted_since;
  bool do_not_disrupt = false;
  absl::Duration age = absl::Hours(1);
  bool initialized = true;
  bool termination_grace_period = false;
  std::string expire_after;
};

// The one command a pass made, when it has `candidates` candidates and `replacements`
// replacements; else null, with the failure reported. Points into `result`: keep it.
inline const Command* OnlyCommand(const absl::StatusOr<MethodResult>& result, size_t candidates,
                                  size_t replacements) {
  if (!result.ok()) {
    ADD_FAILURE() << result.status();
    return nullptr;
  }
  if (result->commands.size() != 1) {
    ADD_FAILURE() << result->commands.size() << " commands, not 1";
    return nullptr;
  }
  const Command& command = result->commands[0];
  if (command.candidates.size() != candidates || command.replacements.size() != replacements) {
    ADD_FAILURE() << command.candidates.size() << " candidates and " << command.replacements.size()
                  << " replacements, not " << candidates << " and " << replacements;
    return nullptr;
  }
  return &command;
}

const Command* OnlyCommand(absl::StatusOr<MethodResult>&& result, size_t candidates,
                           size_t replacements) = delete;  // it would point into a temporary

class Scene {
 public:
  Scene() : types(solver::test_builders::SmallCatalog()) { view.now = kNow; }

  // A pool of the KWOK node class with the defaults applied, offering `types`.
  apis::v1::NodePool& Pool(const std::string& name = "default",
                           std::optional<apis::v1::ConsolidationPolicy> policy = std::nullopt) {
    apis::v1::NodePool pool;
    pool.metadata.name = name;
    pool.spec.template_.spec.node_class_ref =
        apis::v1::NodeClassReference{"karpenter.kwok.sh", "KWOKNodeClass", "default"};
    if (policy.has_value()) pool.spec.disruption.emplace().consolidation_policy = policy;
    apis::v1::ApplyDefaults(pool);
    view.instance_types[name] = types;
    return view.node_pools[name] = std::move(pool);
  }

  void AddNode(const std::string& name, const NodeOptions& o = {}) {
    namespace v1 = apis::v1;
    const cloudprovider::InstanceType* type = nullptr;
    for (const auto& t : types) {
      if (t->name() == o.type) type = t.get();
    }
    ASSERT_NE(type, nullptr) << o.type;
    const std::string cpu = type->capacity().at("cpu").ToString();
    const std::string mem = type->capacity().at("memory").ToString();
    const std::string provider_id = "kwok://" + name;
    nlohmann::json labels = {{std::string(v1::kNodePoolLabelKey), o.pool},
                             {std::string(v1::kLabelInstanceType), o.type},
                             {std::string(v1::kLabelTopologyZone), o.zone},
                             {std::string(v1::kCapacityTypeLabelKey), o.capacity_type},
                             {std::string(v1::kLabelArch), "amd64"},
                             {std::string(v1::kLabelOS), "linux"},
                             {std::string(v1::kNodeRegisteredLabelKey), "true"},
                             {std::string(v1::kNodeInitializedLabelKey), "true"}};
    if (!o.initialized) labels.erase(std::string(v1::kNodeInitializedLabelKey));
    nlohmann::json node = state::testing::NodeJson(name, provider_id, cpu, mem, labels);
    if (o.do_not_disrupt) {
      node["metadata"]["annotations"] = {{std::string(v1::kDoNotDisruptAnnotationKey), "true"}};
    }
    nlohmann::json claim =
        state::testing::NodeClaimJson(name + "-claim", o.pool, provider_id, cpu, mem);
    claim["metadata"]["creationTimestamp"] = Rfc3339(kNow - o.age);
    claim["status"]["nodeName"] = name;
    if (o.termination_grace_period) claim["spec"]["terminationGracePeriod"] = "1h";
    if (!o.expire_after.empty()) claim["spec"]["expireAfter"] = o.expire_after;
    nlohmann::json conditions = nlohmann::json::array();
    if (o.consolidatable) {
      conditions.push_back({{"type", std::string(nodeclaim::kConditionConsolidatable)},
                            {"status", "True"},
                            {"reason", "Consolidatable"},
                            {"lastTransitionTime", Rfc3339(kNow - absl::Minutes(5))}});
    }
    if (o.drifted_since.has_value()) {
      conditions.push_back({{"type", std::string(nodeclaim::kConditionDrifted)},
                            {"status", "True"},
                            {"reason", "NodePoolDrifted"},
                            {"lastTransitionTime", Rfc3339(*o.drifted_since)}});
    }
    claim["status"]["conditions"] = conditions;
    state::StateNode sn;
    sn.node = objects_.Node(node);
    sn.node_claim = objects_.NodeClaim(claim);
    view.snapshot.nodes.push_back(std::move(sn));
    std::sort(
        view.snapshot.nodes.begin(), view.snapshot.nodes.end(),
        [](const state::StateNode& a, const state::StateNode& b) { return a.Key() < b.Key(); });
  }

  // Nodes node-0 .. node-<n-1>, each with one pod p-<i> requesting `cpu`.
  void AddLoadedNodes(int n, const std::string& cpu, const NodeOptions& o = {}) {
    for (int i = 0; i < n; ++i) {
      const std::string name = absl::StrCat("node-", i);
      AddNode(name, o);
      AddPod(name, absl::StrCat("p-", i), cpu);
    }
  }

  // A pod bound to `node` (a ReplicaSet's); `edit` changes its JSON.
  state::PodPtr AddPod(const std::string& node, const std::string& name, const std::string& cpu,
                       const std::function<void(nlohmann::json&)>& edit = nullptr) {
    nlohmann::json pod = state::testing::PodJson("default", name, node, cpu);
    pod["metadata"]["ownerReferences"] = {{{"apiVersion", "apps/v1"},
                                           {"kind", "ReplicaSet"},
                                           {"name", "rs"},
                                           {"uid", "rs-uid"},
                                           {"controller", true}}};
    pod["status"]["conditions"] = {{{"type", "Ready"}, {"status", "True"}}};
    if (edit) edit(pod);
    state::PodPtr info = objects_.Pod(pod);
    auto& pods = view.snapshot.pods_by_node[node];
    pods.push_back(info);
    return info;
  }

  state::StateNode& Node(const std::string& name) {
    for (auto& n : view.snapshot.nodes) {
      if (n.Name() == name) return n;
    }
    ADD_FAILURE() << "no node " << name;
    return view.snapshot.nodes.front();
  }

  // One method over the view, with the budgets of its reason (kept in `budgets`).
  absl::StatusOr<MethodResult> Run(Method method, const Options& options = {}) {
    auto simulator = Simulator::Create(view, options);
    if (!simulator.ok()) return simulator.status();
    simulator_ = std::move(*simulator);
    budgets = BuildBudgetMapping(view, ReasonOf(method));
    return ComputeCommands(method, view, *simulator_, budgets, options, clock_);
  }

  // ValidateCommand against the view as it is now.
  absl::Status Validate(const Command& command, const Options& options = {}) {
    auto simulator = Simulator::Create(view, options);
    if (!simulator.ok()) return simulator.status();
    return ValidateCommand(command, view, **simulator, options);
  }

  state::testing::Objects& objects() { return objects_; }

  ClusterView view;
  std::vector<cloudprovider::InstanceTypePtr> types;
  BudgetMapping budgets;

 private:
  state::testing::Objects objects_;
  std::unique_ptr<Simulator> simulator_;
  FakeClock clock_{kNow};
};

// The names of the command's candidates, in its order.
inline std::vector<std::string> Names(const Command& command) {
  std::vector<std::string> out;
  for (const Candidate& c : command.candidates) out.push_back(c.name);
  return out;
}

// The explanation for `node`, or null.
inline const Explanation* Find(const std::vector<Explanation>& explanations,
                               const std::string& node) {
  for (const Explanation& e : explanations) {
    if (e.node == node) return &e;
  }
  return nullptr;
}

}  // namespace dovetail::controllers::disruption::testing
