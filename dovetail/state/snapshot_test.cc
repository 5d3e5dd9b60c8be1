#include "dovetail/state/snapshot.h"

#include <algorithm>
#include <string>
#include <vector>

#include "dovetail/apis/core/pod_requests.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "dovetail/common/clock.h"
#include "dovetail/solver/solver.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/pod_conversion.h"
#include "dovetail/state/state_test_util.h"
#include "gtest/gtest.h"

namespace dovetail::state {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;
using testing::NodeClaimJson;
using testing::NodeJson;
using testing::Objects;
using testing::PodJson;

int64_t Milli(const ResourceList& list, const std::string& name) {
  auto it = list.find(name);
  return it == list.end() ? 0 : it->second.MilliValue();
}

const nlohmann::json kZoneA = {{"topology.kubernetes.io/zone", "test-zone-a"},
                               {"kubernetes.io/arch", "amd64"},
                               {"kubernetes.io/os", "linux"}};

class SnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto catalog = cloudprovider::kwok::SyntheticCatalog();
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    catalog_ = std::move(*catalog);
  }

  solver::PoolTemplate Pool() const {
    solver::PoolTemplate pool;
    pool.name = "default";
    pool.requirements.Add(
        scheduling::Requirement::In(std::string(v1::kNodePoolLabelKey), {std::string("default")}));
    pool.requirements.Add(scheduling::Requirement::In(std::string(v1::kCapacityTypeLabelKey),
                                                      {std::string("on-demand")}));
    pool.instance_types = catalog_.instance_types();
    return pool;
  }

  // Solves `pending` against the cluster's snapshot, as provisioning will.
  solver::Plan Solve(const std::vector<std::shared_ptr<const kube::PodInfo>>& pending) {
    Snapshot snapshot = cluster_.TakeSnapshot();
    auto nodes = ToSolverNodes(snapshot);
    EXPECT_TRUE(nodes.ok()) << nodes.status();
    solver_nodes_ = std::move(*nodes);
    pending_.clear();
    for (const auto& info : pending) {
      auto pod = ToPod(*info);
      EXPECT_TRUE(pod.ok()) << pod.status();
      pending_.push_back(std::make_unique<core::Pod>(std::move(*pod)));
    }
    solver::Input input;
    input.options.improve = false;
    input.options.lower_bound = false;
    input.pools.push_back(Pool());
    solver_nodes_.AppendTo(input);
    for (const auto& p : pending_) input.pods.push_back(p.get());
    auto plan = solver::Solve(input);
    EXPECT_TRUE(plan.ok()) << plan.status();
    return plan.ok() ? std::move(*plan) : solver::Plan{};
  }

  static std::vector<std::string> PodsPlacedOn(const solver::Plan& plan, const std::string& node) {
    std::vector<std::string> out;
    for (const auto& e : plan.existing) {
      if (e.node != node) continue;
      for (const core::Pod* p : e.pods) out.push_back(p->metadata.name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  FakeClock clock_;
  Cluster cluster_{clock_};
  Objects objects_;
  cloudprovider::Catalog catalog_;
  SolverNodes solver_nodes_;
  std::vector<std::unique_ptr<core::Pod>> pending_;
};

TEST_F(SnapshotTest, SolverUsesOnlyTheRoomBoundPodsLeaveOnExistingNodes) {
  cluster_.UpdateNode(objects_.Node(NodeJson("n1", "kwok://n1", "4", "16Gi", kZoneA)));
  cluster_.UpdatePod(objects_.Pod(PodJson("ns", "running", "n1", "3")));
  solver::Plan plan = Solve({objects_.Pod(PodJson("ns", "small", "", "500m")),
                             objects_.Pod(PodJson("ns", "big", "", "2"))});
  EXPECT_EQ(PodsPlacedOn(plan, "n1"), std::vector<std::string>{"small"});
  ASSERT_EQ(plan.node_claims.size(), 1u);
  ASSERT_EQ(plan.node_claims[0].pods.size(), 1u);
  EXPECT_EQ(plan.node_claims[0].pods[0]->metadata.name, "big");
  EXPECT_TRUE(plan.unschedulable.empty());
}

TEST_F(SnapshotTest, BoundPodsRequiredAntiAffinityKeepsMatchingPodsOff) {
  cluster_.UpdateNode(objects_.Node(NodeJson("n1", "kwok://n1", "8", "32Gi", kZoneA)));
  nlohmann::json guard = PodJson("ns", "guard", "n1", "100m");
  guard["metadata"]["labels"]["app"] = "web";
  guard["spec"]["affinity"] = {{"podAntiAffinity",
                                {{"requiredDuringSchedulingIgnoredDuringExecution",
                                  {{{"labelSelector", {{"matchLabels", {{"app", "web"}}}}},
                                    {"topologyKey", "kubernetes.io/hostname"}}}}}}};
  cluster_.UpdatePod(objects_.Pod(guard));
  nlohmann::json web = PodJson("ns", "web-1", "", "100m");
  web["metadata"]["labels"]["app"] = "web";
  solver::Plan plan = Solve({objects_.Pod(web), objects_.Pod(PodJson("ns", "other", "", "100m"))});
  EXPECT_EQ(PodsPlacedOn(plan, "n1"), std::vector<std::string>{"other"});
  ASSERT_EQ(plan.node_claims.size(), 1u);
  EXPECT_EQ(plan.node_claims[0].pods[0]->metadata.name, "web-1");
}

TEST_F(SnapshotTest, LaunchedNodeClaimWithoutANodeIsExistingCapacity) {
  nlohmann::json claim = NodeClaimJson("default-abc", "default", "kwok://default-abc", "4", "16Gi");
  for (const auto& [k, v] : kZoneA.items()) claim["metadata"]["labels"][k] = v;
  cluster_.UpdateNodeClaim(objects_.NodeClaim(claim));
  nlohmann::json pod = PodJson("ns", "p", "", "1");
  pod["spec"]["nodeSelector"] = {{"karpenter.sh/nodepool", "default"}};
  solver::Plan plan = Solve({objects_.Pod(pod)});
  EXPECT_EQ(PodsPlacedOn(plan, "default-abc"), std::vector<std::string>{"p"});
  EXPECT_TRUE(plan.node_claims.empty());
}

TEST_F(SnapshotTest, LeavesOutUnlaunchedAndInactiveNodesUnlessAsked) {
  cluster_.UpdateNode(objects_.Node(NodeJson("n1", "kwok://n1", "4", "16Gi", kZoneA)));
  cluster_.UpdateNode(objects_.Node(NodeJson("n2", "kwok://n2", "4", "16Gi", kZoneA)));
  cluster_.UpdateNodeClaim(objects_.NodeClaim(NodeClaimJson("default-x", "default", "")));
  cluster_.UpdatePod(objects_.Pod(PodJson("ns", "on-n2", "n2", "1")));
  cluster_.MarkForDeletion({"kwok://n2"});

  Snapshot snapshot = cluster_.TakeSnapshot();
  EXPECT_EQ(snapshot.nodes.size(), 3u);
  auto active = ToSolverNodes(snapshot);
  ASSERT_TRUE(active.ok());
  ASSERT_EQ(active->nodes.size(), 1u);
  EXPECT_EQ(active->nodes[0].name, "n1");
  EXPECT_TRUE(active->pods.empty());

  auto all = ToSolverNodes(snapshot, {.include_inactive = true});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->nodes.size(), 2u);
  ASSERT_EQ(all->pods.size(), 1u);
  EXPECT_EQ(all->pods[0]->spec.node_name, "n2");
}

TEST_F(SnapshotTest, CordonedNodeCarriesTheUnschedulableTaint) {
  nlohmann::json node = NodeJson("n1", "kwok://n1", "4", "16Gi", kZoneA);
  node["spec"]["unschedulable"] = true;
  cluster_.UpdateNode(objects_.Node(node));
  auto nodes = ToSolverNodes(cluster_.TakeSnapshot());
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->nodes.size(), 1u);
  ASSERT_EQ(nodes->nodes[0].taints.size(), 1u);
  EXPECT_EQ(nodes->nodes[0].taints[0].key, kTaintNodeUnschedulable);
  // And the solver does not place an ordinary pod there.
  solver::Plan plan = Solve({objects_.Pod(PodJson("ns", "p", "", "100m"))});
  EXPECT_TRUE(PodsPlacedOn(plan, "n1").empty());
  EXPECT_EQ(plan.node_claims.size(), 1u);
}

