#include "dovetail/cost/from_state.h"

#include "dovetail/common/clock.h"
#include "dovetail/state/state_test_util.h"
#include "gtest/gtest.h"

namespace dovetail::cost {
namespace {

using state::testing::NodeClaimJson;
using state::testing::NodeJson;
using state::testing::PodJson;

const nlohmann::json kLabels = {{"karpenter.sh/nodepool", "web"},
                                {"karpenter.sh/registered", "true"},
                                {"node.kubernetes.io/instance-type", "m7k.large"},
                                {"karpenter.sh/capacity-type", "spot"},
                                {"topology.kubernetes.io/zone", "test-zone-b"}};

TEST(MachinesFromClusterTest, ReadsLabelsRequestsAndStatus) {
  FakeClock clock;
  state::Cluster cluster(clock);
  state::testing::Objects objects;
  cluster.UpdateNodeClaim(objects.NodeClaim(NodeClaimJson("web-a", "web", "kwok://a", "2", "8Gi")));
  cluster.UpdateNode(objects.Node(NodeJson("node-a", "kwok://a", "2", "8Gi", kLabels)));
  cluster.UpdateNodeClaim(
      objects.NodeClaim(NodeClaimJson("web-b", "web", "kwok://b", "4", "16Gi")));
  cluster.UpdateNodeClaim(objects.NodeClaim(NodeClaimJson("web-c", "web", "")));
  cluster.UpdatePod(objects.Pod(PodJson("ns", "p1", "node-a", "500m", "1Gi")));
  cluster.UpdatePod(objects.Pod(PodJson("ns", "p2", "node-a", "250m", "1Gi")));
  nlohmann::json done = PodJson("ns", "p3", "node-a", "1", "1Gi");
  done["status"]["phase"] = "Succeeded";
  cluster.UpdatePod(objects.Pod(done));

  std::vector<Machine> machines = MachinesFromCluster(cluster);
  ASSERT_EQ(machines.size(), 3u);
  std::map<std::string, Machine> by_name;
  for (Machine& m : machines) by_name[m.name] = m;
  ASSERT_TRUE(by_name.contains("node-a"));
  const Machine& a = by_name["node-a"];
  EXPECT_EQ(a.node_claim, "web-a");
  EXPECT_EQ(a.node_pool, "web");
  EXPECT_EQ(a.instance_type, "m7k.large");
  EXPECT_EQ(a.capacity_type, "spot");
  EXPECT_EQ(a.zone, "test-zone-b");
  EXPECT_EQ(a.status, MachineStatus::kRegistered);
  EXPECT_EQ(a.cpu_requested_milli, 750);  // the Succeeded pod does not count
  EXPECT_EQ(a.cpu_allocatable_milli, 2000);
  EXPECT_EQ(a.memory_requested_bytes, 2LL << 30);
  EXPECT_EQ(a.memory_allocatable_bytes, 8LL << 30);
  EXPECT_EQ(a.pods, 2);
  ASSERT_TRUE(by_name.contains("web-b"));
  EXPECT_EQ(by_name["web-b"].status, MachineStatus::kLaunched);
  EXPECT_EQ(by_name["web-b"].cpu_allocatable_milli, 4000);
  ASSERT_TRUE(by_name.contains("web-c"));
  EXPECT_EQ(by_name["web-c"].status, MachineStatus::kLaunching);
}

TEST(MachinesFromClusterTest, UnmanagedNodeHasNoNodePool) {
  FakeClock clock;
  state::Cluster cluster(clock);
  state::testing::Objects objects;
  cluster.UpdateNode(objects.Node(NodeJson("cp", "", "4", "8Gi")));
  std::vector<Machine> machines = MachinesFromCluster(cluster);
  ASSERT_EQ(machines.size(), 1u);
  EXPECT_EQ(machines[0].node_pool, "");
  EXPECT_EQ(machines[0].node_claim, "");
  EXPECT_EQ(machines[0].status, MachineStatus::kRegistered);
}

}  // namespace
}  // namespace dovetail::cost
