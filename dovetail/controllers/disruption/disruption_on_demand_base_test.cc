// Disruption and the on-demand base (dovetail.sh/on-demand-base, launch/on_demand_base.h):
// consolidation must not take a pool below its base; a replacement is kept on-demand instead,
// a delete is refused with the base in the explanation.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/clock.h"
#include "dovetail/controllers/disruption/disruption.h"
#include "dovetail/controllers/launch/on_demand_base.h"
#include "dovetail/controllers/nodeclaim/conditions.h"
#include "dovetail/solver/solver_test_builders.h"
#include "dovetail/state/state_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::disruption {
namespace {

namespace v1 = apis::v1;
using solver::test_builders::Type;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

const absl::Time kNow =
    absl::FromCivil(absl::CivilSecond(2026, 11, 30, 12, 0, 0), absl::UTCTimeZone());

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

struct NodeOptions {
  std::string type = "medium";
  std::string capacity_type = "on-demand";
  bool consolidatable = true;
  std::optional<absl::Time> drifted_since;
};

// One pool "default" admitting spot and on-demand, nodes with Node and NodeClaim, pods bound to
// them (disruption_test.cc's Scene, cut down).
class Scene {
 public:
  explicit Scene(std::optional<std::string> base) {
    view.now = kNow;
    types = {Type("small", 2, 4, 0.10), Type("medium", 4, 8, 0.20), Type("large", 8, 16, 0.40),
             Type("xlarge", 16, 32, 0.80)};
    v1::NodePool pool;
    pool.metadata.name = "default";
    if (base.has_value()) {
      pool.metadata.annotations[std::string(launch::kOnDemandBaseAnnotationKey)] = *base;
    }
    pool.spec.template_.spec.node_class_ref =
        v1::NodeClassReference{"karpenter.kwok.sh", "KWOKNodeClass", "default"};
    v1::ApplyDefaults(pool);
    pool.spec.disruption->budgets = std::vector<v1::Budget>{};  // no budget limit
    view.instance_types["default"] = types;
    view.node_pools["default"] = std::move(pool);
  }