TEST(ToPodTest, KeepsEffectiveRequestsTolerationsOwnersAndSpread) {
  Objects objects;
  nlohmann::json json = PodJson("kube-system", "agent-x", "n1", "100m", "64Mi");
  json["spec"]["initContainers"] = {
      {{"name", "init"}, {"resources", {{"requests", {{"cpu", "2"}, {"memory", "32Mi"}}}}}}};
  json["spec"]["overhead"] = {{"cpu", "50m"}};
  json["spec"]["tolerations"] = {{{"operator", "Exists"}},
                                 {{"key", "k"}, {"value", "v"}, {"effect", "NoExecute"}}};
  json["spec"]["containers"][0]["ports"] = {{{"containerPort", 80}, {"hostPort", 8080}}};
  json["spec"]["topologySpreadConstraints"] = {
      {{"maxSkew", 1},
       {"topologyKey", "topology.kubernetes.io/zone"},
       {"whenUnsatisfiable", "DoNotSchedule"},
       {"labelSelector", {{"matchLabels", {{"a", "b"}}}}}}};
  json["metadata"]["ownerReferences"] = {
      {{"apiVersion", "apps/v1"}, {"kind", "DaemonSet"}, {"name", "agent"}, {"uid", "u"}}};
  auto info = objects.Pod(json);
  absl::StatusOr<core::Pod> pod = ToPod(*info);
  ASSERT_TRUE(pod.ok()) << pod.status();

  const ResourceList requests = core::PodRequests(*pod);
  EXPECT_EQ(Milli(requests, "cpu"), 2050);  // the init container's peak, plus overhead
  EXPECT_EQ(Milli(requests, "memory"), 64ll * 1024 * 1024 * 1000);
  EXPECT_EQ(Milli(requests, "pods"), 1000);
  EXPECT_TRUE(core::IsOwnedByDaemonSet(*pod));
  ASSERT_EQ(pod->spec.tolerations.size(), 2u);
  EXPECT_EQ(pod->spec.tolerations[0].op, core::TolerationOperator::kExists);
  EXPECT_FALSE(pod->spec.tolerations[0].effect.has_value());
  EXPECT_EQ(pod->spec.tolerations[1].effect, core::TaintEffect::kNoExecute);
  ASSERT_EQ(pod->spec.topology_spread_constraints.size(), 1u);
  EXPECT_EQ(pod->spec.topology_spread_constraints[0].topology_key, "topology.kubernetes.io/zone");
  ASSERT_EQ(pod->spec.containers.size(), 1u);
  ASSERT_EQ(pod->spec.containers[0].ports.size(), 1u);
  EXPECT_EQ(pod->spec.containers[0].ports[0].host_port, 8080);
  EXPECT_EQ(pod->spec.node_name, "n1");
  EXPECT_EQ(pod->metadata.namespace_, "kube-system");
  EXPECT_EQ(pod->status.phase, core::PodPhase::kRunning);
}

}  // namespace
}  // namespace dovetail::state
