#include "dovetail/scenario/solver_input.h"

#include <algorithm>
#include <string>
#include <vector>

#include "dovetail/apis/core/storage_class.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "dovetail/common/clock.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/state_test_util.h"
#include "gtest/gtest.h"

namespace dovetail::scenario {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;
using state::testing::NodeJson;
using state::testing::PodJson;
using Why = SkippedNodePool::Why;

nlohmann::json PendingPod(const std::string& name) {
  nlohmann::json pod = PodJson("default", name, "", "500m");
  pod["status"]["conditions"] = {
      {{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}};
  return pod;
}

v1::NodePool Pool(const std::string& name) {
  v1::NodePool pool;
  pool.metadata.name = name;
  core::NodeSelectorRequirement on_demand;
  on_demand.key = std::string(v1::kCapacityTypeLabelKey);
  on_demand.op = core::SelectorOperator::kIn;
  on_demand.values = {"on-demand"};
  pool.spec.template_.spec.requirements.push_back(on_demand);
  return pool;
}

class SolverInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto catalog = cloudprovider::kwok::SyntheticCatalog();
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    types_.assign(catalog->begin(), catalog->end());
    scenario_.now = clock_.Now();
  }

  void AddPool(v1::NodePool pool) {
    scenario_.instance_types[pool.metadata.name] = types_;
    scenario_.node_pools[pool.metadata.name] = std::move(pool);
  }

  SolverQuestion Build(const InputOptions& options = {}) {
    scenario_.snapshot = cluster_.TakeSnapshot();
    return BuildSolverInput(scenario_, options);
  }

  static std::vector<std::string> Names(const std::vector<const core::Pod*>& pods) {
    std::vector<std::string> out;
    out.reserve(pods.size());
    for (const core::Pod* p : pods) out.push_back(p->metadata.name);
    return out;
  }

  FakeClock clock_;
  state::Cluster cluster_{clock_};
  state::testing::Objects objects_;
  std::vector<cloudprovider::InstanceTypePtr> types_;
  Scenario scenario_;
};

TEST_F(SolverInputTest, SkipsEveryUnusablePoolWithItsReason) {
  AddPool(Pool("usable"));
  v1::NodePool deleting = Pool("deleting");
  deleting.metadata.deletion_timestamp = clock_.Now();
  AddPool(deleting);
  v1::NodePool fixed = Pool("static");
  fixed.spec.replicas = 3;
  AddPool(fixed);
  v1::NodePool not_ready = Pool("not-ready");
  core::Condition ready;
  ready.type = "Ready";
  ready.status = core::ConditionStatus::kFalse;
  not_ready.status.conditions.push_back(ready);
  AddPool(not_ready);
  v1::NodePool invalid = Pool("invalid");
  invalid.spec.template_.spec.requirements[0].op = core::SelectorOperator::kGt;
  AddPool(invalid);
  v1::NodePool none = Pool("none-compatible");
  none.spec.template_.spec.requirements[0].values = {"no-such-capacity-type"};
  AddPool(none);
  scenario_.node_pools["no-types"] = Pool("no-types");
  scenario_.instance_type_errors["no-types"] = absl::UnavailableError("node class not ready");

  SolverQuestion q = Build();
  ASSERT_EQ(q.input.pools.size(), 1u);
  EXPECT_EQ(q.input.pools[0].name, "usable");
  // Exactly the compatible types: on-demand offerings only.
  for (const cloudprovider::InstanceTypePtr& type : q.input.pools[0].instance_types) {
    EXPECT_TRUE(type->offerings().Available().HasCompatible(q.input.pools[0].requirements));
  }
  std::vector<std::pair<std::string, Why>> skipped;
  for (const SkippedNodePool& s : q.skipped) skipped.emplace_back(s.name, s.why);
  EXPECT_EQ(skipped, (std::vector<std::pair<std::string, Why>>{
                         {"deleting", Why::kDeleting},
                         {"invalid", Why::kInvalid},
                         {"no-types", Why::kInstanceTypes},
                         {"none-compatible", Why::kNoCompatibleInstanceTypes},
                         {"not-ready", Why::kNotReady},
                         {"static", Why::kStatic}}));
  for (const SkippedNodePool& s : q.skipped) {
    EXPECT_FALSE(s.reason.empty()) << s.name;
    if (s.name == "no-types") {
      EXPECT_EQ(s.error.code(), absl::StatusCode::kUnavailable);
    }
  }
}

