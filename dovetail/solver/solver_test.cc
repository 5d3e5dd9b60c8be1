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
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::solver {
namespace {

using apis::core::LabelSelector;
using apis::core::NodeSelectorRequirement;
using apis::core::SelectorOperator;
using apis::core::Taint;
using apis::core::TaintEffect;
using cloudprovider::InstanceType;
using cloudprovider::InstanceTypeOverhead;
using cloudprovider::Offering;
using cloudprovider::Offerings;
using scheduling::Requirements;
using ::testing::HasSubstr;
namespace v1 = apis::v1;

Quantity Q(const char* s) { return *Quantity::Parse(s); }

// A type with `cpu` vCPUs and `mem_gi` GiB, offered on-demand in every zone at `price` and spot
// at half of it.
InstanceTypePtr Type(const std::string& name, int cpu, int mem_gi, double price,
                     std::vector<std::string> zones = {"zone-a", "zone-b", "zone-c"},
                     const std::string& arch = "amd64") {
  std::vector<Offering> offerings;
  for (const auto& z : zones) {
    offerings.push_back(Offering::Make("on-demand", z, "", price, true));
    offerings.push_back(Offering::Make("spot", z, "", price / 2, true));
  }
  std::vector<std::string> cts = {"on-demand", "spot"};
  Requirements reqs;
  reqs.Add(scheduling::Requirement::In(std::string(v1::kLabelInstanceType), {name}));
  reqs.Add(scheduling::Requirement::In(std::string(v1::kLabelArch), {arch}));
  reqs.Add(scheduling::Requirement::In(std::string(v1::kLabelOS), {"linux"}));
  reqs.Add(scheduling::Requirement::In(std::string(v1::kLabelTopologyZone), zones));
  reqs.Add(scheduling::Requirement::In(std::string(v1::kCapacityTypeLabelKey), cts));
  ResourceList capacity{{"cpu", Quantity::FromUnits(cpu)},
                        {"memory", Quantity::FromUnits(int64_t{mem_gi} << 30)},
                        {"pods", Quantity::FromUnits(110)}};
  return std::make_shared<InstanceType>(name, std::move(reqs), Offerings(std::move(offerings)),
                                        std::move(capacity), InstanceTypeOverhead{});
}

// 8 vCPU, 32 GiB: $1.00/h on demand, $0.30/h spot, in one zone.
InstanceTypePtr BigSpotBargain() {
  Requirements reqs;
  reqs.Add(scheduling::Requirement::In(std::string(v1::kLabelInstanceType), {"big"}));
  reqs.Add(scheduling::Requirement::In(std::string(v1::kLabelArch), {"amd64"}));
  reqs.Add(scheduling::Requirement::In(std::string(v1::kLabelOS), {"linux"}));
  reqs.Add(scheduling::Requirement::In(std::string(v1::kLabelTopologyZone), {"zone-a"}));
  reqs.Add(
      scheduling::Requirement::In(std::string(v1::kCapacityTypeLabelKey), {"on-demand", "spot"}));
  ResourceList capacity{{"cpu", Quantity::FromUnits(8)},
                        {"memory", Quantity::FromUnits(int64_t{32} << 30)},
                        {"pods", Quantity::FromUnits(110)}};
  return std::make_shared<InstanceType>(
      "big", std::move(reqs),
      Offerings({Offering::Make("on-demand", "zone-a", "", 1.0, true),
                 Offering::Make("spot", "zone-a", "", 0.3, true)}),
      std::move(capacity), InstanceTypeOverhead{});
}

std::vector<InstanceTypePtr> SmallCatalog() {
  return {Type("small", 2, 4, 0.10), Type("medium", 4, 8, 0.20), Type("large", 8, 16, 0.40),
          Type("xlarge", 16, 32, 0.80)};
}

PoolTemplate Pool(const std::string& name, std::vector<InstanceTypePtr> types, int weight = 0) {
  PoolTemplate p;
  p.name = name;
  p.weight = weight;
  p.instance_types = std::move(types);
  return p;
}

std::unique_ptr<Pod> MakePod(const std::string& name, const char* cpu, const char* mem,
                             StringMap labels = {}) {
  auto p = std::make_unique<Pod>();
  p->metadata.name = name;
  p->metadata.namespace_ = "default";
  p->metadata.uid = "uid-" + name;
  p->metadata.labels = std::move(labels);
  apis::core::Container c;
  c.name = "app";
  c.resources.requests = {{"cpu", Q(cpu)}, {"memory", Q(mem)}};
  p->spec.containers.push_back(std::move(c));
  return p;
}

class SolverTest : public ::testing::Test {
 protected:
  Pod* Add(std::unique_ptr<Pod> p) {
    pods_.push_back(std::move(p));
    in_.pods.push_back(pods_.back().get());
    return pods_.back().get();
  }
  void AddPods(int n, const char* cpu, const char* mem, StringMap labels = {},
               const std::function<void(Pod&)>& edit = nullptr) {
    for (int i = 0; i < n; ++i) {
      Pod* p = Add(MakePod(absl::StrCat("p", pods_.size()), cpu, mem, labels));
      if (edit) edit(*p);
    }
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
  AddPods(1, "6", "24Gi");
  AddPods(1, "500m", "512Mi", {}, [](Pod& p) {
    p.spec.node_selector = {{"karpenter.sh/capacity-type", "on-demand"}};
  });
  Plan plan = MustSolve();
  ASSERT_EQ(plan.node_claims.size(), 2u);
  EXPECT_TRUE(plan.unschedulable.empty());
  EXPECT_NEAR(plan.total_price, 0.3 + 0.1, 1e-9);
  EXPECT_EQ(plan.node_claims[0].capacity_type, "spot");
  EXPECT_EQ(plan.node_claims[1].capacity_type, "on-demand");
}

// When the pool's limits leave no room for a node of its own, the pod still joins the claim.
TEST_F(SolverTest, PriceGuardGivesWayWhenLimitsAllowNoNewNodeClaim) {
  in_.pools.push_back(Pool("default", {BigSpotBargain()}));
  in_.pools.back().remaining_limits = ResourceList{{"cpu", Q("8")}};
  AddPods(1, "6", "24Gi");
  AddPods(1, "500m", "512Mi", {}, [](Pod& p) {
    p.spec.node_selector = {{"karpenter.sh/capacity-type", "on-demand"}};
  });
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
  pods_[0]->spec.tolerations.push_back(
      {"nvidia.com/gpu", apis::core::TolerationOperator::kExists, "", std::nullopt});
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
    apis::core::PodAffinityTerm t;
    t.topology_key = "kubernetes.io/hostname";
    t.label_selector = LabelSelector{{{"app", "db"}}, {}};
    p.spec.affinity.emplace().pod_anti_affinity.emplace().required.push_back(t);
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
  auto anti = [](Pod& p) {
    apis::core::PodAffinityTerm t;
    t.topology_key = "kubernetes.io/hostname";
    t.label_selector = LabelSelector{{{"app", "db"}}, {}};
    p.spec.affinity.emplace().pod_anti_affinity.emplace().required.push_back(t);
  };
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
    std::vector<Offering> offerings;
    for (const char* z : {"zone-a", "zone-b", "zone-c"}) {
      offerings.push_back(Offering::Make("on-demand", z, "", 0.02715 * cpu, true));
    }
    const std::string name = absl::StrCat("c-", cpu, "x");
    Requirements reqs;
    reqs.Add(scheduling::Requirement::In(std::string(v1::kLabelInstanceType), {name}));
    reqs.Add(scheduling::Requirement::In(std::string(v1::kLabelArch), {"amd64"}));
    reqs.Add(scheduling::Requirement::In(std::string(v1::kLabelOS), {"linux"}));
    reqs.Add(scheduling::Requirement::In(std::string(v1::kLabelTopologyZone),
                                         {"zone-a", "zone-b", "zone-c"}));
    reqs.Add(scheduling::Requirement::In(std::string(v1::kCapacityTypeLabelKey), {"on-demand"}));
    ResourceList capacity{{"cpu", Quantity::FromUnits(cpu)},
                          {"memory", Quantity::FromUnits(int64_t{2 * cpu} << 30)},
                          {"pods", Quantity::FromUnits(1000)}};
    InstanceTypeOverhead overhead;
    overhead.kube_reserved = {{"cpu", Q("200m")}, {"memory", Q("512Mi")}};
    types.push_back(std::make_shared<InstanceType>(name, std::move(reqs),
                                                   Offerings(std::move(offerings)),
                                                   std::move(capacity), std::move(overhead)));
  }
  in_.pools.push_back(Pool("default", types));
  constexpr int kPods = 223;
  AddPods(kPods, "250m", "512Mi");
  // The cheapest way to put every pod on nodes of one type.
  double single_type = std::numeric_limits<double>::infinity();
  for (int cpu : {2, 4, 8, 16, 48}) {
    const int per_node = std::min((cpu * 1000 - 200) / 250, (2 * cpu * 1024 - 512) / 512);
    single_type = std::min(single_type, 0.02715 * cpu * ((kPods + per_node - 1) / per_node));
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
    apis::core::TopologySpreadConstraint c;
    c.max_skew = 1;
    c.topology_key = "topology.kubernetes.io/zone";
    c.label_selector = LabelSelector{{{"app", "web"}}, {}};
    p.spec.topology_spread_constraints.push_back(c);
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
    apis::core::PodAffinityTerm t;
    t.topology_key = "topology.kubernetes.io/zone";
    t.label_selector = LabelSelector{{{"app", "cache"}}, {}};
    p.spec.affinity.emplace().pod_affinity.emplace().required.push_back(t);
  });
  Plan plan = MustSolve();
  EXPECT_TRUE(plan.unschedulable.empty());
  absl::flat_hash_set<std::string> zones;
  for (const auto& c : plan.node_claims) zones.insert(c.zone);
  EXPECT_EQ(zones.size(), 1u);
}

TEST_F(SolverTest, NodePoolLimitsStopLaunchesMidBatch) {
  PoolTemplate p = Pool("limited", {Type("medium", 4, 8, 0.2)});
  p.remaining_limits = ResourceList{{"cpu", Q("8")}};
  in_.pools.push_back(p);
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
  NodeSelectorRequirement r{"node.kubernetes.io/instance-type", SelectorOperator::kExists, {}, 3};
  ASSERT_TRUE(p.requirements.Add(r).ok());
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
  AddPods(3, "100m", "100Mi", {}, [](Pod& p) {
    apis::core::ContainerPort port;
    port.host_port = 8080;
    port.container_port = 8080;
    p.spec.containers[0].ports.push_back(port);
  });
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
  apis::core::PodAffinityTerm t;
  t.topology_key = "kubernetes.io/hostname";
  t.label_selector = LabelSelector{{{"app", "noisy"}}, {}};
  guard->spec.affinity.emplace().pod_anti_affinity.emplace().required.push_back(t);
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
