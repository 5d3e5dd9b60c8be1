#include "dovetail/state/cluster.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dovetail/common/clock.h"
#include "dovetail/state/state_test_util.h"
#include "gtest/gtest.h"

namespace dovetail::state {
namespace {

using testing::NodeClaimJson;
using testing::NodeJson;
using testing::Objects;
using testing::PodJson;

int64_t Milli(const ResourceList& list, const std::string& name) {
  auto it = list.find(name);
  return it == list.end() ? 0 : it->second.MilliValue();
}

class ClusterTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  Cluster cluster_{clock_};
  Objects objects_;
};

TEST_F(ClusterTest, NodeAndNodeClaimWithTheSameProviderIdAreOneStateNode) {
  cluster_.UpdateNodeClaim(
      objects_.NodeClaim(NodeClaimJson("default-abc", "default", "kwok://n1")));
  cluster_.UpdateNode(objects_.Node(NodeJson("n1", "kwok://n1", "4", "16Gi")));
  ASSERT_EQ(cluster_.size(), 1u);
  std::optional<StateNode> node = cluster_.Get("kwok://n1");
  ASSERT_TRUE(node.has_value());
  EXPECT_TRUE(node->Managed());
  ASSERT_NE(node->node, nullptr);
  EXPECT_EQ(node->Name(), "n1");
  EXPECT_EQ(node->NodePool(), "default");
  EXPECT_EQ(cluster_.GetByNodeName("n1")->Key(), "kwok://n1");
  EXPECT_EQ(cluster_.GetByNodeClaimName("default-abc")->Key(), "kwok://n1");
}

TEST_F(ClusterTest, UnlaunchedNodeClaimMovesToItsProviderIdWithItsMarks) {
  cluster_.UpdateNodeClaim(objects_.NodeClaim(NodeClaimJson("default-abc", "default", "")));
  const std::string provisional = UnlaunchedNodeClaimKey("default-abc");
  ASSERT_TRUE(cluster_.Get(provisional).has_value());
  EXPECT_FALSE(cluster_.Get(provisional)->Launched());
  cluster_.Nominate(provisional, absl::Seconds(20));
  cluster_.MarkForDeletion({provisional});

  cluster_.UpdateNodeClaim(
      objects_.NodeClaim(NodeClaimJson("default-abc", "default", "kwok://n1")));
  EXPECT_FALSE(cluster_.Get(provisional).has_value());
  std::optional<StateNode> launched = cluster_.Get("kwok://n1");
  ASSERT_TRUE(launched.has_value());
  EXPECT_TRUE(launched->Launched());
  EXPECT_TRUE(launched->marked_for_deletion);
  EXPECT_TRUE(launched->Nominated(clock_.Now()));
  EXPECT_EQ(cluster_.size(), 1u);
}

TEST_F(ClusterTest, NodeWithoutProviderIdIsKeyedByNameUntilItGetsOne) {
  cluster_.UpdateNode(objects_.Node(NodeJson("n1", "", "2", "4Gi")));
  ASSERT_TRUE(cluster_.Get("n1").has_value());
  EXPECT_FALSE(cluster_.Get("n1")->Managed());
  cluster_.MarkForDeletion({"n1"});

  cluster_.UpdateNodeClaim(
      objects_.NodeClaim(NodeClaimJson("default-abc", "default", "kwok://n1")));
  cluster_.UpdateNode(objects_.Node(NodeJson("n1", "kwok://n1", "2", "4Gi")));
  EXPECT_FALSE(cluster_.Get("n1").has_value());
  std::optional<StateNode> node = cluster_.Get("kwok://n1");
  ASSERT_TRUE(node.has_value());
  EXPECT_TRUE(node->Managed());
  EXPECT_NE(node->node, nullptr);
  EXPECT_TRUE(node->marked_for_deletion);
  EXPECT_EQ(cluster_.size(), 1u);
}

TEST_F(ClusterTest, EntryLivesUntilBothNodeAndNodeClaimAreGone) {
  auto claim = objects_.NodeClaim(NodeClaimJson("default-abc", "default", "kwok://n1"));
  auto node = objects_.Node(NodeJson("n1", "kwok://n1", "4", "16Gi"));
  cluster_.UpdateNodeClaim(claim);
  cluster_.UpdateNode(node);
  cluster_.MarkForDeletion({"kwok://n1"});

  cluster_.DeleteNode(*node);
  std::optional<StateNode> left = cluster_.Get("kwok://n1");
  ASSERT_TRUE(left.has_value());
  EXPECT_EQ(left->node, nullptr);
  EXPECT_TRUE(left->marked_for_deletion);
  // Without a Node the NodeClaim's estimate stands in.
  EXPECT_EQ(Milli(left->Allocatable(), "cpu"), 4000);

  cluster_.DeleteNodeClaim(*claim);
  EXPECT_FALSE(cluster_.Get("kwok://n1").has_value());
  EXPECT_EQ(cluster_.size(), 0u);
  // The mark went with the entry: a new machine with the same id starts unmarked.
  cluster_.UpdateNode(node);
  EXPECT_FALSE(cluster_.Get("kwok://n1")->marked_for_deletion);
}

TEST_F(ClusterTest, PodBindingsSumRequestsAndDropTerminalAndDeletedPods) {
  cluster_.UpdateNode(objects_.Node(NodeJson("n1", "kwok://n1", "4", "16Gi")));
  auto a = objects_.Pod(PodJson("ns", "a", "n1", "500m", "1Gi"));
  auto b = objects_.Pod(PodJson("ns", "b", "n1", "250m", "512Mi"));
  nlohmann::json ds_json = PodJson("kube-system", "ds-n1", "n1", "100m", "64Mi");
  ds_json["metadata"]["ownerReferences"] = {
      {{"apiVersion", "apps/v1"}, {"kind", "DaemonSet"}, {"name", "ds"}, {"uid", "ds-uid"}}};
  auto ds = objects_.Pod(ds_json);
  cluster_.UpdatePod(a);
  cluster_.UpdatePod(b);
  cluster_.UpdatePod(ds);
  cluster_.UpdatePod(objects_.Pod(PodJson("ns", "pending", "", "8")));  // not bound: ignored

  EXPECT_EQ(cluster_.PodsOn("n1").size(), 3u);
  EXPECT_EQ(Milli(cluster_.PodRequests("n1"), "cpu"), 850);
  EXPECT_EQ(Milli(cluster_.PodRequests("n1"), "memory"), (1536ll + 64) * 1024 * 1024 * 1000);
  EXPECT_EQ(Milli(cluster_.DaemonSetRequests("n1"), "cpu"), 100);

  // An update is not counted twice.
  cluster_.UpdatePod(a);
  EXPECT_EQ(Milli(cluster_.PodRequests("n1"), "cpu"), 850);

  nlohmann::json done = PodJson("ns", "b", "n1", "250m", "512Mi");
  done["status"]["phase"] = "Succeeded";
  cluster_.UpdatePod(objects_.Pod(done));
  EXPECT_EQ(Milli(cluster_.PodRequests("n1"), "cpu"), 600);

  cluster_.DeletePod(*a);
  cluster_.DeletePod(*ds);
  EXPECT_TRUE(cluster_.PodsOn("n1").empty());
  EXPECT_TRUE(cluster_.PodRequests("n1").empty());
  EXPECT_TRUE(cluster_.DaemonSetRequests("n1").empty());
}

TEST_F(ClusterTest, PodBoundBeforeItsNodeArrivesJoinsTheSnapshotWithTheNode) {
  cluster_.UpdatePod(objects_.Pod(PodJson("ns", "early", "n1", "1")));
  Snapshot before = cluster_.TakeSnapshot();
  EXPECT_TRUE(before.nodes.empty());
  EXPECT_TRUE(before.pods_by_node.empty());

  cluster_.UpdateNode(objects_.Node(NodeJson("n1", "kwok://n1", "4", "16Gi")));
  Snapshot after = cluster_.TakeSnapshot();
  ASSERT_EQ(after.nodes.size(), 1u);
  ASSERT_EQ(after.pods_by_node["n1"].size(), 1u);
  EXPECT_EQ(after.pods_by_node["n1"][0]->meta.name, "early");
}

TEST_F(ClusterTest, SnapshotIsACopyThatLaterEventsDoNotChange) {
  cluster_.UpdateNode(objects_.Node(NodeJson("n1", "kwok://n1", "4", "16Gi")));
  cluster_.UpdatePod(objects_.Pod(PodJson("ns", "a", "n1", "1")));
  Snapshot snapshot = cluster_.TakeSnapshot();
  cluster_.UpdatePod(objects_.Pod(PodJson("ns", "b", "n1", "1")));
  cluster_.MarkForDeletion({"kwok://n1"});
  EXPECT_EQ(snapshot.pods_by_node["n1"].size(), 1u);
  EXPECT_FALSE(snapshot.nodes[0].marked_for_deletion);
  EXPECT_EQ(snapshot.taken, clock_.Now());
}

TEST_F(ClusterTest, NominationExpiresAndALaterDeadlineWins) {
  cluster_.UpdateNode(objects_.Node(NodeJson("n1", "kwok://n1", "4", "16Gi")));
  cluster_.Nominate("kwok://n1", absl::Seconds(20));
  cluster_.Nominate("kwok://n1", absl::Seconds(5));  // does not shorten it
  cluster_.Nominate("kwok://unknown", absl::Seconds(20));
  EXPECT_EQ(cluster_.size(), 1u);
  clock_.Advance(absl::Seconds(19));
  EXPECT_TRUE(cluster_.Get("kwok://n1")->Nominated(clock_.Now()));
  clock_.Advance(absl::Seconds(1));
  EXPECT_FALSE(cluster_.Get("kwok://n1")->Nominated(clock_.Now()));
}

TEST_F(ClusterTest, MarkedOrDeletingNodesAreNotActive) {
  cluster_.UpdateNode(objects_.Node(NodeJson("n1", "kwok://n1", "4", "16Gi")));
  nlohmann::json deleting = NodeClaimJson("default-b", "default", "kwok://n2");
  deleting["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z";
  cluster_.UpdateNodeClaim(objects_.NodeClaim(deleting));
  EXPECT_TRUE(cluster_.Get("kwok://n1")->Active());
  EXPECT_FALSE(cluster_.Get("kwok://n2")->Active());
  EXPECT_TRUE(cluster_.Get("kwok://n2")->Deleting());

  cluster_.MarkForDeletion({"kwok://n1"});
  EXPECT_FALSE(cluster_.Get("kwok://n1")->Active());
  cluster_.UnmarkForDeletion({"kwok://n1"});
  EXPECT_TRUE(cluster_.Get("kwok://n1")->Active());
}

TEST_F(ClusterTest, NodePoolUsageCountsNodesAndInFlightNodeClaims) {
  // A registered machine: the Node's capacity.
  cluster_.UpdateNodeClaim(objects_.NodeClaim(NodeClaimJson("a-1", "a", "kwok://n1", "4", "16Gi")));
  nlohmann::json n1 = NodeJson("n1", "kwok://n1", "4", "16Gi",
                               {{"karpenter.sh/nodepool", "a"},
                                {"karpenter.sh/registered", "true"},
                                {"karpenter.sh/initialized", "true"}});
  cluster_.UpdateNode(objects_.Node(n1));
  // Launched, no Node yet: the NodeClaim's capacity.
  cluster_.UpdateNodeClaim(objects_.NodeClaim(NodeClaimJson("a-2", "a", "kwok://n2", "8", "32Gi")));
  // Not launched: its requests (cpu 1, memory 1Gi, pods 3).
  cluster_.UpdateNodeClaim(objects_.NodeClaim(NodeClaimJson("a-3", "a", "")));
  // Another pool, and an unmanaged node.
  cluster_.UpdateNodeClaim(objects_.NodeClaim(NodeClaimJson("b-1", "b", "kwok://n4", "2", "4Gi")));
  cluster_.UpdateNode(objects_.Node(NodeJson("unmanaged", "", "64", "256Gi")));

  const ResourceList a = cluster_.NodePoolUsage("a");
  EXPECT_EQ(Milli(a, "cpu"), 13000);
  EXPECT_EQ(Milli(a, "memory"), 49ll * 1024 * 1024 * 1024 * 1000);
  EXPECT_EQ(Milli(a, "nodes"), 3000);
  EXPECT_EQ(Milli(a, "pods"), 223000);
  EXPECT_EQ(Milli(cluster_.NodePoolUsage("b"), "nodes"), 1000);
  EXPECT_TRUE(cluster_.NodePoolUsage("none").empty());

  Snapshot snapshot = cluster_.TakeSnapshot();
  EXPECT_EQ(snapshot.node_pool_usage.size(), 2u);
  apis::v1::NodePool pool;
  pool.metadata.name = "a";
  pool.spec.limits["cpu"] = *Quantity::Parse("20");
  pool.spec.limits["nodes"] = *Quantity::Parse("3");
  std::optional<ResourceList> remaining = snapshot.RemainingLimits(pool);
  ASSERT_TRUE(remaining.has_value());
  EXPECT_EQ(Milli(*remaining, "cpu"), 7000);
  EXPECT_EQ(Milli(*remaining, "nodes"), 0);
  EXPECT_FALSE(remaining->contains("memory"));  // not limited
  pool.spec.limits.clear();
  EXPECT_FALSE(snapshot.RemainingLimits(pool).has_value());
}

TEST_F(ClusterTest, UninitializedManagedNodeBorrowsTheNodeClaimsEstimateAndTaints) {
  nlohmann::json claim = NodeClaimJson("a-1", "a", "kwok://n1", "4", "16Gi");
  claim["spec"]["taints"] = {{{"key", "team"}, {"value", "x"}, {"effect", "NoSchedule"}}};
  claim["spec"]["startupTaints"] = {{{"key", "cni-not-ready"}, {"effect", "NoSchedule"}}};
  cluster_.UpdateNodeClaim(objects_.NodeClaim(claim));
  // Registered by the kubelet with zero cpu so far and only the unregistered taint.
  nlohmann::json node = NodeJson("n1", "kwok://n1", "0", "16Gi");
  node["spec"]["taints"] = {{{"key", "karpenter.sh/unregistered"}, {"effect", "NoExecute"}}};
  cluster_.UpdateNode(objects_.Node(node));

  StateNode s = *cluster_.Get("kwok://n1");
  EXPECT_FALSE(s.Registered());
  EXPECT_FALSE(s.Initialized());
  EXPECT_EQ(Milli(s.Allocatable(), "cpu"), 4000);  // zero on the Node: the estimate
  ASSERT_EQ(s.Taints().size(), 1u);                // the NodeClaim's, until registered
  EXPECT_EQ(s.Taints()[0].key, "team");
  EXPECT_EQ(s.StartupTaintKeys(), std::vector<std::string>{"cni-not-ready"});

  node["metadata"]["labels"]["karpenter.sh/registered"] = "true";
  node["metadata"]["labels"]["karpenter.sh/initialized"] = "true";
  node["spec"]["taints"] = {{{"key", "team"}, {"value", "x"}, {"effect", "NoSchedule"}}};
  node["status"]["allocatable"]["cpu"] = "3920m";
  cluster_.UpdateNode(objects_.Node(node));
  s = *cluster_.Get("kwok://n1");
  EXPECT_TRUE(s.Initialized());
  EXPECT_EQ(Milli(s.Allocatable(), "cpu"), 3920);  // the Node's own from now on
  ASSERT_EQ(s.Taints().size(), 1u);
  EXPECT_EQ(s.Taints()[0].key, "team");
}

TEST_F(ClusterTest, SyncedWaitsForSourcesAndForEveryNodeClaimToLaunch) {
  std::atomic<bool> informers_synced{false};
  cluster_.AddSyncCheck([&] { return informers_synced.load(); });
  EXPECT_FALSE(cluster_.Synced());
  informers_synced = true;
  EXPECT_TRUE(cluster_.Synced());

  cluster_.UpdateNodeClaim(objects_.NodeClaim(NodeClaimJson("a-1", "a", "")));
  EXPECT_FALSE(cluster_.Synced());
  cluster_.UpdateNodeClaim(objects_.NodeClaim(NodeClaimJson("a-1", "a", "kwok://n1")));
  EXPECT_TRUE(cluster_.Synced());
}

TEST_F(ClusterTest, ConcurrentEventsFromSeveralInformerThreadsAddUp) {
  constexpr int kNodes = 20;
  constexpr int kPodsPerNode = 50;
  std::vector<std::shared_ptr<const kube::NodeInfo>> nodes;
  std::vector<std::vector<std::shared_ptr<const kube::PodInfo>>> pods(4);
  for (int n = 0; n < kNodes; ++n) {
    const std::string name = absl::StrCat("n", n);
    nodes.push_back(objects_.Node(NodeJson(name, "kwok://" + name, "64", "256Gi")));
    for (int p = 0; p < kPodsPerNode; ++p) {
      pods[p % 4].push_back(
          objects_.Pod(PodJson("ns", absl::StrCat(name, "-", p), name, "10m", "1Mi")));
    }
  }
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (const auto& n : nodes) cluster_.UpdateNode(n);
  });
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (const auto& p : pods[t]) cluster_.UpdatePod(p);
      for (const auto& p : pods[t]) cluster_.UpdatePod(p);  // re-delivery (resync)
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 200; ++i) (void)cluster_.TakeSnapshot();
  });
  for (auto& t : threads) t.join();

  Snapshot snapshot = cluster_.TakeSnapshot();
  ASSERT_EQ(snapshot.nodes.size(), static_cast<size_t>(kNodes));
  for (int n = 0; n < kNodes; ++n) {
    const std::string name = absl::StrCat("n", n);
    EXPECT_EQ(snapshot.pods_by_node[name].size(), static_cast<size_t>(kPodsPerNode)) << name;
    EXPECT_EQ(Milli(cluster_.PodRequests(name), "cpu"), 10 * kPodsPerNode) << name;
  }
}

}  // namespace
}  // namespace dovetail::state