TEST_F(SolverInputTest, APoolWithoutAReadyConditionIsUsedUnlessReadyIsRequired) {
  AddPool(Pool("fresh"));
  EXPECT_EQ(Build().input.pools.size(), 1u);
  SolverQuestion strict = Build({.require_ready_node_pools = true});
  EXPECT_TRUE(strict.input.pools.empty());
  ASSERT_EQ(strict.skipped.size(), 1u);
  EXPECT_EQ(strict.skipped[0].why, Why::kNotReady);
}

TEST_F(SolverInputTest, IgnoredPodsAreReturnedAndTheRestSortedWithThePodsOfNodesGoingAway) {
  AddPool(Pool("default"));
  cluster_.UpdateNode(objects_.Node(NodeJson("n1", "kwok://n1", "4", "16Gi", {})));
  cluster_.UpdatePod(objects_.Pod(PodJson("default", "a-moving", "n1", "1")));
  cluster_.MarkForDeletion({"kwok://n1"});
  nlohmann::json hostname = PendingPod("hostname");
  hostname["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", "n9"}};
  nlohmann::json opted_out = PendingPod("opted-out");
  opted_out["spec"]["nodeSelector"] = {{"karpenter.sh/nodepool", "x"}};
  opted_out["spec"]["affinity"] = {
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         {{"nodeSelectorTerms",
           {{{"matchExpressions",
              {{{"key", "karpenter.sh/nodepool"}, {"operator", "DoesNotExist"}}}}}}}}}}}};
  opted_out["spec"].erase("nodeSelector");
  nlohmann::json dra = PendingPod("dra");
  dra["spec"]["resourceClaims"] = {{{"name", "gpu"}, {"resourceClaimName", "gpu-0"}}};
  for (const nlohmann::json& pod :
       {PendingPod("z-last"), hostname, opted_out, dra, PendingPod("b-first")}) {
    scenario_.pending_pods.push_back(objects_.Pod(pod));
  }

  SolverQuestion q = Build();
  EXPECT_EQ(Names(q.input.pods), (std::vector<std::string>{"a-moving", "b-first", "z-last"}));
  ASSERT_EQ(q.rescheduled.size(), 1u);
  const core::Pod* moving = *q.rescheduled.begin();
  EXPECT_EQ(moving->metadata.name, "a-moving");
  EXPECT_TRUE(moving->spec.node_name.empty());
  // The marked node is not in the input: its pods are placed again.
  EXPECT_TRUE(q.input.nodes.empty());

  std::vector<std::string> ignored;
  for (const IgnoredPod& i : q.ignored) {
    ignored.push_back(i.pod->metadata.name);
    EXPECT_EQ(i.silent, i.pod->metadata.name == "opted-out");
    EXPECT_EQ(i.message.empty(), i.silent) << i.pod->metadata.name;
  }
  std::sort(ignored.begin(), ignored.end());
  EXPECT_EQ(ignored, (std::vector<std::string>{"dra", "hostname", "opted-out"}));
}

TEST_F(SolverInputTest, ACacheConvertsEachPodVersionOnceAcrossBuilds) {
  AddPool(Pool("default"));
  cluster_.UpdateNode(objects_.Node(NodeJson("n1", "kwok://n1", "4", "16Gi", {})));
  cluster_.UpdatePod(objects_.Pod(PodJson("default", "bound", "n1", "1")));
  scenario_.pending_pods.push_back(objects_.Pod(PendingPod("pending")));
  PodCache cache;

  SolverQuestion first = Build({.pods = &cache});
  ASSERT_EQ(first.input.bound_pods.size(), 1u);
  ASSERT_EQ(first.input.pods.size(), 1u);
  EXPECT_EQ(cache.size(), 2u);
  SolverQuestion second = Build({.pods = &cache});
  EXPECT_EQ(second.input.bound_pods[0], first.input.bound_pods[0]);
  EXPECT_EQ(second.input.pods[0], first.input.pods[0]);

  // A new version of the bound pod (a new PodInfo) is converted again; the old one is swept at
  // the end of the build that no longer reads it, while `first` still holds its own.
  nlohmann::json relabelled = PodJson("default", "bound", "n1", "1");
  relabelled["metadata"]["labels"]["tier"] = "gold";
  cluster_.UpdatePod(objects_.Pod(relabelled));
  SolverQuestion third = Build({.pods = &cache});
  ASSERT_EQ(third.input.bound_pods.size(), 1u);
  EXPECT_NE(third.input.bound_pods[0], first.input.bound_pods[0]);
  EXPECT_EQ(third.input.bound_pods[0]->metadata.labels.at("tier"), "gold");
  EXPECT_EQ(first.input.bound_pods[0]->metadata.labels.count("tier"), 0u);
  EXPECT_EQ(third.input.pods[0], first.input.pods[0]);
  EXPECT_EQ(cache.size(), 2u);

  // Without a cache every build converts: same content, new objects.
  SolverQuestion uncached = Build();
  EXPECT_NE(uncached.input.pods[0], third.input.pods[0]);
  EXPECT_EQ(uncached.input.pods[0]->metadata.name, "pending");
}