  void AddNode(const std::string& name, const NodeOptions& o = {}) {
    const cloudprovider::InstanceType* type = nullptr;
    for (const auto& t : types) {
      if (t->name() == o.type) type = t.get();
    }
    ASSERT_NE(type, nullptr) << o.type;
    const std::string cpu = type->capacity().at("cpu").ToString();
    const std::string mem = type->capacity().at("memory").ToString();
    const std::string provider_id = "kwok://" + name;
    nlohmann::json labels = {{std::string(v1::kNodePoolLabelKey), "default"},
                             {std::string(v1::kLabelInstanceType), o.type},
                             {std::string(v1::kLabelTopologyZone), "zone-a"},
                             {std::string(v1::kCapacityTypeLabelKey), o.capacity_type},
                             {std::string(v1::kLabelArch), "amd64"},
                             {std::string(v1::kLabelOS), "linux"},
                             {std::string(v1::kNodeRegisteredLabelKey), "true"},
                             {std::string(v1::kNodeInitializedLabelKey), "true"}};
    nlohmann::json node = state::testing::NodeJson(name, provider_id, cpu, mem, labels);
    nlohmann::json claim =
        state::testing::NodeClaimJson(name + "-claim", "default", provider_id, cpu, mem);
    claim["metadata"]["creationTimestamp"] = Rfc3339(kNow - absl::Hours(1));
    claim["status"]["nodeName"] = name;
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

  void AddPod(const std::string& node, const std::string& name, const std::string& cpu) {
    nlohmann::json pod = state::testing::PodJson("default", name, node, cpu);
    pod["metadata"]["ownerReferences"] = {{{"apiVersion", "apps/v1"},
                                           {"kind", "ReplicaSet"},
                                           {"name", "rs"},
                                           {"uid", "rs-uid"},
                                           {"controller", true}}};
    pod["status"]["conditions"] = {{{"type", "Ready"}, {"status", "True"}}};
    view.snapshot.pods_by_node[node].push_back(objects_.Pod(pod));
  }

  absl::StatusOr<MethodResult> Run(Method method, const Options& options = {}) {
    auto simulator = Simulator::Create(view, options);
    if (!simulator.ok()) return simulator.status();
    simulator_ = std::move(*simulator);
    BudgetMapping budgets = BuildBudgetMapping(view, ReasonOf(method));
    return ComputeCommands(method, view, *simulator_, budgets, options, clock_);
  }

  absl::Status Validate(const Command& command, const Options& options = {}) {
    auto simulator = Simulator::Create(view, options);
    if (!simulator.ok()) return simulator.status();
    return ValidateCommand(command, view, **simulator, options);
  }

  ClusterView view;
  std::vector<cloudprovider::InstanceTypePtr> types;

 private:
  state::testing::Objects objects_;
  std::unique_ptr<Simulator> simulator_;
  FakeClock clock_{kNow};
};

std::vector<std::string> Names(const Command& command) {
  std::vector<std::string> out;
  for (const Candidate& c : command.candidates) out.push_back(c.name);
  return out;
}

const Explanation* Find(const std::vector<Explanation>& explanations, const std::string& node) {
  for (const Explanation& e : explanations) {
    if (e.node == node) return &e;
  }
  return nullptr;
}

TEST(DisruptionOnDemandBaseTest, SingleNodeReplacementOfTheBaseStaysOnDemand) {
  // Without a base (or with an invalid one, which is ignored) the cheaper replacement is spot.
  for (const std::optional<std::string>& base :
       {std::optional<std::string>(), std::optional<std::string>("lots")}) {
    Scene s(base);
    s.AddNode("big", {.type = "large"});
    s.AddPod("big", "a", "1");
    auto result = s.Run(Method::kSingleNodeConsolidation);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_THAT(result->commands, SizeIs(1));
    ASSERT_THAT(result->commands[0].replacements, SizeIs(1));
    EXPECT_EQ(result->commands[0].replacements[0].capacity_type, "spot");
  }

  Scene s("1");
  s.AddNode("big", {.type = "large"});
  s.AddPod("big", "a", "1");
  auto result = s.Run(Method::kSingleNodeConsolidation);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  const Command& command = result->commands[0];
  ASSERT_THAT(command.replacements, SizeIs(1));
  const solver::NewNodeClaim& r = command.replacements[0];
  EXPECT_EQ(r.capacity_type, "on-demand");
  EXPECT_TRUE(launch::OnDemandOnly(r.requirements));
  EXPECT_EQ(r.instance_type, "small");  // $0.10 on-demand
  EXPECT_DOUBLE_EQ(r.price, 0.10);
  // Every option is cheaper on-demand than the $0.40 candidate: small and medium.
  ASSERT_THAT(r.instance_types, SizeIs(2));
  EXPECT_EQ(r.instance_types[1]->name(), "medium");
  EXPECT_NEAR(command.savings_per_hour, 0.30, 1e-9);
  const Explanation* e = Find(result->explanations, "big");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->disrupted);
  EXPECT_THAT(e->message, HasSubstr("replacement kept on-demand: on-demand base of pool "
                                    "\"default\": 1"));
  // Validation after the delay accepts the on-demand replacement.
  EXPECT_TRUE(s.Validate(command).ok()) << s.Validate(command);
}

TEST(DisruptionOnDemandBaseTest, DeletesThatWouldTakeThePoolBelowItsBaseAreRefused) {
  // Two on-demand nodes and a spot node that is not a candidate; either on-demand node's pod fits
  // elsewhere.
  auto scene = [](std::optional<std::string> base) {
    auto s = std::make_unique<Scene>(std::move(base));
    s->AddNode("od-1");
    s->AddPod("od-1", "a", "1");
    s->AddNode("od-2");
    s->AddPod("od-2", "b", "1");
    s->AddNode("spot-1", {.capacity_type = "spot", .consolidatable = false});
    s->AddPod("spot-1", "c", "1");
    return s;
  };
  auto none = scene(std::nullopt);
  auto result = none->Run(Method::kSingleNodeConsolidation);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  EXPECT_EQ(result->commands[0].Decision(), "delete");

  // Base 2: 1 of 2 on-demand after a delete.
  auto two = scene("2");
  result = two->Run(Method::kSingleNodeConsolidation);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->commands, SizeIs(0));
  for (const char* node : {"od-1", "od-2"}) {
    const Explanation* e = Find(result->explanations, node);
    ASSERT_NE(e, nullptr) << node;
    EXPECT_FALSE(e->disrupted);
    EXPECT_EQ(e->event_reason, "Unconsolidatable");
    EXPECT_THAT(e->message, HasSubstr("on-demand base of pool \"default\": 2 (1 of 2 NodeClaims "
                                      "would be on-demand, 2 required)"));
  }
  result = two->Run(Method::kMultiNodeConsolidation);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->commands, SizeIs(0));

  // 50%: ceil(50% of 2) = 1 is kept.
  auto half = scene("50%");
  result = half->Run(Method::kSingleNodeConsolidation);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  EXPECT_EQ(result->commands[0].Decision(), "delete");
}

