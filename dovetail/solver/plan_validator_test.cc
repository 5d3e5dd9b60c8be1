#include "dovetail/solver/plan_validator.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "dovetail/apis/core/pod_requests.h"
#include "dovetail/solver/solver_test_builders.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::solver {
namespace {

using apis::core::NodeSelectorTerm;
using apis::core::SelectorOperator;
using apis::core::TaintEffect;
using ::testing::IsEmpty;
namespace v1 = apis::v1;

std::string Describe(const std::vector<Violation>& vs) {
  std::vector<std::string> lines;
  lines.reserve(vs.size());
  for (const auto& v : vs) lines.push_back(v.ToString());
  return absl::StrJoin(lines, "\n");
}

bool HasKind(const std::vector<Violation>& vs, ViolationKind kind) {
  for (const auto& v : vs) {
    if (v.kind == kind) return true;
  }
  return false;
}

// Plans built by hand: one NodeClaim per call, priced and labelled as a correct solver would.
class PlanValidatorTest : public ::testing::Test {
 protected:
  NewNodeClaim Claim(const std::string& pool_name, const std::string& type_name,
                     const std::string& zone, const std::string& ct,
                     const std::vector<Pod*>& pods) {
    const PoolTemplate* pool = nullptr;
    for (const auto& p : s_.input.pools) {
      if (p.name == pool_name) pool = &p;
    }
    EXPECT_NE(pool, nullptr) << pool_name;
    InstanceTypePtr type;
    for (const auto& t : pool->instance_types) {
      if (t->name() == type_name) type = t;
    }
    EXPECT_NE(type, nullptr) << type_name;
    NewNodeClaim c;
    c.pool = pool_name;
    c.hostname = absl::StrCat("claim-", next_++);
    c.requirements = pool->requirements;
    c.requirements.Add(
        scheduling::Requirement::In(std::string(v1::kLabelInstanceType), {type_name}));
    c.requirements.Add(scheduling::Requirement::In(std::string(kZone), {zone}));
    c.requirements.Add(scheduling::Requirement::In(std::string(v1::kCapacityTypeLabelKey), {ct}));
    c.instance_types = {type};
    c.instance_type = type_name;
    c.zone = zone;
    c.capacity_type = ct;
    for (const auto& o : type->offerings()) {
      if (o.zone == zone && o.capacity_type == ct) {
        c.price = o.price;
        c.effective_price = o.EffectivePrice();
      }
    }
    c.labels = type->requirements().SingleValuedLabels();
    c.labels[std::string(kZone)] = zone;
    c.labels[std::string(v1::kCapacityTypeLabelKey)] = ct;
    for (const auto& [k, v] : pool->labels) c.labels[k] = v;
    c.labels[std::string(v1::kNodePoolLabelKey)] = pool_name;
    c.labels[std::string(kHost)] = c.hostname;
    c.taints = pool->taints;
    Amounts sum;
    for (Pod* p : pods) {
      c.pods.push_back(p);
      for (const auto& [k, q] : apis::core::PodRequests(*p)) sum[k] += q.MilliValue();
    }
    for (const auto& [k, v] : sum) c.requests[k] = Quantity::FromMilli(v);
    return c;
  }
  // Makes `names` the claim's options (and its instance-type requirement).
  void SetTypes(NewNodeClaim& c, const std::vector<std::string>& names,
                std::vector<InstanceTypePtr> types) {
    c.requirements.Remove(v1::kLabelInstanceType);
    c.requirements.Add(scheduling::Requirement::In(std::string(v1::kLabelInstanceType), names));
    c.instance_types = std::move(types);
  }
  void Finish() {
    plan_.total_price = 0;
    plan_.total_effective_price = 0;
    for (const auto& c : plan_.node_claims) {
      plan_.total_price += c.price;
      plan_.total_effective_price += c.effective_price;
    }
  }
  std::vector<Violation> Validate() {
    Finish();
    return ValidatePlan(s_.input, plan_);
  }
  // The pool's claims go to `default`, a pool over SmallCatalog().
  void DefaultPool() { s_.input.pools.push_back(Pool("default", SmallCatalog())); }

