#include "dovetail/scenario/solver_nodes.h"

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

namespace dovetail::scenario {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;
using state::testing::NodeClaimJson;
using state::testing::NodeJson;
using state::testing::Objects;
using state::testing::PodJson;

const nlohmann::json kZoneA = {{"topology.kubernetes.io/zone", "test-zone-a"},
                               {"kubernetes.io/arch", "amd64"},
                               {"kubernetes.io/os", "linux"}};

class SolverNodesTest : public ::testing::Test {
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
    state::Snapshot snapshot = cluster_.TakeSnapshot();
    solver_nodes_ = ToSolverNodes(snapshot);
    pending_.clear();
    for (const auto& info : pending) {
      pending_.push_back(std::make_unique<core::Pod>(state::ToPod(*info)));
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
  state::Cluster cluster_{clock_};
  Objects objects_;
  cloudprovider::Catalog catalog_;
  SolverNodes solver_nodes_;
  std::vector<std::unique_ptr<core::Pod>> pending_;
};

TEST_F(SolverNodesTest, SolverUsesOnlyTheRoomBoundPodsLeaveOnExistingNodes) {
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

TEST_F(SolverNodesTest, BoundPodsRequiredAntiAffinityKeepsMatchingPodsOff) {
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

TEST_F(SolverNodesTest, LaunchedNodeClaimWithoutANodeIsExistingCapacity) {
  nlohmann::json claim = NodeClaimJson("default-abc", "default", "kwok://default-abc", "4", "16Gi");
  for (const auto& [k, v] : kZoneA.items()) claim["metadata"]["labels"][k] = v;
  cluster_.UpdateNodeClaim(objects_.NodeClaim(claim));
  nlohmann::json pod = PodJson("ns", "p", "", "1");
  pod["spec"]["nodeSelector"] = {{"karpenter.sh/nodepool", "default"}};
  solver::Plan plan = Solve({objects_.Pod(pod)});
  EXPECT_EQ(PodsPlacedOn(plan, "default-abc"), std::vector<std::string>{"p"});
  EXPECT_TRUE(plan.node_claims.empty());
}

TEST_F(SolverNodesTest, LeavesOutUnlaunchedAndInactiveNodesUnlessAsked) {
  cluster_.UpdateNode(objects_.Node(NodeJson("n1", "kwok://n1", "4", "16Gi", kZoneA)));
  cluster_.UpdateNode(objects_.Node(NodeJson("n2", "kwok://n2", "4", "16Gi", kZoneA)));
  cluster_.UpdateNodeClaim(objects_.NodeClaim(NodeClaimJson("default-x", "default", "")));
  cluster_.UpdatePod(objects_.Pod(PodJson("ns", "on-n2", "n2", "1")));
  cluster_.MarkForDeletion({"kwok://n2"});

  state::Snapshot snapshot = cluster_.TakeSnapshot();
  EXPECT_EQ(snapshot.nodes.size(), 3u);
  auto active = ToSolverNodes(snapshot);
  ASSERT_EQ(active.nodes.size(), 1u);
  EXPECT_EQ(active.nodes[0].name, "n1");
  EXPECT_TRUE(active.pods.empty());

  auto all = ToSolverNodes(snapshot, {.include_inactive = true});
  ASSERT_EQ(all.nodes.size(), 2u);
  ASSERT_EQ(all.pods.size(), 1u);
  EXPECT_EQ(all.pods[0]->spec.node_name, "n2");
}

TEST_F(SolverNodesTest, CordonedNodeCarriesTheUnschedulableTaint) {
  nlohmann::json node = NodeJson("n1", "kwok://n1", "4", "16Gi", kZoneA);
  node["spec"]["unschedulable"] = true;
  cluster_.UpdateNode(objects_.Node(node));
  auto nodes = ToSolverNodes(cluster_.TakeSnapshot());
  ASSERT_EQ(nodes.nodes.size(), 1u);
  ASSERT_EQ(nodes.nodes[0].taints.size(), 1u);
  EXPECT_EQ(nodes.nodes[0].taints[0].key, kTaintNodeUnschedulable);
  // And the solver does not place an ordinary pod there.
  solver::Plan plan = Solve({objects_.Pod(PodJson("ns", "p", "", "100m"))});
  EXPECT_TRUE(PodsPlacedOn(plan, "n1").empty());
  EXPECT_EQ(plan.node_claims.size(), 1u);
}

}  // namespace
}  // namespace dovetail::scenario
