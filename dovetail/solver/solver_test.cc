#include "dovetail/solver/solver.h"

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/solver/solver_test_builders.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::solver {
namespace {

using apis::core::SelectorOperator;
using apis::core::TaintEffect;
using ::testing::HasSubstr;
namespace v1 = apis::v1;

// 8 vCPU, 32 GiB: $1.00/h on demand, $0.30/h spot, in one zone.
InstanceTypePtr BigSpotBargain() {
  return MakeType({.name = "big",
                   .cpu = 8,
                   .mem_gi = 32,
                   .price = 1.0,
                   .zones = {"zone-a"},
                   .spot_factor = 0.3});
}

class SolverTest : public ::testing::Test {
 protected:
  Pod* Add(std::unique_ptr<Pod> p) {
    pods_.push_back(std::move(p));
    in_.pods.push_back(pods_.back().get());
    return pods_.back().get();
  }
  void AddPods(int n, const char* cpu, const char* mem, const StringMap& labels = {},
               const std::function<void(Pod&)>& edit = nullptr) {
    for (int i = 0; i < n; ++i) {
      Pod* p = Add(MakePod(absl::StrCat("p", pods_.size()), cpu, mem, labels));
      if (edit) edit(*p);
    }
  }
  // A 6-cpu pod, then a small one that needs on-demand capacity.
  void AddBigPodAndSmallOnDemandPod() {
    AddPods(1, "6", "24Gi");
    AddPods(1, "500m", "512Mi", {}, [](Pod& p) {
      p.spec.node_selector = {{"karpenter.sh/capacity-type", "on-demand"}};
    });
  }
  Plan MustSolve() {
    auto plan = Solve(in_);
    EXPECT_TRUE(plan.ok()) << plan.status();
    return plan.ok() ? *plan : Plan{};
  }
  static size_t PodsOnClaims(const Plan& plan) {
    size_t n = 0;
    for (const auto& c : plan.node_claims) n += c.pods.size();
    return n;
  }

  Input in_;
  std::vector<std::unique_ptr<Pod>> pods_;
};

// c7i.large- and c7i.xlarge-like types in one zone, on-demand only (one 1-vCPU 2-GiB pod fills
// the small one), each offering with `node_price`.
PoolTemplate LargeAndXlarge(double node_price) {
  std::vector<InstanceTypePtr> types;
  for (TypeSpec spec : {TypeSpec{.name = "large", .cpu = 2, .mem_gi = 4, .price = 0.089},
                        TypeSpec{.name = "xlarge", .cpu = 4, .mem_gi = 8, .price = 0.1785}}) {
    spec.zones = {"zone-a"};
    spec.spot_factor = 0;
    spec.reserved_milli_cpu = spec.cpu == 2 ? 70 : 80;
    spec.reserved_memory_mi = spec.cpu == 2 ? 900 : 1500;
    spec.node_price = node_price;
    types.push_back(MakeType(spec));
  }
  return Pool("default", std::move(types));
}

// docs/scheduling.md, "Effective price": what the node itself costs (its root volume and public
// IPv4 address) is paid once per NodeClaim, so it can make one larger node cheaper than two small
// ones that are cheaper by their offering prices alone.
TEST_F(SolverTest, TheNodePriceIsPaidPerNodeClaim) {
  AddPods(2, "1", "2Gi");
  in_.pools = {LargeAndXlarge(0)};
  const Plan bare = MustSolve();
  ASSERT_EQ(bare.node_claims.size(), 2u);
  EXPECT_EQ(bare.node_claims[0].instance_type, "large");
  EXPECT_NEAR(bare.total_price, 0.178, 1e-9);
  EXPECT_NEAR(bare.total_effective_price, 0.178, 1e-9);

  const double node = 20 * 0.08 / 730 + 0.005;  // 20 GiB gp3 and a public IPv4 address
  in_.pools = {LargeAndXlarge(node)};
  const Plan priced = MustSolve();
  ASSERT_EQ(priced.node_claims.size(), 1u);
  const NewNodeClaim& claim = priced.node_claims[0];
  EXPECT_EQ(claim.instance_type, "xlarge");
  EXPECT_NEAR(claim.price, 0.1785, 1e-9);
  EXPECT_NEAR(claim.effective_price, 0.1785 + node, 1e-9);
  EXPECT_NEAR(priced.total_price, 0.1785, 1e-9);
  EXPECT_NEAR(priced.total_effective_price, 0.1785 + node, 1e-9);
}

// The NodePool's own per-node overhead (dovetail.sh/node-overhead-per-hour) counts the same way,
// in the effective price only.
TEST_F(SolverTest, ThePoolNodeOverheadIsPaidPerNodeClaim) {
  AddPods(2, "1", "2Gi");
  in_.pools = {LargeAndXlarge(0)};
  in_.pools[0].node_overhead_per_hour = 0.01;
  const Plan plan = MustSolve();
  ASSERT_EQ(plan.node_claims.size(), 1u);
  EXPECT_EQ(plan.node_claims[0].instance_type, "xlarge");
  EXPECT_NEAR(plan.node_claims[0].price, 0.1785, 1e-9);
  EXPECT_NEAR(plan.node_claims[0].node_overhead, 0.01, 1e-9);
  EXPECT_NEAR(plan.node_claims[0].effective_price, 0.1885, 1e-9);
  EXPECT_NEAR(plan.total_effective_price, 0.1885, 1e-9);
}

TEST_F(SolverTest, EmptyInputGivesEmptyPlan) {
  Plan plan = MustSolve();
  EXPECT_TRUE(plan.node_claims.empty());
  EXPECT_TRUE(plan.unschedulable.empty());
}

TEST_F(SolverTest, PacksSmallPodsOntoOneNodeOfTheCheapestFittingType) {
  in_.pools.push_back(Pool("default", SmallCatalog()));
  AddPods(3, "1", "1Gi");
  Plan plan = MustSolve();
  ASSERT_EQ(plan.node_claims.size(), 1u);
  const auto& c = plan.node_claims[0];
  EXPECT_EQ(c.pods.size(), 3u);
  EXPECT_EQ(c.instance_type, "medium");
  EXPECT_EQ(c.capacity_type, "spot");
  EXPECT_DOUBLE_EQ(c.price, 0.10);
  EXPECT_EQ(c.instance_types.front()->name(), "medium");
  EXPECT_EQ(c.labels.at(std::string(v1::kNodePoolLabelKey)), "default");
  EXPECT_EQ(c.labels.at(std::string(v1::kLabelInstanceType)), "medium");
  ASSERT_TRUE(plan.lower_bound.has_value()) << plan.lower_bound_error;
  EXPECT_LE(*plan.lower_bound, plan.total_price + 1e-9);
}

TEST_F(SolverTest, FillsExistingNodesBeforeLaunching) {
  in_.pools.push_back(Pool("default", SmallCatalog()));
  ExistingNode n;
  n.name = "node-1";
  n.labels = {{"kubernetes.io/arch", "amd64"}, {"topology.kubernetes.io/zone", "zone-a"}};
  n.allocatable = {{"cpu", Q("4")}, {"memory", Q("8Gi")}, {"pods", Q("110")}};
  in_.nodes.push_back(n);
  AddPods(4, "1", "1Gi");
  AddPods(1, "1", "1Gi");
  Plan plan = MustSolve();
  ASSERT_EQ(plan.existing.size(), 1u);
  EXPECT_EQ(plan.existing[0].pods.size(), 4u);
  ASSERT_EQ(plan.node_claims.size(), 1u);
  EXPECT_EQ(plan.node_claims[0].pods.size(), 1u);
}

// Quantities beyond int64 milli-units (a 10Pi request, a Node reporting 1e30 bytes) saturate: the
// huge pod fits no instance type and is unschedulable with a reason, the rest of the batch plans
// as if it were not there, and the saturated sums on the huge node never wrap around.
TEST_F(SolverTest, HugeRequestsAreUnschedulableWithoutFailingTheBatch) {
  in_.pools.push_back(Pool("default", SmallCatalog()));
  AddPods(2, "1", "10Pi");
  AddPods(1, "1e30", "1Gi");
  AddPods(3, "1", "1Gi");
  Plan plan = MustSolve();
  ASSERT_EQ(plan.unschedulable.size(), 3u);
  for (const auto& u : plan.unschedulable) {
    EXPECT_THAT(u.reason, HasSubstr("nodepool \"default\"")) << u.reason;
  }
  size_t placed = 0;
  for (const auto& c : plan.node_claims) placed += c.pods.size();
  EXPECT_EQ(placed, 3u);
  ASSERT_TRUE(plan.lower_bound.has_value()) << plan.lower_bound_error;
  EXPECT_LE(*plan.lower_bound, plan.total_price + 1e-9);

  // A Node whose status reports absurd capacity: saturated amounts are finite (a saturated
  // request fills a saturated capacity), so the plan places or explains every pod without
  // overflowing anywhere.
  ExistingNode n;
  n.name = "tampered";
  n.labels = {{"kubernetes.io/arch", "amd64"}, {"topology.kubernetes.io/zone", "zone-a"}};
  n.allocatable = {{"cpu", Q("1e30")}, {"memory", Q("100Ei")}, {"pods", Q("1e30")}};
  in_.nodes.push_back(n);
  Plan with_node = MustSolve();
  size_t accounted = PodsOnClaims(with_node) + with_node.unschedulable.size();
  for (const auto& e : with_node.existing) accounted += e.pods.size();
  EXPECT_EQ(accounted, 6u);
  ASSERT_EQ(with_node.existing.size(), 1u);
  EXPECT_GE(with_node.existing[0].pods.size(), 1u);
}

TEST_F(SolverTest, DoesNotScheduleOnConflictingNodeSelector) {
  in_.pools.push_back(Pool("default", SmallCatalog()));
  AddPods(1, "1", "1Gi", {}, [](Pod& p) {
    p.spec.node_selector = {{"kubernetes.io/arch", "arm64"}};
  });
  Plan plan = MustSolve();
  EXPECT_TRUE(plan.node_claims.empty());
  ASSERT_EQ(plan.unschedulable.size(), 1u);
  EXPECT_THAT(plan.unschedulable[0].reason, HasSubstr("nodepool \"default\""));
  EXPECT_THAT(plan.unschedulable[0].reason, HasSubstr("kubernetes.io/arch"));
}

TEST_F(SolverTest, HonoursZoneNodeSelector) {
  in_.pools.push_back(Pool("default", SmallCatalog()));
  AddPods(2, "1", "1Gi", {}, [](Pod& p) {
    p.spec.node_selector = {{"topology.kubernetes.io/zone", "zone-b"}};
  });
  Plan plan = MustSolve();
  ASSERT_EQ(plan.node_claims.size(), 1u);
  EXPECT_EQ(plan.node_claims[0].zone, "zone-b");
  EXPECT_EQ(plan.node_claims[0].labels.at("topology.kubernetes.io/zone"), "zone-b");
}

// A small pod that needs on-demand would turn a spot NodeClaim holding a large pod into an
// on-demand one (+$0.70/h); a node of its own costs $0.10/h.
TEST_F(SolverTest, OnDemandPodDoesNotPullASpotNodeClaimToOnDemand) {
  in_.pools.push_back(Pool("default", {Type("small", 2, 4, 0.1), BigSpotBargain()}));
  AddBigPodAndSmallOnDemandPod();
  Plan plan = MustSolve();
  ASSERT_EQ(plan.node_claims.size(), 2u);
  EXPECT_TRUE(plan.unschedulable.empty());
  EXPECT_NEAR(plan.total_price, 0.3 + 0.1, 1e-9);
  EXPECT_EQ(plan.node_claims[0].capacity_type, "spot");
  EXPECT_EQ(plan.node_claims[1].capacity_type, "on-demand");
}

// When the pool's limits leave no room for a node of its own, the pod still joins the claim.
TEST_F(SolverTest, PriceGuardGivesWayWhenLimitsAllowNoNewNodeClaim) {
  in_.pools.push_back(LimitedPool("default", {BigSpotBargain()}, {{"cpu", Q("8")}}));
  AddBigPodAndSmallOnDemandPod();
  Plan plan = MustSolve();
  ASSERT_EQ(plan.node_claims.size(), 1u);
  EXPECT_TRUE(plan.unschedulable.empty());
  EXPECT_EQ(plan.node_claims[0].capacity_type, "on-demand");
  EXPECT_EQ(plan.node_claims[0].pods.size(), 2u);
}

TEST_F(SolverTest, UntoleratedPoolTaintMakesPodUnschedulable) {
  PoolTemplate gpu = Pool("gpu", SmallCatalog());
  gpu.taints.push_back({"nvidia.com/gpu", "true", TaintEffect::kNoSchedule});
  in_.pools.push_back(gpu);
  AddPods(1, "1", "1Gi");
  Plan plan = MustSolve();
  ASSERT_EQ(plan.unschedulable.size(), 1u);
  EXPECT_THAT(plan.unschedulable[0].reason, HasSubstr("did not tolerate taint"));
  // With a toleration, it schedules.
  Tolerate(*pods_[0], "nvidia.com/gpu");
  Plan ok = MustSolve();
  EXPECT_TRUE(ok.unschedulable.empty());
  ASSERT_EQ(ok.node_claims.size(), 1u);
  EXPECT_EQ(ok.node_claims[0].taints.size(), 1u);
}

TEST_F(SolverTest, HigherWeightPoolIsTriedFirst) {
  in_.pools.push_back(Pool("cheap", SmallCatalog(), 10));
  in_.pools.push_back(Pool("other", SmallCatalog(), 50));
  AddPods(1, "1", "1Gi");
  Plan plan = MustSolve();
  ASSERT_EQ(plan.node_claims.size(), 1u);
  EXPECT_EQ(plan.node_claims[0].pool, "other");
}

TEST_F(SolverTest, HostnameAntiAffinityPutsEachPodOnItsOwnNode) {
  in_.pools.push_back(Pool("default", SmallCatalog()));
  AddPods(5, "100m", "128Mi", {{"app", "db"}}, [](Pod& p) {
    AddAntiAffinity(p, kHost, {{"app", "db"}});
  });
  Plan plan = MustSolve();
  ASSERT_EQ(plan.node_claims.size(), 5u);
  for (const auto& c : plan.node_claims) EXPECT_EQ(c.pods.size(), 1u);
  ASSERT_TRUE(plan.lower_bound.has_value());
  // Each pod needs its own node: the bound counts five of the cheapest node.
  EXPECT_NEAR(*plan.lower_bound, 5 * 0.05, 1e-9);
}

TEST_F(SolverTest, AntiAffinityBoundCountsANodePerPodAcrossPodSizes) {
  // Two sizes of pod in one anti-affinity group: the large ones cannot use the small type, and no
  // two pods of the group may share a node, so the bound counts every pod on a node of its own
  // (and is then as high as the optimal plan).
  in_.pools.push_back(Pool("default", SmallCatalog()));
  auto anti = [](Pod& p) { AddAntiAffinity(p, kHost, {{"app", "db"}}); };
  AddPods(4, "100m", "128Mi", {{"app", "db"}}, anti);
  AddPods(2, "3", "1Gi", {{"app", "db"}}, anti);
  Plan plan = MustSolve();
  ASSERT_EQ(plan.node_claims.size(), 6u);
  EXPECT_NEAR(plan.total_price, 4 * 0.05 + 2 * 0.10, 1e-9);
  ASSERT_TRUE(plan.lower_bound.has_value()) << plan.lower_bound_error;
  EXPECT_NEAR(*plan.lower_bound, plan.total_price, 1e-9);
}

TEST_F(SolverTest, BoundIsAtLeastOneNodeThatFitsWhenNoExistingNodeCan) {
  in_.pools.push_back(Pool("default", SmallCatalog()));
  AddPods(1, "3", "1Gi");
  Plan plan = MustSolve();
  ASSERT_EQ(plan.node_claims.size(), 1u);
  ASSERT_TRUE(plan.lower_bound.has_value()) << plan.lower_bound_error;
  // The LP alone would buy 3/4 of a medium node; a pod needs a whole one.
  EXPECT_NEAR(*plan.lower_bound, plan.total_price, 1e-9);
}

TEST_F(SolverTest, RepackingPutsEachPodShapeOnTheTypeThatSuitsIt) {
  // Greedy packing puts the memory-heavy pods on one large general-purpose node; re-packing moves
  // them onto two memory-optimised nodes, and the cpu-heavy pods stay on cpu-optimised ones.
  in_.pools.push_back(Pool(
      "default", {Type("cpu8", 8, 8, 0.20), Type("mem16", 2, 16, 0.20), Type("gen", 8, 32, 1.00)}));
  AddPods(8, "2", "1Gi");
  AddPods(8, "250m", "4Gi");
  Plan plan = MustSolve();
  EXPECT_TRUE(plan.unschedulable.empty());
  EXPECT_NEAR(plan.total_price, 4 * 0.10, 1e-9);
  std::map<std::string, int> by_type;
  for (const auto& c : plan.node_claims) ++by_type[c.instance_type];
  EXPECT_EQ(by_type["cpu8"], 2);
  EXPECT_EQ(by_type["mem16"], 2);
  ASSERT_TRUE(plan.lower_bound.has_value());
  EXPECT_LE(*plan.lower_bound, plan.total_price + 1e-9);
}

TEST_F(SolverTest, RepackingPutsTheBulkOnALargeTypeAndTheRemainderOnSmallOnes) {
  // Prices linear in size and a fixed reservation per node (as kwok's catalog has): per pod, the
  // largest node is cheapest, but 223 pods on one type either waste most of a second large node or
  // need 15 mid-sized ones. One large node for the bulk and small ones for the rest beat every
  // single-type packing, on fewer nodes.
  std::vector<InstanceTypePtr> types;
  for (int cpu : {2, 4, 8, 16, 48}) {
    types.push_back(MakeType({.name = absl::StrCat("c-", cpu, "x"),
                              .cpu = cpu,
                              .mem_gi = int64_t{2} * cpu,
                              .price = 0.02715 * cpu,
                              .spot_factor = 0,
                              .pods = 1000,
                              .reserved_milli_cpu = 200,
                              .reserved_memory_mi = 512}));
  }
  in_.pools.push_back(Pool("default", types));
  constexpr int kPods = 223;
  AddPods(kPods, "250m", "512Mi");
  // The cheapest way to put every pod on nodes of one type.
  double single_type = std::numeric_limits<double>::infinity();
  for (int cpu : {2, 4, 8, 16, 48}) {
    const int per_node = std::min((cpu * 1000 - 200) / 250, (2 * cpu * 1024 - 512) / 512);
    const int nodes = (kPods + per_node - 1) / per_node;  // whole nodes
    single_type = std::min(single_type, 0.02715 * cpu * nodes);
  }
  Plan plan = MustSolve();
  EXPECT_TRUE(plan.unschedulable.empty());
  EXPECT_EQ(PodsOnClaims(plan), static_cast<size_t>(kPods));
  EXPECT_LT(plan.total_price, single_type - 1e-6);
  std::map<std::string, int> by_type;
  for (const auto& c : plan.node_claims) ++by_type[c.instance_type];
  EXPECT_EQ(by_type["c-48x"], 1) << plan.node_claims.size() << " NodeClaims";
  EXPECT_LE(plan.node_claims.size(), 3u);
  ASSERT_TRUE(plan.lower_bound.has_value());
  EXPECT_LE(*plan.lower_bound, plan.total_price + 1e-9);
}

TEST_F(SolverTest, ZoneSpreadBalancesAcrossZones) {
  in_.pools.push_back(Pool("default", SmallCatalog()));
  AddPods(6, "1", "1Gi", {{"app", "web"}}, [](Pod& p) {
    AddSpread(p, kZone, 1, {{"app", "web"}});
  });
  Plan plan = MustSolve();
  std::map<std::string, int> per_zone;
  for (const auto& c : plan.node_claims) per_zone[c.zone] += static_cast<int>(c.pods.size());
  EXPECT_EQ(per_zone.size(), 3u);
  for (const auto& [z, n] : per_zone) EXPECT_EQ(n, 2) << z;
}

TEST_F(SolverTest, SelfAffinityBootstrapsIntoOneZone) {
  in_.pools.push_back(Pool("default", SmallCatalog()));
  AddPods(6, "2", "2Gi", {{"app", "cache"}}, [](Pod& p) {
    AddAffinity(p, kZone, {{"app", "cache"}});
  });
  Plan plan = MustSolve();
  EXPECT_TRUE(plan.unschedulable.empty());
  absl::flat_hash_set<std::string> zones;
  for (const auto& c : plan.node_claims) zones.insert(c.zone);
  EXPECT_EQ(zones.size(), 1u);
}

TEST_F(SolverTest, NodePoolLimitsStopLaunchesMidBatch) {
  in_.pools.push_back(LimitedPool("limited", {Type("medium", 4, 8, 0.2)}, {{"cpu", Q("8")}}));
  AddPods(5, "3", "1Gi");  // one pod per 4-cpu node; only two nodes fit in 8 cpu
  Plan plan = MustSolve();
  EXPECT_EQ(plan.node_claims.size(), 2u);
  EXPECT_EQ(plan.unschedulable.size(), 3u);
  EXPECT_THAT(plan.unschedulable[0].reason, HasSubstr("limits"));
}

TEST_F(SolverTest, DaemonSetOverheadIsReservedOnNewNodes) {
  in_.pools.push_back(Pool("default", {Type("medium", 4, 8, 0.2), Type("large", 8, 16, 0.4)}));
  auto ds = MakePod("ds", "1", "1Gi");
  in_.daemon_sets.push_back({"kube-system/agent", ds.get()});
  AddPods(4, "1", "1Gi");  // 4 cpu + 1 cpu daemon does not fit in 4 cpu
  Plan plan = MustSolve();
  ASSERT_EQ(plan.node_claims.size(), 1u);
  EXPECT_EQ(plan.node_claims[0].instance_type, "large");
  EXPECT_EQ(plan.node_claims[0].requests.at("cpu").MilliValue(), 5000);
}

TEST_F(SolverTest, DaemonSetThatDoesNotTolerateTaintAddsNoOverhead) {
  PoolTemplate p = Pool("tainted", {Type("medium", 4, 8, 0.2), Type("large", 8, 16, 0.4)});
  p.taints.push_back({"dedicated", "x", TaintEffect::kNoSchedule});
  in_.pools.push_back(p);
  auto ds = MakePod("ds", "1", "1Gi");
  in_.daemon_sets.push_back({"kube-system/agent", ds.get()});
  AddPods(4, "1", "1Gi", {}, [](Pod& pod) {
    pod.spec.tolerations.push_back(
        {"dedicated", apis::core::TolerationOperator::kEqual, "x", TaintEffect::kNoSchedule});
  });
  Plan plan = MustSolve();
  ASSERT_EQ(plan.node_claims.size(), 1u);
  EXPECT_EQ(plan.node_claims[0].instance_type, "medium");
}

TEST_F(SolverTest, MinValuesKeepsEnoughInstanceTypes) {
  PoolTemplate p = Pool("flex", SmallCatalog());
  ASSERT_TRUE(AddMinValues(p, v1::kLabelInstanceType, 3).ok());
  in_.pools.push_back(p);
  AddPods(1, "6", "1Gi");  // only large and xlarge fit: two values < minValues 3
  Plan plan = MustSolve();
  ASSERT_EQ(plan.unschedulable.size(), 1u);
  EXPECT_THAT(plan.unschedulable[0].reason, HasSubstr("minValues"));
  in_.options.min_values_strict = false;
  Plan relaxed = MustSolve();
  ASSERT_EQ(relaxed.node_claims.size(), 1u);
  EXPECT_TRUE(relaxed.node_claims[0].min_values_relaxed);
}

TEST_F(SolverTest, HostPortsNeverShareANode) {
  in_.pools.push_back(Pool("default", SmallCatalog()));
  AddPods(3, "100m", "100Mi", {}, [](Pod& p) { AddHostPort(p, 8080); });
  Plan plan = MustSolve();
  EXPECT_EQ(plan.node_claims.size(), 3u);
}

TEST_F(SolverTest, PreferredNodeAffinityIsRelaxedWhenUnsatisfiable) {
  in_.pools.push_back(Pool("default", SmallCatalog()));
  AddPods(1, "1", "1Gi", {}, [](Pod& p) {
    apis::core::PreferredSchedulingTerm t;
    t.weight = 50;
    t.preference.match_expressions.push_back(
        {"kubernetes.io/arch", SelectorOperator::kIn, {"arm64"}, std::nullopt});
    p.spec.affinity.emplace().node_affinity.emplace().preferred.push_back(t);
  });
  Plan plan = MustSolve();
  EXPECT_TRUE(plan.unschedulable.empty());
  ASSERT_EQ(plan.node_claims.size(), 1u);
}

TEST_F(SolverTest, InverseAntiAffinityOfExistingPodsIsHonoured) {
  in_.pools.push_back(Pool("default", SmallCatalog()));
  ExistingNode n;
  n.name = "node-1";
  n.labels = {{"kubernetes.io/arch", "amd64"},
              {"topology.kubernetes.io/zone", "zone-a"},
              {"kubernetes.io/hostname", "node-1"}};
  n.allocatable = {{"cpu", Q("16")}, {"memory", Q("32Gi")}, {"pods", Q("110")}};
  in_.nodes.push_back(n);
  auto guard = MakePod("guard", "100m", "100Mi");
  guard->spec.node_name = "node-1";
  AddAntiAffinity(*guard, kHost, {{"app", "noisy"}});
  in_.bound_pods.push_back(guard.get());
  AddPods(1, "1", "1Gi", {{"app", "noisy"}});
  AddPods(1, "1", "1Gi", {{"app", "quiet"}});
  Plan plan = MustSolve();
  ASSERT_EQ(plan.existing.size(), 1u);
  ASSERT_EQ(plan.existing[0].pods.size(), 1u);
  EXPECT_EQ(plan.existing[0].pods[0]->metadata.labels.at("app"), "quiet");
  ASSERT_EQ(plan.node_claims.size(), 1u);
}

TEST_F(SolverTest, EveryPodAppearsExactlyOnce) {
  in_.pools.push_back(Pool("default", SmallCatalog()));
  AddPods(40, "500m", "1Gi");
  AddPods(3, "100", "1Gi");  // too large for any type
  Plan plan = MustSolve();
  EXPECT_EQ(PodsOnClaims(plan) + plan.unschedulable.size(), 43u);
  EXPECT_EQ(plan.unschedulable.size(), 3u);
  EXPECT_THAT(plan.unschedulable[0].reason, HasSubstr("enough resources"));
}

}  // namespace
}  // namespace dovetail::solver