  using Amounts = std::map<std::string, int64_t>;
  Scene s_;
  Plan plan_;
  int next_ = 0;
};

#define EXPECT_VALID()                          \
  do {                                          \
    auto vs = Validate();                       \
    EXPECT_THAT(vs, IsEmpty()) << Describe(vs); \
  } while (0)
// Validates once and expects a violation of each kind given.
#define EXPECT_VIOLATION(...)                                                         \
  do {                                                                                \
    auto vs = Validate();                                                             \
    for (ViolationKind kind : {__VA_ARGS__}) {                                        \
      EXPECT_TRUE(HasKind(vs, kind)) << ViolationKindName(kind) << " missing; got:\n" \
                                     << Describe(vs);                                 \
    }                                                                                 \
  } while (0)

// ---- accounting -----------------------------------------------------------------------------

TEST_F(PlanValidatorTest, HandBuiltPlanWithClaimsAndExistingNodeIsValid) {
  DefaultPool();
  s_.input.nodes.push_back(Node("n1", "zone-a", "4", "8Gi", "default"));
  auto pods = s_.AddPods(3, "web", "1", "1Gi");
  plan_.existing.push_back({"n1", {pods[0]}});
  plan_.node_claims.push_back(Claim("default", "medium", "zone-b", "spot", {pods[1], pods[2]}));
  EXPECT_VALID();
}

TEST_F(PlanValidatorTest, CatchesMissingDuplicatedAndUnknownPods) {
  DefaultPool();
  auto pods = s_.AddPods(3, "web", "1", "1Gi");
  auto stranger = MakePod("stranger", "1", "1Gi");
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", {pods[0], pods[1]}));
  plan_.unschedulable.push_back({pods[0], "also here"});
  plan_.node_claims[0].pods.push_back(stranger.get());
  // web-2 is missing, web-0 is there twice, stranger is no pod of the input.
  EXPECT_VIOLATION(ViolationKind::kPodMissing, ViolationKind::kPodDuplicated,
                   ViolationKind::kUnknownPod);
}

TEST_F(PlanValidatorTest, CatchesUnknownNodeAndMissingReason) {
  DefaultPool();
  auto pods = s_.AddPods(2, "web", "1", "1Gi");
  plan_.existing.push_back({"ghost", {pods[0]}});
  plan_.unschedulable.push_back({pods[1], ""});
  EXPECT_VIOLATION(ViolationKind::kUnknownNode, ViolationKind::kMissingReason);
}

// ---- NodeClaims: pool, options, offering, price, labels -------------------------------------

TEST_F(PlanValidatorTest, CatchesUnknownPoolAndEmptyClaim) {
  DefaultPool();
  auto pods = s_.AddPods(1, "web", "1", "1Gi");
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", {pods[0]}));
  plan_.node_claims.push_back(Claim("default", "small", "zone-a", "spot", {}));
  plan_.node_claims[0].pool = "elsewhere";
  EXPECT_VIOLATION(ViolationKind::kUnknownPool, ViolationKind::kEmptyNodeClaim);
}

TEST_F(PlanValidatorTest, CatchesChosenTypeThatIsNotAnOption) {
  DefaultPool();
  auto pods = s_.AddPods(1, "web", "1", "1Gi");
  auto c = Claim("default", "medium", "zone-a", "spot", {pods[0]});
  SetTypes(c, {"medium", "large"}, {s_.input.pools[0].instance_types[2]});  // large only
  plan_.node_claims.push_back(c);
  EXPECT_VIOLATION(ViolationKind::kInstanceType);
}

TEST_F(PlanValidatorTest, CatchesOptionOutsideThePool) {
  DefaultPool();
  auto pods = s_.AddPods(1, "web", "1", "1Gi");
  auto c = Claim("default", "medium", "zone-a", "spot", {pods[0]});
  SetTypes(c, {"medium", "alien"}, {c.instance_types[0], Type("alien", 4, 8, 0.5)});
  plan_.node_claims.push_back(c);
  EXPECT_VIOLATION(ViolationKind::kInstanceType);
}

TEST_F(PlanValidatorTest, CatchesOptionIncompatibleWithTheClaimsRequirements) {
  s_.input.pools.push_back(
      Pool("default", {Type("amd", 4, 8, 0.2), Type("arm", 4, 8, 0.3, {"zone-a"}, "arm64")}));
  auto pods = s_.AddPods(1, "web", "1", "1Gi");
  auto c = Claim("default", "amd", "zone-a", "spot", {pods[0]});
  SetTypes(c, {"amd", "arm"}, s_.input.pools[0].instance_types);
  c.requirements.Add(scheduling::Requirement::In(std::string(v1::kLabelArch), {"amd64"}));
  plan_.node_claims.push_back(c);
  EXPECT_VIOLATION(ViolationKind::kInstanceType);
}

TEST_F(PlanValidatorTest, CatchesUnavailableOffering) {
  TypeSpec t{.name = "medium", .cpu = 4, .mem_gi = 8, .price = 0.2};
  t.unavailable = {"spot/zone-a"};
  s_.input.pools.push_back(Pool("default", {MakeType(t)}));
  auto pods = s_.AddPods(1, "web", "1", "1Gi");
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", {pods[0]}));
  EXPECT_VIOLATION(ViolationKind::kOffering);
}

TEST_F(PlanValidatorTest, CatchesPriceThatIsNotTheCheapestAdmissibleOffering) {
  DefaultPool();
  auto pods = s_.AddPods(1, "web", "1", "1Gi");
  auto c = Claim("default", "medium", "zone-a", "on-demand", {pods[0]});
  // The claim admits spot too, which is cheaper.
  scheduling::Requirements loose = s_.input.pools[0].requirements;
  loose.Add(scheduling::Requirement::In(std::string(v1::kLabelInstanceType), {"medium"}));
  loose.Add(scheduling::Requirement::In(std::string(kZone), {"zone-a"}));
  c.requirements = loose;
  plan_.node_claims.push_back(c);
  EXPECT_VIOLATION(ViolationKind::kOffering);
}

TEST_F(PlanValidatorTest, ChecksEffectivePricesAndTheCheapestByThem) {
  // "cheap" is cheaper by its offering price but dearer by its effective price.
  s_.input.pools.push_back(Pool("default", {MakeType({.name = "cheap",
                                                      .cpu = 4,
                                                      .mem_gi = 8,
                                                      .price = 0.10,
                                                      .spot_factor = 0,
                                                      .node_price = 0.05}),
                                            MakeType({.name = "lean",
                                                      .cpu = 4,
                                                      .mem_gi = 8,
                                                      .price = 0.12,
                                                      .spot_factor = 0,
                                                      .node_price = 0.01})}));
  auto pods = s_.AddPods(1, "web", "1", "1Gi");
  plan_.node_claims.push_back(Claim("default", "lean", "zone-a", "on-demand", {pods[0]}));
  EXPECT_DOUBLE_EQ(plan_.node_claims[0].effective_price, 0.13);
  EXPECT_VALID();
  plan_.node_claims[0].effective_price = 0.12;
  EXPECT_VIOLATION(ViolationKind::kPrice);
  // Priced with "cheap" while "lean", also an option, is cheaper by its effective price.
  plan_.node_claims[0] = Claim("default", "cheap", "zone-a", "on-demand", {pods[0]});
  SetTypes(plan_.node_claims[0], {"cheap", "lean"}, s_.input.pools[0].instance_types);
  EXPECT_VIOLATION(ViolationKind::kOffering);
}

TEST_F(PlanValidatorTest, CatchesMisreportedPrices) {
  DefaultPool();
  auto pods = s_.AddPods(1, "web", "1", "1Gi");
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", {pods[0]}));
  plan_.node_claims[0].price = 0.01;
  EXPECT_VIOLATION(ViolationKind::kPrice);
  plan_.node_claims[0].price = 0.10;
  Finish();
  plan_.total_price += 1;
  auto vs = ValidatePlan(s_.input, plan_);
  EXPECT_TRUE(HasKind(vs, ViolationKind::kPrice)) << Describe(vs);
}

TEST_F(PlanValidatorTest, CatchesLabelsThatDisagreeWithTheOffering) {
  DefaultPool();
  auto pods = s_.AddPods(1, "web", "1", "1Gi");
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", {pods[0]}));
  plan_.node_claims[0].labels[std::string(kZone)] = "zone-b";
  EXPECT_VIOLATION(ViolationKind::kNodeMetadata);
}

TEST_F(PlanValidatorTest, CatchesMissingPoolTaint) {
  PoolTemplate p = Pool("gpu", SmallCatalog());
  p.taints.push_back({"gpu", "true", TaintEffect::kNoSchedule});
  s_.input.pools.push_back(p);
  auto pods = s_.AddPods(1, "web", "1", "1Gi", {}, [](Pod& pod) { Tolerate(pod, "gpu"); });
  plan_.node_claims.push_back(Claim("gpu", "medium", "zone-a", "spot", {pods[0]}));
  plan_.node_claims[0].taints.clear();
  EXPECT_VIOLATION(ViolationKind::kNodeMetadata);
}

TEST_F(PlanValidatorTest, CatchesTooManyOptions) {
  DefaultPool();
  s_.input.options.max_instance_types = 1;
  auto pods = s_.AddPods(1, "web", "1", "1Gi");
  auto c = Claim("default", "medium", "zone-a", "spot", {pods[0]});
  SetTypes(c, {"medium", "large"}, {c.instance_types[0], s_.input.pools[0].instance_types[2]});
  plan_.node_claims.push_back(c);
  EXPECT_VIOLATION(ViolationKind::kInstanceType);
}

TEST_F(PlanValidatorTest, CatchesMinValuesNotMet) {
  PoolTemplate p = Pool("flex", SmallCatalog());
  ASSERT_TRUE(AddMinValues(p, v1::kLabelInstanceType, 2).ok());
  s_.input.pools.push_back(p);
  auto pods = s_.AddPods(1, "web", "1", "1Gi");
  plan_.node_claims.push_back(Claim("flex", "medium", "zone-a", "spot", {pods[0]}));
  EXPECT_VIOLATION(ViolationKind::kMinValues);
  // BestEffort: allowed when the claim says so.
  s_.input.options.min_values_strict = false;
  plan_.node_claims[0].min_values_relaxed = true;
  EXPECT_VALID();
  plan_.node_claims[0].min_values_relaxed = false;
  EXPECT_VIOLATION(ViolationKind::kMinValues);
}

TEST_F(PlanValidatorTest, CatchesRequestsThatUnderstateThePods) {
  DefaultPool();
  auto pods = s_.AddPods(2, "web", "1", "1Gi");
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", {pods[0], pods[1]}));
  plan_.node_claims[0].requests["cpu"] = Q("1");
  EXPECT_VIOLATION(ViolationKind::kRequests);
}

// ---- limits ---------------------------------------------------------------------------------

TEST_F(PlanValidatorTest, CatchesCpuLimitExceeded) {
  s_.input.pools.push_back(LimitedPool("limited", SmallCatalog(), {{"cpu", Q("6")}}));
  auto pods = s_.AddPods(2, "web", "3", "1Gi");
  plan_.node_claims.push_back(Claim("limited", "medium", "zone-a", "spot", {pods[0]}));
  plan_.node_claims.push_back(Claim("limited", "medium", "zone-b", "spot", {pods[1]}));
  EXPECT_VIOLATION(ViolationKind::kLimits);  // 8 cpu of capacity > 6
}

TEST_F(PlanValidatorTest, CountsTheLargestOptionAgainstLimits) {
  s_.input.pools.push_back(LimitedPool("limited", SmallCatalog(), {{"cpu", Q("6")}}));
  auto pods = s_.AddPods(1, "web", "1", "1Gi");
  plan_.node_claims.push_back(Claim("limited", "medium", "zone-a", "spot", {pods[0]}));
  EXPECT_VALID();
  auto& c = plan_.node_claims[0];
  SetTypes(c, {"medium", "large"}, {c.instance_types[0], s_.input.pools[0].instance_types[2]});
  EXPECT_VIOLATION(ViolationKind::kLimits);
}

TEST_F(PlanValidatorTest, CatchesNodeCountLimitExceeded) {
  s_.input.pools.push_back(LimitedPool("limited", SmallCatalog(), {{"nodes", Q("1")}}));
  auto pods = s_.AddPods(2, "web", "1", "1Gi");
  plan_.node_claims.push_back(Claim("limited", "small", "zone-a", "spot", {pods[0]}));
  plan_.node_claims.push_back(Claim("limited", "small", "zone-b", "spot", {pods[1]}));
  EXPECT_VIOLATION(ViolationKind::kLimits);
}

// ---- resources and DaemonSets ---------------------------------------------------------------

TEST_F(PlanValidatorTest, CatchesOvercommittedClaim) {
  DefaultPool();
  auto pods = s_.AddPods(3, "web", "1500m", "1Gi");
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", pods));
  EXPECT_VIOLATION(ViolationKind::kResources);  // 4.5 cpu on 4
}

TEST_F(PlanValidatorTest, CountsBoundPodsOnExistingNodes) {
  DefaultPool();
  s_.input.nodes.push_back(Node("n1", "zone-a", "4", "8Gi"));
  s_.AddBound(MakePod("old", "3", "1Gi"), "n1");
  auto pods = s_.AddPods(1, "web", "2", "1Gi");
  plan_.existing.push_back({"n1", {pods[0]}});
  EXPECT_VIOLATION(ViolationKind::kResources);
}

TEST_F(PlanValidatorTest, TerminalBoundPodsUseNoResources) {
  DefaultPool();
  s_.input.nodes.push_back(Node("n1", "zone-a", "4", "8Gi"));
  s_.AddBound(MakePod("done", "3", "1Gi"), "n1")->status.phase = apis::core::PodPhase::kSucceeded;
  auto pods = s_.AddPods(1, "web", "2", "1Gi");
  plan_.existing.push_back({"n1", {pods[0]}});
  EXPECT_VALID();
}

TEST_F(PlanValidatorTest, DaemonSetOverheadCountsOnlyWhereTheDaemonSetRuns) {
  PoolTemplate p = Pool("tainted", SmallCatalog());
  p.taints.push_back({"dedicated", "x", TaintEffect::kNoSchedule});
  s_.input.pools.push_back(p);
  Pod* agent = s_.AddDaemonSet(MakePod("agent", "1", "1Gi"), "kube-system/agent");
  auto pods = s_.AddPods(4, "web", "1", "1Gi", {}, [](Pod& pod) { Tolerate(pod, "dedicated"); });
  plan_.node_claims.push_back(Claim("tainted", "medium", "zone-a", "spot", pods));
  EXPECT_VALID();  // the agent does not tolerate the taint: 4 cpu of pods fit 4 cpu
  Tolerate(*agent, "dedicated");
  EXPECT_VIOLATION(ViolationKind::kResources);  // now it runs there: 5 cpu on 4
}

TEST_F(PlanValidatorTest, DaemonSetWithANodeSelectorOnlyCountsOnMatchingNodes) {
  DefaultPool();
  Pod* ds = s_.AddDaemonSet(MakePod("agent", "1", "1Gi"), "kube-system/agent");
  ds->spec.node_selector = {{std::string(kZone), "zone-b"}};
  auto pods = s_.AddPods(4, "web", "1", "1Gi");
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", pods));
  EXPECT_VALID();
  plan_.node_claims[0] = Claim("default", "medium", "zone-b", "spot", pods);
  EXPECT_VIOLATION(ViolationKind::kResources);
}

TEST_F(PlanValidatorTest, DaemonSetPodAlreadyOnAnExistingNodeIsNotCountedTwice) {
  DefaultPool();
  s_.input.nodes.push_back(Node("n1", "zone-a", "4", "8Gi"));
  s_.AddDaemonSet(MakePod("agent", "1", "1Gi"), "kube-system/agent");
  auto running = MakePod("agent-x1", "1", "1Gi");
  running->metadata.namespace_ = "kube-system";
  running->metadata.owner_references.push_back({"apps/v1", "DaemonSet", "agent", "u", true, {}});
  s_.AddBound(std::move(running), "n1");
  auto pods = s_.AddPods(3, "web", "1", "1Gi");
  plan_.existing.push_back({"n1", {pods.begin(), pods.end()}});
  EXPECT_VALID();  // 3 + 1 (the agent, once) = 4
}

// ---- node selection and taints ----------------------------------------------------------------

TEST_F(PlanValidatorTest, CatchesNodeSelectorMismatch) {
  DefaultPool();
  auto pods = s_.AddPods(1, "web", "1", "1Gi", {}, [](Pod& p) {
    p.spec.node_selector = {{std::string(kZone), "zone-b"}};
  });
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", pods));
  EXPECT_VIOLATION(ViolationKind::kNodeAffinity);
}

TEST_F(PlanValidatorTest, RequiredNodeAffinityTermsAreOred) {
  DefaultPool();
  auto pods = s_.AddPods(1, "web", "1", "1Gi", {}, [](Pod& p) {
    RequireNodeAffinity(
        p, {NodeSelectorTerm{{{std::string(kZone), SelectorOperator::kIn, {"zone-c"}, {}}}, {}},
            NodeSelectorTerm{{{std::string(kZone), SelectorOperator::kIn, {"zone-a"}, {}}}, {}}});
  });
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", pods));
  EXPECT_VALID();
  plan_.node_claims[0] = Claim("default", "medium", "zone-b", "spot", pods);
  EXPECT_VIOLATION(ViolationKind::kNodeAffinity);
}

TEST_F(PlanValidatorTest, EveryLaunchOptionMustSatisfyThePods) {
  s_.input.pools.push_back(
      Pool("default", {Type("amd", 4, 8, 0.2), Type("arm", 4, 8, 0.3, {"zone-a"}, "arm64")}));
  auto pods = s_.AddPods(1, "web", "1", "1Gi", {}, [](Pod& p) {
    p.spec.node_selector = {{std::string(v1::kLabelArch), "amd64"}};
  });
  auto c = Claim("default", "amd", "zone-a", "spot", pods);
  // The claim forgot the pod's arch: the provider could launch the arm64 option.
  SetTypes(c, {"amd", "arm"}, s_.input.pools[0].instance_types);
  plan_.node_claims.push_back(c);
  EXPECT_VIOLATION(ViolationKind::kNodeAffinity);
}

TEST_F(PlanValidatorTest, CatchesUntoleratedTaint) {
  PoolTemplate p = Pool("gpu", SmallCatalog());
  p.taints.push_back({"gpu", "true", TaintEffect::kNoSchedule});
  s_.input.pools.push_back(p);
  auto pods = s_.AddPods(1, "web", "1", "1Gi");
  plan_.node_claims.push_back(Claim("gpu", "medium", "zone-a", "spot", pods));
  EXPECT_VIOLATION(ViolationKind::kTaints);
}

TEST_F(PlanValidatorTest, PreferNoScheduleAndStartupTaintsOfUninitializedNodesAreNotHard) {
  PoolTemplate p = Pool("soft", SmallCatalog());
  p.taints.push_back({"soft", "true", TaintEffect::kPreferNoSchedule});
  s_.input.pools.push_back(p);
  ExistingNode n = Node("n1", "zone-a", "4", "8Gi");
  n.initialized = false;
  n.taints.push_back({"startup", "", TaintEffect::kNoSchedule});
  n.startup_taint_keys = {"startup"};
  s_.input.nodes.push_back(n);
  auto pods = s_.AddPods(2, "web", "1", "1Gi");
  plan_.existing.push_back({"n1", {pods[0]}});
  plan_.node_claims.push_back(Claim("soft", "medium", "zone-a", "spot", {pods[1]}));
  EXPECT_VALID();
  s_.input.nodes[0].initialized = true;
  EXPECT_VIOLATION(ViolationKind::kTaints);
}

TEST_F(PlanValidatorTest, CatchesVolumeTopologyMismatch) {
  DefaultPool();
  auto pods = s_.AddPods(1, "db", "1", "1Gi");
  scheduling::Requirements pv;
  pv.Add(scheduling::Requirement::In(std::string(kZone), {"zone-b"}));
  s_.input.volume_requirements[pods[0]] = {pv};
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", pods));
  EXPECT_VIOLATION(ViolationKind::kVolumeTopology);
}

// ---- host ports -------------------------------------------------------------------------------

TEST_F(PlanValidatorTest, CatchesHostPortConflicts) {
  DefaultPool();
  auto pods = s_.AddPods(2, "web", "1", "1Gi", {}, [](Pod& p) { AddHostPort(p, 8080); });
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", pods));
  EXPECT_VIOLATION(ViolationKind::kHostPorts);
}

TEST_F(PlanValidatorTest, HostPortsOfOtherProtocolsOrIpsDoNotConflict) {
  DefaultPool();
  auto pods = s_.AddPods(3, "web", "100m", "1Gi", {}, [](Pod& p) { AddHostPort(p, 8080); });
  pods[1]->spec.containers[0].ports[0].protocol = apis::core::Protocol::kUDP;
  pods[0]->spec.containers[0].ports[0].host_ip = "10.0.0.1";
  pods[2]->spec.containers[0].ports[0].host_ip = "10.0.0.2";
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", pods));
  EXPECT_VALID();
}

TEST_F(PlanValidatorTest, CatchesHostPortConflictWithADaemonSet) {
  DefaultPool();
  Pod* ds = s_.AddDaemonSet(MakePod("exporter", "100m", "100Mi"), "kube-system/exporter");
  AddHostPort(*ds, 9100);
  auto pods = s_.AddPods(1, "web", "1", "1Gi", {}, [](Pod& p) { AddHostPort(p, 9100); });
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", pods));
  EXPECT_VIOLATION(ViolationKind::kHostPorts);
}

// ---- pod affinity and anti-affinity -----------------------------------------------------------

TEST_F(PlanValidatorTest, CatchesPodAffinityToAnotherDomain) {
  DefaultPool();
  s_.input.nodes.push_back(Node("n1", "zone-a", "4", "8Gi"));
  s_.AddBound(MakePod("cache", "1", "1Gi", {{"app", "cache"}}), "n1");
  auto pods = s_.AddPods(1, "web", "1", "1Gi", {}, [](Pod& p) {
    AddAffinity(p, kZone, {{"app", "cache"}});
  });
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", pods));
  EXPECT_VALID();
  plan_.node_claims[0] = Claim("default", "medium", "zone-b", "spot", pods);
  EXPECT_VIOLATION(ViolationKind::kPodAffinity);
}

TEST_F(PlanValidatorTest, SelfAffinityBootstrapsOneDomainOnly) {
  DefaultPool();
  auto pods = s_.AddPods(4, "cache", "1", "1Gi", {{"app", "cache"}}, [](Pod& p) {
    AddAffinity(p, kZone, {{"app", "cache"}});
  });
  plan_.node_claims.push_back(Claim("default", "medium", "zone-b", "spot", {pods[0], pods[1]}));
  plan_.node_claims.push_back(Claim("default", "medium", "zone-b", "spot", {pods[2], pods[3]}));
  EXPECT_VALID();
  plan_.node_claims[1] = Claim("default", "medium", "zone-c", "spot", {pods[2], pods[3]});
  EXPECT_VIOLATION(ViolationKind::kPodAffinity);  // two bootstraps are impossible
}

TEST_F(PlanValidatorTest, AffinityWithoutAnyMatchingPodNeedsToSelectItself) {
  DefaultPool();
  auto pods = s_.AddPods(1, "web", "1", "1Gi", {{"app", "web"}}, [](Pod& p) {
    AddAffinity(p, kZone, {{"app", "cache"}});
  });
  plan_.node_claims.push_back(Claim("default", "medium", "zone-b", "spot", pods));
  EXPECT_VIOLATION(ViolationKind::kPodAffinity);
}

TEST_F(PlanValidatorTest, CatchesAntiAffinityOnTheSameNode) {
  DefaultPool();
  auto pods = s_.AddPods(2, "db", "1", "1Gi", {{"app", "db"}}, [](Pod& p) {
    AddAntiAffinity(p, kHost, {{"app", "db"}});
  });
  plan_.node_claims.push_back(Claim("default", "medium", "zone-b", "spot", pods));
  EXPECT_VIOLATION(ViolationKind::kPodAntiAffinity);
  plan_.node_claims[0] = Claim("default", "medium", "zone-b", "spot", {pods[0]});
  plan_.node_claims.push_back(Claim("default", "medium", "zone-b", "spot", {pods[1]}));
  EXPECT_VALID();
}

TEST_F(PlanValidatorTest, CatchesViolationOfAnExistingPodsAntiAffinity) {
  DefaultPool();
  s_.input.nodes.push_back(Node("n1", "zone-a", "8", "16Gi"));
  Pod* guard = s_.AddBound(MakePod("guard", "100m", "100Mi"), "n1");
  AddAntiAffinity(*guard, kZone, {{"app", "noisy"}});
  auto pods = s_.AddPods(1, "noisy", "1", "1Gi", {{"app", "noisy"}});
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", pods));
  EXPECT_VIOLATION(ViolationKind::kPodAntiAffinity);  // same zone as the guard's node
  plan_.node_claims[0] = Claim("default", "medium", "zone-b", "spot", pods);
  EXPECT_VALID();
}

TEST_F(PlanValidatorTest, AClaimThatMayLaunchInSeveralZonesOccupiesAllOfThemForAntiAffinity) {
  DefaultPool();
  auto pods = s_.AddPods(2, "db", "1", "1Gi", {{"app", "db"}}, [](Pod& p) {
    AddAntiAffinity(p, kZone, {{"app", "db"}});
  });
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", {pods[0]}));
  auto c = Claim("default", "medium", "zone-b", "spot", {pods[1]});
  scheduling::Requirements r = s_.input.pools[0].requirements;
  r.Add(scheduling::Requirement::In(std::string(v1::kLabelInstanceType), {"medium"}));
  r.Add(scheduling::Requirement::In(std::string(v1::kCapacityTypeLabelKey), {"spot"}));
  r.Add(scheduling::Requirement::In(std::string(kZone), {"zone-a", "zone-b"}));
  c.requirements = r;
  plan_.node_claims.push_back(c);
  EXPECT_VIOLATION(ViolationKind::kPodAntiAffinity);  // it may launch in zone-a
}

TEST_F(PlanValidatorTest, AntiAffinityHonoursNamespaces) {
  DefaultPool();
  auto pods = s_.AddPods(1, "db", "1", "1Gi", {{"app", "db"}}, [](Pod& p) {
    AddAntiAffinity(p, kHost, {{"app", "db"}});
  });
  Pod* other = s_.AddPod(MakePod("db-other", "1", "1Gi", {{"app", "db"}}, "other"));
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", {pods[0], other}));
  EXPECT_VALID();  // the term only selects pods of its own namespace
  pods[0]->spec.affinity->pod_anti_affinity->required[0].namespace_selector.emplace();
  EXPECT_VIOLATION(ViolationKind::kPodAntiAffinity);  // an empty selector: every namespace
}

// ---- topology spread --------------------------------------------------------------------------

TEST_F(PlanValidatorTest, CatchesZoneSkew) {
  DefaultPool();
  auto pods = s_.AddPods(3, "web", "1", "1Gi", {{"app", "web"}}, [](Pod& p) {
    AddSpread(p, kZone, 1, {{"app", "web"}});
  });
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", {pods[0]}));
  plan_.node_claims.push_back(Claim("default", "medium", "zone-b", "spot", {pods[1]}));
  plan_.node_claims.push_back(Claim("default", "medium", "zone-c", "spot", {pods[2]}));
  EXPECT_VALID();
  // zone-c stays launchable and empty: two pods in zone-a is a skew of 2.
  plan_.node_claims[2] = Claim("default", "medium", "zone-a", "spot", {pods[2]});
  EXPECT_VIOLATION(ViolationKind::kTopologySpread);
}

TEST_F(PlanValidatorTest, SpreadIgnoresDomainsThePodsNodeAffinityExcludesUnlessPolicyIgnore) {
  DefaultPool();
  auto pods = s_.AddPods(2, "web", "1", "1Gi", {{"app", "web"}}, [](Pod& p) {
    AddSpread(p, kZone, 1, {{"app", "web"}});
    p.spec.node_selector = {{std::string(kZone), "zone-a"}};
  });
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", pods));
  EXPECT_VALID();  // only zone-a is eligible: skew 0
  for (Pod* p : pods) {
    p->spec.topology_spread_constraints[0].node_affinity_policy =
        apis::core::NodeInclusionPolicy::kIgnore;
  }
  EXPECT_VIOLATION(ViolationKind::kTopologySpread);
}

TEST_F(PlanValidatorTest, SpreadHonoursNodeTaintsPolicy) {
  s_.input.pools.push_back(Pool("ab", SmallCatalog()));
  s_.input.pools[0].requirements.Add(
      scheduling::Requirement::In(std::string(kZone), {"zone-a", "zone-b"}));
  PoolTemplate c = Pool("c", SmallCatalog());
  c.requirements.Add(scheduling::Requirement::In(std::string(kZone), {"zone-c"}));
  c.taints.push_back({"team", "x", TaintEffect::kNoSchedule});
  s_.input.pools.push_back(c);
  auto pods = s_.AddPods(2, "web", "1", "1Gi", {{"app", "web"}}, [](Pod& p) {
    AddSpread(p, kZone, 1, {{"app", "web"}});
  });
  plan_.node_claims.push_back(Claim("ab", "medium", "zone-a", "spot", {pods[0]}));
  plan_.node_claims.push_back(Claim("ab", "medium", "zone-b", "spot", {pods[1]}));
  EXPECT_VALID();  // 1-1-0: skew 1
  Pod* third = s_.AddPod(MakePod("web-2", "1", "1Gi", {{"app", "web"}}));
  AddSpread(*third, kZone, 1, {{"app", "web"}});
  plan_.node_claims[1] = Claim("ab", "medium", "zone-b", "spot", {pods[1], third});
  EXPECT_VIOLATION(ViolationKind::kTopologySpread);  // 1-2-0 with zone-c counted (Ignore)
  for (Pod* p : {pods[0], pods[1], third}) {
    p->spec.topology_spread_constraints[0].node_taints_policy =
        apis::core::NodeInclusionPolicy::kHonor;
  }
  EXPECT_VALID();  // zone-c's only pool has a taint the pods do not tolerate
}

TEST_F(PlanValidatorTest, SpreadWithMinDomainsTreatsTheMinimumAsZero) {
  s_.input.pools.push_back(Pool("ab", SmallCatalog()));
  s_.input.pools[0].requirements.Add(
      scheduling::Requirement::In(std::string(kZone), {"zone-a", "zone-b"}));
  auto pods = s_.AddPods(4, "web", "1", "1Gi", {{"app", "web"}}, [](Pod& p) {
    AddSpread(p, kZone, 2, {{"app", "web"}});
  });
  plan_.node_claims.push_back(Claim("ab", "medium", "zone-a", "spot", {pods[0], pods[1]}));
  plan_.node_claims.push_back(Claim("ab", "medium", "zone-b", "spot", {pods[2], pods[3]}));
  EXPECT_VALID();
  for (Pod* p : pods) p->spec.topology_spread_constraints[0].min_domains = 3;
  // Only two domains exist: the global minimum is 0, so a domain may hold at most maxSkew = 2.
  EXPECT_VALID();
  Pod* fifth = s_.AddPod(MakePod("web-4", "1", "1Gi", {{"app", "web"}}));
  AddSpread(*fifth, kZone, 2, {{"app", "web"}}).min_domains = 3;
  plan_.node_claims[1] = Claim("ab", "medium", "zone-b", "spot", {pods[2], pods[3], fifth});
  EXPECT_VIOLATION(ViolationKind::kTopologySpread);
  fifth->spec.topology_spread_constraints[0].min_domains.reset();
  for (Pod* p : pods) p->spec.topology_spread_constraints[0].min_domains.reset();
  EXPECT_VALID();  // 2-3 with maxSkew 2 and two domains
}

TEST_F(PlanValidatorTest, CatchesHostnameSpreadOnOneNode) {
  DefaultPool();
  auto pods = s_.AddPods(2, "web", "1", "1Gi", {{"app", "web"}}, [](Pod& p) {
    AddSpread(p, kHost, 1, {{"app", "web"}});
  });
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", pods));
  EXPECT_VIOLATION(ViolationKind::kTopologySpread);
}

TEST_F(PlanValidatorTest, CatchesSpreadPodOnAClaimWhoseZoneIsNotPinned) {
  DefaultPool();
  auto pods = s_.AddPods(1, "web", "1", "1Gi", {{"app", "web"}}, [](Pod& p) {
    AddSpread(p, kZone, 1, {{"app", "web"}});
  });
  auto c = Claim("default", "medium", "zone-a", "spot", pods);
  scheduling::Requirements r = s_.input.pools[0].requirements;
  r.Add(scheduling::Requirement::In(std::string(v1::kLabelInstanceType), {"medium"}));
  r.Add(scheduling::Requirement::In(std::string(v1::kCapacityTypeLabelKey), {"spot"}));
  r.Add(scheduling::Requirement::In(std::string(kZone), {"zone-a", "zone-b"}));
  c.requirements = r;
  plan_.node_claims.push_back(c);
  EXPECT_VIOLATION(ViolationKind::kTopologyDomain);
}

TEST_F(PlanValidatorTest, ScheduleAnywaySpreadIsNotChecked) {
  DefaultPool();
  auto pods = s_.AddPods(3, "web", "1", "1Gi", {{"app", "web"}}, [](Pod& p) {
    AddSpread(p, kZone, 1, {{"app", "web"}}).when_unsatisfiable =
        apis::core::UnsatisfiableConstraintAction::kScheduleAnyway;
  });
  plan_.node_claims.push_back(Claim("default", "medium", "zone-a", "spot", pods));
  EXPECT_VALID();
}

}  // namespace
}  // namespace dovetail::solver