TEST(DisruptionOnDemandBaseTest, EmptinessKeepsTheBaseAcrossItsCandidates) {
  auto scene = [](const std::string& base) {
    auto s = std::make_unique<Scene>(base);
    s->AddNode("empty-1");
    s->AddNode("empty-2");
    s->AddNode("busy-spot", {.capacity_type = "spot"});
    s->AddPod("busy-spot", "a", "1");
    return s;
  };
  auto zero = scene("0");
  auto result = zero->Run(Method::kEmptiness);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  EXPECT_THAT(result->commands[0].candidates, SizeIs(2));

  // Base 1: the first empty on-demand node goes, the second stays.
  auto one = scene("1");
  result = one->Run(Method::kEmptiness);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  ASSERT_THAT(result->commands[0].candidates, SizeIs(1));
  const std::string kept = Names(result->commands[0])[0] == "empty-1" ? "empty-2" : "empty-1";
  const Explanation* e = nullptr;
  for (const Explanation& x : result->explanations) {
    if (x.node == kept && !x.disrupted) e = &x;
  }
  ASSERT_NE(e, nullptr);
  EXPECT_THAT(e->message, HasSubstr("on-demand base of pool \"default\": 1"));

  // An empty pool may go entirely: min(N, 0) = 0.
  Scene all("2");
  all.AddNode("e-1");
  all.AddNode("e-2");
  result = all.Run(Method::kEmptiness);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  EXPECT_THAT(result->commands[0].candidates, SizeIs(2));
}

TEST(DisruptionOnDemandBaseTest, MultiNodeReplacementKeepsTheBase) {
  for (const bool with_base : {false, true}) {
    SCOPED_TRACE(with_base);
    Scene s(with_base ? std::optional<std::string>("1") : std::nullopt);
    for (int i = 0; i < 3; ++i) {
      const std::string name = absl::StrCat("node-", i);
      s.AddNode(name, {.type = "large"});
      s.AddPod(name, absl::StrCat("p-", i), "1");
    }
    auto result = s.Run(Method::kMultiNodeConsolidation);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_THAT(result->commands, SizeIs(1));
    const Command& command = result->commands[0];
    EXPECT_THAT(command.candidates, SizeIs(3));
    ASSERT_THAT(command.replacements, SizeIs(1));
    const solver::NewNodeClaim& r = command.replacements[0];
    EXPECT_EQ(r.capacity_type, with_base ? "on-demand" : "spot");
    EXPECT_EQ(launch::OnDemandOnly(r.requirements), with_base);
    EXPECT_NEAR(command.savings_per_hour, 1.20 - r.price, 1e-9);
    EXPECT_GT(command.savings_per_hour, 0);
    const Explanation* e = Find(result->explanations, "node-0");
    ASSERT_NE(e, nullptr);
    EXPECT_TRUE(e->disrupted);
    EXPECT_EQ(e->message.find("replacement kept on-demand") != std::string::npos, with_base);
  }
}

TEST(DisruptionOnDemandBaseTest, SpotNodesAreConsolidatedFreely) {
  // The base is already unmet (no on-demand node); removing spot nodes does not lower it.
  Scene s("2");
  s.AddNode("spot-1", {.capacity_type = "spot"});
  s.AddPod("spot-1", "a", "1");
  s.AddNode("spot-2", {.capacity_type = "spot"});
  s.AddPod("spot-2", "b", "1");
  auto result = s.Run(Method::kSingleNodeConsolidation);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  EXPECT_EQ(result->commands[0].Decision(), "delete");
}

TEST(DisruptionOnDemandBaseTest, DriftReplacementOfTheBaseIsOnDemand) {
  for (const bool with_base : {false, true}) {
    SCOPED_TRACE(with_base);
    Scene s(with_base ? std::optional<std::string>("1") : std::nullopt);
    s.AddNode("drifted", {.drifted_since = kNow - absl::Hours(1)});
    s.AddPod("drifted", "a", "3");
    auto result = s.Run(Method::kDrift);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_THAT(result->commands, SizeIs(1));
    EXPECT_THAT(Names(result->commands[0]), ElementsAre("drifted"));
    ASSERT_THAT(result->commands[0].replacements, SizeIs(1));
    const solver::NewNodeClaim& r = result->commands[0].replacements[0];
    EXPECT_EQ(launch::OnDemandOnly(r.requirements), with_base);
    EXPECT_EQ(r.capacity_type, with_base ? "on-demand" : "spot");
  }
}

}  // namespace
}  // namespace dovetail::controllers::disruption