TEST_F(SolverInputTest, DaemonSetsBecomeTheirPodsInNameOrderExceptDraOnes) {
  AddPool(Pool("default"));
  auto daemon_set = [](const std::string& ns, const std::string& name) {
    core::DaemonSet ds;
    ds.metadata.namespace_ = ns;
    ds.metadata.name = name;
    ds.metadata.uid = name + "-uid";
    return ds;
  };
  core::DaemonSet dra = daemon_set("kube-system", "gpu-plugin");
  core::PodResourceClaim claim;
  claim.name = "gpu";
  dra.spec.template_.spec.resource_claims.push_back(claim);
  scenario_.daemon_sets = {daemon_set("kube-system", "proxy"), dra,
                           daemon_set("agents", "logging")};
  scenario_.namespace_labels["agents"] = {{"team", "obs"}};

  SolverQuestion q = Build();
  std::vector<std::string> names;
  for (const solver::DaemonSetPod& ds : q.input.daemon_sets) names.push_back(ds.name);
  EXPECT_EQ(names, (std::vector<std::string>{"agents/logging", "kube-system/proxy"}));
  ASSERT_EQ(q.daemon_pods.size(), 2u);
  EXPECT_EQ(q.input.daemon_sets[0].pod, q.daemon_pods[0].get());
  EXPECT_EQ(q.input.namespace_labels.at("agents").at("team"), "obs");
}

TEST_F(SolverInputTest, VolumeTopologyConstrainsPodsToPlaceAndBoundPods) {
  AddPool(Pool("default"));
  auto claiming = [](nlohmann::json pod) {
    pod["spec"]["volumes"] = {{{"name", "v"}, {"persistentVolumeClaim", {{"claimName", "data"}}}}};
    return pod;
  };
  cluster_.UpdateNode(objects_.Node(NodeJson("n1", "kwok://n1", "4", "16Gi", {})));
  cluster_.UpdatePod(objects_.Pod(claiming(PodJson("default", "bound", "n1", "1"))));
  scenario_.pending_pods.push_back(objects_.Pod(claiming(PendingPod("pending"))));
  scenario_.pending_pods.push_back(objects_.Pod(PendingPod("no-volume")));
  core::PersistentVolumeClaim claim;
  claim.metadata.namespace_ = "default";
  claim.metadata.name = "data";
  claim.spec.storage_class_name = "zonal";
  core::StorageClass zonal;
  zonal.metadata.name = "zonal";
  core::TopologySelectorTerm term;
  term.match_label_expressions.push_back({.key = "topology.kubernetes.io/zone", .values = {"b"}});
  zonal.allowed_topologies.push_back(term);
  scenario_.volumes = {.claims = {claim}, .storage_classes = {zonal}};

  SolverQuestion q = Build();
  std::vector<std::string> constrained;
  for (const auto& [pod, alternatives] : q.input.volume_requirements) {
    constrained.push_back(pod->metadata.name);
    ASSERT_EQ(alternatives.size(), 1u);
    EXPECT_TRUE(alternatives[0].Get("topology.kubernetes.io/zone").Has("b"));
  }
  std::sort(constrained.begin(), constrained.end());
  EXPECT_EQ(constrained, (std::vector<std::string>{"bound", "pending"}));
}

TEST_F(SolverInputTest, OptionsAreCopiedIntoTheInput) {
  AddPool(Pool("default"));
  SolverQuestion q = Build({.solver = {.respect_preferences = false, .lower_bound = false}});
  EXPECT_FALSE(q.input.options.respect_preferences);
  EXPECT_FALSE(q.input.options.lower_bound);
  EXPECT_TRUE(q.input.options.min_values_strict);
}

}  // namespace
}  // namespace dovetail::scenario
