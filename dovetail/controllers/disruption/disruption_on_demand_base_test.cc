// Disruption and the on-demand base (dovetail.sh/on-demand-base, launch/on_demand_base.h):
// consolidation must not take a pool below its base; a replacement is kept on-demand instead,
// a delete is refused with the base in the explanation.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "dovetail/controllers/disruption/disruption.h"
#include "dovetail/controllers/disruption/disruption_test_util.h"
#include "dovetail/controllers/launch/on_demand_base.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::controllers::disruption {
namespace {

namespace v1 = apis::v1;
using ::testing::ElementsAre;
using testing::Find;
using ::testing::HasSubstr;
using testing::kNow;
using testing::Names;
using ::testing::SizeIs;

// One pool "default" admitting spot and on-demand, with the on-demand base `base` (none: no
// annotation) and no budget limit.
class Scene : public testing::Scene {
 public:
  explicit Scene(std::optional<std::string> base) {
    v1::NodePool& pool = Pool();
    if (base.has_value()) {
      pool.metadata.annotations[std::string(launch::kOnDemandBaseAnnotationKey)] = *base;
    }
    pool.spec.disruption->budgets = std::vector<v1::Budget>{};  // no budget limit
  }
};

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
  const Command* command = testing::OnlyCommand(result, 1, 1);
  ASSERT_NE(command, nullptr);
  const solver::NewNodeClaim& r = command->replacements[0];
  EXPECT_EQ(r.capacity_type, "on-demand");
  EXPECT_TRUE(launch::OnDemandOnly(r.requirements));
  EXPECT_EQ(r.instance_type, "small");  // $0.10 on-demand
  EXPECT_DOUBLE_EQ(r.price, 0.10);
  // Every option is cheaper on-demand than the $0.40 candidate: small and medium.
  ASSERT_THAT(r.instance_types, SizeIs(2));
  EXPECT_EQ(r.instance_types[1]->name(), "medium");
  EXPECT_NEAR(command->savings_per_hour, 0.30, 1e-9);
  const Explanation* e = Find(result->explanations, "big");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->disrupted);
  EXPECT_THAT(e->message, HasSubstr("replacement kept on-demand: on-demand base of pool "
                                    "\"default\": 1"));
  // Validation after the delay accepts the on-demand replacement.
  EXPECT_TRUE(s.Validate(*command).ok()) << s.Validate(*command);
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
    s.AddLoadedNodes(3, "1", {.type = "large"});
    auto result = s.Run(Method::kMultiNodeConsolidation);
    const Command* only = testing::OnlyCommand(result, 3, 1);
    ASSERT_NE(only, nullptr);
    const Command& command = *only;
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
