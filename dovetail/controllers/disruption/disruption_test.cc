#include "dovetail/controllers/disruption/disruption.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/controllers/disruption/disruption_test_util.h"
#include "dovetail/solver/solver_test_builders.h"
#include "dovetail/state/state_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::disruption {
namespace {

namespace v1 = apis::v1;
namespace core = apis::core;
using solver::test_builders::MakeType;
using solver::test_builders::Type;
using ::testing::ElementsAre;
using testing::Find;
using ::testing::HasSubstr;
using testing::kNow;
using testing::Names;
using testing::OnlyCommand;
using testing::Scene;
using ::testing::SizeIs;

TEST(DisruptionTest, EmptyNodesDeletedWithinBudgetPercentRoundsUp) {
  Scene s;
  s.Pool();
  for (int i = 0; i < 10; ++i) s.AddNode(absl::StrCat("node-", i));
  auto result = s.Run(Method::kEmptiness);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  EXPECT_THAT(result->commands[0].candidates, SizeIs(1));  // 10% of 10
  EXPECT_EQ(result->commands[0].Decision(), "delete");
  EXPECT_EQ(s.budgets.Remaining("default"), 0);

  s.AddNode("node-10");  // 10% of 11 rounds up to 2
  result = s.Run(Method::kEmptiness);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  EXPECT_THAT(result->commands[0].candidates, SizeIs(2));
  const Explanation* skipped = nullptr;
  for (const Explanation& e : result->explanations) {
    if (!e.disrupted && e.method == Method::kEmptiness) skipped = &e;
  }
  ASSERT_NE(skipped, nullptr);
  EXPECT_THAT(skipped->message, HasSubstr("no disruptions left"));
}

TEST(DisruptionTest, NotReadyAndDeletingNodesConsumeBudget) {
  Scene s;
  s.Pool();
  for (int i = 0; i < 10; ++i) s.AddNode(absl::StrCat("node-", i));
  s.Node("node-0").marked_for_deletion = true;
  EXPECT_EQ(BuildBudgetMapping(s.view, v1::DisruptionReason::kEmpty).Remaining("default"), 0);
  s.Node("node-0").marked_for_deletion = false;
  s.view.queued.insert(s.Node("node-1").Key());
  EXPECT_EQ(BuildBudgetMapping(s.view, v1::DisruptionReason::kEmpty).Remaining("default"), 0);
  s.view.queued.clear();
  EXPECT_EQ(BuildBudgetMapping(s.view, v1::DisruptionReason::kEmpty).Remaining("default"), 1);
}

TEST(DisruptionTest, EmptyMeansNoPodWithPositiveEvictionCost) {
  Scene s;
  s.Pool();
  s.AddNode("free");
  s.AddPod("free", "cheap", "100m", [](nlohmann::json& pod) {
    pod["metadata"]["annotations"] = {
        {"controller.kubernetes.io/pod-deletion-cost", "-2147483648"}};
  });
  s.AddNode("busy");
  s.AddPod("busy", "web", "100m");
  std::vector<Explanation> explanations;
  auto candidates = GetCandidates(s.view, Method::kEmptiness, {}, &explanations);
  ASSERT_THAT(candidates, SizeIs(1));
  EXPECT_EQ(candidates[0].name, "free");
  EXPECT_TRUE(candidates[0].empty);
  EXPECT_THAT(candidates[0].reschedulable, SizeIs(1));
  ASSERT_NE(Find(explanations, "busy"), nullptr);
  EXPECT_THAT(Find(explanations, "busy")->message, HasSubstr("not empty"));
}

TEST(DisruptionTest, DoNotDisruptPodAndNodeAnnotationBlock) {
  Scene s;
  s.Pool();
  s.AddNode("pinned-node", {.do_not_disrupt = true});
  s.AddPod("pinned-node", "a", "100m");
  s.AddNode("pinned-pod");
  s.AddPod("pinned-pod", "b", "100m", [](nlohmann::json& pod) {
    pod["metadata"]["annotations"] = {{std::string(v1::kDoNotDisruptAnnotationKey), "true"}};
  });
  s.AddNode("free");
  s.AddPod("free", "c", "100m");
  std::vector<Explanation> explanations;
  auto candidates = GetCandidates(s.view, Method::kSingleNodeConsolidation, {}, &explanations);
  ASSERT_THAT(candidates, SizeIs(1));
  EXPECT_EQ(candidates[0].name, "free");
  const Explanation* node = Find(explanations, "pinned-node");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->event_reason, "DisruptionBlocked");
  EXPECT_THAT(node->message, HasSubstr("do-not-disrupt"));
  const Explanation* pod = Find(explanations, "pinned-pod");
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(pod->event_reason, "DisruptionBlocked");
  EXPECT_THAT(pod->message, HasSubstr("default/b"));
}

TEST(DisruptionTest, PdbWithNoDisruptionsAllowedBlocks) {
  Scene s;
  s.Pool();
  s.AddNode("node");
  s.AddPod("node", "web", "100m");
  core::PodDisruptionBudget pdb;
  pdb.metadata.name = "web";
  pdb.metadata.namespace_ = "default";
  pdb.spec.selector = core::LabelSelector{.match_labels = {{"app", "web"}}};
  pdb.status.emplace().disruptions_allowed = 0;
  s.view.pdbs.push_back(pdb);
  std::vector<Explanation> explanations;
  EXPECT_THAT(GetCandidates(s.view, Method::kSingleNodeConsolidation, {}, &explanations),
              SizeIs(0));
  ASSERT_NE(Find(explanations, "node"), nullptr);
  EXPECT_EQ(Find(explanations, "node")->message, "pdb \"default/web\" prevents pod evictions");

  s.view.pdbs[0].status->disruptions_allowed = 1;
  EXPECT_THAT(GetCandidates(s.view, Method::kSingleNodeConsolidation, {}, nullptr), SizeIs(1));
}

TEST(DisruptionTest, DriftPicksOldestAndPreSpinsAReplacement) {
  Scene s;
  s.Pool();
  s.AddNode("young", {.drifted_since = kNow - absl::Minutes(1)});
  s.AddPod("young", "a", "3");
  s.AddNode("old", {.drifted_since = kNow - absl::Hours(2)});
  s.AddPod("old", "b", "3");
  auto result = s.Run(Method::kDrift);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  const Command& command = result->commands[0];
  EXPECT_THAT(Names(command), ElementsAre("old"));
  ASSERT_THAT(command.replacements, SizeIs(1));  // the pod does not fit on "young"
  EXPECT_TRUE(command.replacements[0].pods.empty());
  EXPECT_EQ(command.reason(), v1::DisruptionReason::kDrifted);
  EXPECT_EQ(command.pods_moved, 1);
}

TEST(DisruptionTest, DriftDeletesWhenPodsFitElsewhere) {
  Scene s;
  s.Pool();
  s.AddNode("drifted", {.drifted_since = kNow - absl::Hours(1)});
  s.AddPod("drifted", "a", "1");
  s.AddNode("roomy");
  auto result = s.Run(Method::kDrift);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  EXPECT_THAT(result->commands[0].replacements, SizeIs(0));
}

TEST(DisruptionTest, SingleNodeReplacesWithAStrictlyCheaperNodePinnedToSpot) {
  Scene s;
  s.Pool();
  s.AddNode("big", {.type = "large"});
  s.AddPod("big", "a", "1");
  auto result = s.Run(Method::kSingleNodeConsolidation);
  const Command* only = OnlyCommand(result, 1, 1);
  ASSERT_NE(only, nullptr);
  const Command& command = *only;
  const solver::NewNodeClaim& r = command.replacements[0];
  EXPECT_EQ(r.capacity_type, "spot");  // the replacement allowed both: pinned to spot
  EXPECT_LT(r.price, 0.40);
  // Worst-case spot launch prices below $0.40/h: large (spot $0.20) qualifies, xlarge does not.
  for (const auto& type : r.instance_types) EXPECT_NE(type->name(), "xlarge");
  EXPECT_NEAR(command.savings_per_hour, 0.40 - r.price, 1e-9);
  EXPECT_THAT(command.Summary(), HasSubstr("replace 1 node (big) with 1"));
  EXPECT_THAT(command.Summary(), HasSubstr("moving 1 pod"));
  ASSERT_NE(Find(result->explanations, "big"), nullptr);
  EXPECT_TRUE(Find(result->explanations, "big")->disrupted);
}

TEST(DisruptionTest, SingleNodeDoesNotReplaceWithTheSamePrice) {
  Scene s;
  s.types = {MakeType({.name = "small", .cpu = 2, .mem_gi = 4, .price = 0.10, .spot_factor = 0})};
  s.Pool();
  s.AddNode("node", {.type = "small"});
  s.AddPod("node", "a", "1");
  auto result = s.Run(Method::kSingleNodeConsolidation);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->commands, SizeIs(0));
  ASSERT_NE(Find(result->explanations, "node"), nullptr);
  EXPECT_EQ(Find(result->explanations, "node")->event_reason, "Unconsolidatable");
  EXPECT_THAT(Find(result->explanations, "node")->message, HasSubstr("cheaper"));
}

TEST(DisruptionTest, SingleNodeDeletesWhenPodsFitElsewhere) {
  Scene s;
  s.Pool();
  s.AddNode("a");
  s.AddPod("a", "pa", "1");
  s.AddNode("b");
  s.AddPod("b", "pb", "1");
  auto result = s.Run(Method::kSingleNodeConsolidation);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  EXPECT_EQ(result->commands[0].Decision(), "delete");
  EXPECT_THAT(result->commands[0].candidates, SizeIs(1));
  EXPECT_NEAR(result->commands[0].savings_per_hour, 0.20, 1e-9);
  // The other node receives the moved pod, so it is named as a destination.
  const std::string other = result->commands[0].candidates[0].name == "a" ? "b" : "a";
  EXPECT_THAT(result->commands[0].destinations, ElementsAre(other));
}

TEST(DisruptionTest, UnschedulablePodsMakeConsolidationANoOp) {
  Scene s;
  s.types = {MakeType({.name = "small", .cpu = 2, .mem_gi = 4, .price = 0.10, .spot_factor = 0})};
  s.Pool();
  s.AddNode("a", {.type = "small"});
  s.AddPod("a", "pa", "1500m");
  s.AddNode("b", {.type = "small"});
  s.AddPod("b", "pb", "1500m", [](nlohmann::json& pod) {
    pod["spec"]["nodeSelector"] = {{"example.com/never", "true"}};
  });
  auto result = s.Run(Method::kSingleNodeConsolidation);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->commands, SizeIs(0));
  ASSERT_NE(Find(result->explanations, "b"), nullptr);
  EXPECT_THAT(Find(result->explanations, "b")->message, HasSubstr("not all pods would schedule"));
}

TEST(DisruptionTest, MultiNodeReplacesThreeNodesWithOne) {
  Scene s;
  s.Pool();
  s.AddLoadedNodes(3, "1");
  s.view.node_pools["default"].spec.disruption->budgets = std::vector<v1::Budget>{};
  auto result = s.Run(Method::kMultiNodeConsolidation);
  const Command* only = OnlyCommand(result, 3, 1);
  ASSERT_NE(only, nullptr);
  const Command& command = *only;
  EXPECT_LT(command.replacements[0].price, 0.20);  // cheaper than the cheapest medium kept
  EXPECT_EQ(command.pods_moved, 3);
  EXPECT_GT(command.savings_per_hour, 0.40);

  Options global;
  global.global_multi_node_search = true;
  result = s.Run(Method::kMultiNodeConsolidation, global);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  EXPECT_THAT(result->commands[0].candidates, SizeIs(3));
}

// Merging nodes saves what each node costs beyond its instance (docs/scheduling.md, "Effective
// price"): two small nodes are cheaper than one big by their offering prices alone (0.20 against
// 0.21), not once each node's overhead of 0.02 counts (0.24 against 0.23).
TEST(DisruptionTest, MultiNodeCountsWhatEachNodeCostsBeyondItsInstance) {
  Scene s;
  s.types = {MakeType({.name = "small", .cpu = 2, .mem_gi = 4, .price = 0.10, .spot_factor = 0}),
             MakeType({.name = "big", .cpu = 4, .mem_gi = 8, .price = 0.21, .spot_factor = 0})};
  s.Pool();
  s.AddLoadedNodes(2, "1500m", {.type = "small"});
  s.view.node_pools["default"].spec.disruption->budgets = std::vector<v1::Budget>{};
  auto bare = s.Run(Method::kMultiNodeConsolidation);
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_THAT(bare->commands, SizeIs(0));

  s.view.node_pools["default"].metadata.annotations["dovetail.sh/node-overhead-per-hour"] = "0.02";
  auto priced = s.Run(Method::kMultiNodeConsolidation);
  const Command* command = OnlyCommand(priced, 2, 1);
  ASSERT_NE(command, nullptr);
  EXPECT_EQ(command->replacements[0].instance_type, "big");
  EXPECT_NEAR(command->replacements[0].price, 0.21, 1e-9);
  EXPECT_NEAR(command->replacements[0].effective_price, 0.23, 1e-9);
  EXPECT_NEAR(command->savings_per_hour, 0.01, 1e-9);
}

TEST(DisruptionTest, SpotToSpotNeedsTheGateAndFifteenCheaperTypes) {
  Scene s;
  s.Pool();
  s.AddNode("spot", {.type = "large", .capacity_type = "spot"});
  s.AddPod("spot", "a", "1");
  auto result = s.Run(Method::kSingleNodeConsolidation);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->commands, SizeIs(0));
  ASSERT_NE(Find(result->explanations, "spot"), nullptr);
  EXPECT_THAT(Find(result->explanations, "spot")->message,
              HasSubstr("SpotToSpotConsolidation is disabled"));

  Options gate;
  gate.spot_to_spot = true;
  result = s.Run(Method::kSingleNodeConsolidation, gate);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->commands, SizeIs(0));
  EXPECT_THAT(Find(result->explanations, "spot")->message, HasSubstr("requires 15"));

  // 20 cheaper types: the launch list is cut to the 15 cheapest.
  Scene many;
  many.types = {Type("large", 8, 16, 0.40)};
  for (int i = 0; i < 20; ++i) {
    many.types.push_back(Type(absl::StrCat("t", i), 2, 4, 0.10 + 0.001 * i));
  }
  many.Pool();
  many.AddNode("spot", {.type = "large", .capacity_type = "spot"});
  many.AddPod("spot", "a", "1");
  result = many.Run(Method::kSingleNodeConsolidation, gate);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  const solver::NewNodeClaim& r = result->commands[0].replacements.at(0);
  EXPECT_THAT(r.instance_types, SizeIs(kMinInstanceTypesForSpotToSpot));
  EXPECT_EQ(r.capacity_type, "spot");
  EXPECT_EQ(r.instance_types.front()->name(), "t0");
}

TEST(DisruptionTest, WhenEmptyPoolsAndConsolidateAfterNeverSkipConsolidation) {
  Scene s;
  s.Pool("when-empty", v1::ConsolidationPolicy::kWhenEmpty);
  s.AddNode("a", {.pool = "when-empty"});
  s.AddPod("a", "pa", "1");
  std::vector<Explanation> explanations;
  EXPECT_THAT(GetCandidates(s.view, Method::kSingleNodeConsolidation, {}, &explanations),
              SizeIs(0));
  ASSERT_NE(Find(explanations, "a"), nullptr);
  EXPECT_EQ(Find(explanations, "a")->event_reason, "Unconsolidatable");
  EXPECT_THAT(Find(explanations, "a")->message, HasSubstr("WhenEmpty"));

  Scene never;
  never.Pool().spec.disruption->consolidate_after = "Never";
  never.AddNode("b");
  never.AddPod("b", "pb", "1");
  never.AddNode("empty");
  explanations.clear();
  EXPECT_THAT(GetCandidates(never.view, Method::kMultiNodeConsolidation, {}, &explanations),
              SizeIs(0));
  EXPECT_THAT(Find(explanations, "b")->message, HasSubstr("Never"));
  EXPECT_THAT(GetCandidates(never.view, Method::kEmptiness, {}, nullptr), SizeIs(0));
}

TEST(DisruptionTest, BalancedPolicyRejectsSmallSavingsForTheDisruption) {
  auto build = [](std::optional<v1::ConsolidationPolicy> policy) {
    auto s = std::make_unique<Scene>();
    s->types = {MakeType({.name = "a", .cpu = 4, .mem_gi = 8, .price = 0.20, .spot_factor = 0}),
                MakeType({.name = "b", .cpu = 4, .mem_gi = 8, .price = 0.19, .spot_factor = 0})};
    s->Pool("default", policy);
    for (int i = 0; i < 10; ++i) {
      const std::string name = absl::StrCat("node-", i);
      s->AddNode(name, {.type = "a"});
      s->AddPod(name, absl::StrCat("p-", i), "3");
    }
    return s;
  };
  auto balanced = build(v1::ConsolidationPolicy::kBalanced);
  auto result = balanced->Run(Method::kSingleNodeConsolidation);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->commands, SizeIs(0));
  bool rejected = false;
  for (const Explanation& e : result->explanations) {
    if (e.message.find("Balanced") != std::string::npos) rejected = true;
  }
  EXPECT_TRUE(rejected);
  // Every replacement move was scored and rejected (the metrics' moves).
  ASSERT_THAT(result->moves, SizeIs(10));
  for (const ConsolidationMove& move : result->moves) {
    EXPECT_EQ(move.node_pool, "default");
    EXPECT_EQ(move.policy, "Balanced");
    EXPECT_FALSE(move.approved);
    ASSERT_TRUE(move.score.has_value());
    EXPECT_LT(*move.score, 0.5);
    EXPECT_FALSE(move.score_approved);
  }

  auto underutilized = build(std::nullopt);
  result = underutilized->Run(Method::kSingleNodeConsolidation);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  EXPECT_EQ(result->commands[0].replacements.at(0).instance_type, "b");
  // Not Balanced: the move counts as approved, unscored.
  ASSERT_THAT(result->moves, SizeIs(1));
  EXPECT_TRUE(result->moves[0].approved);
  EXPECT_EQ(result->moves[0].policy, "WhenEmptyOrUnderutilized");
  EXPECT_FALSE(result->moves[0].score.has_value());
}

TEST(DisruptionTest, MinSavingsAnnotationKeepsSmallMoves) {
  Scene s;
  s.Pool().metadata.annotations[std::string(kMinSavingsAnnotationKey)] = "1.5";
  s.AddNode("big", {.type = "large"});
  s.AddPod("big", "a", "1");
  auto result = s.Run(Method::kSingleNodeConsolidation);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->commands, SizeIs(0));
  EXPECT_THAT(Find(result->explanations, "big")->message, HasSubstr("below the minimum"));
}

TEST(DisruptionTest, ValidationRejectsWhenAPodAppearedOrTheCandidateIsNominated) {
  Scene s;
  s.Pool();
  s.AddNode("a");
  s.AddPod("a", "pa", "2");
  s.AddNode("b");
  s.AddPod("b", "pb", "1");
  auto result = s.Run(Method::kSingleNodeConsolidation);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  const Command command = result->commands[0];
  ASSERT_EQ(command.Decision(), "delete");
  const std::string candidate = command.candidates[0].name;
  const std::string other = candidate == "a" ? "b" : "a";
  {
    auto simulator = Simulator::Create(s.view, {});
    ASSERT_TRUE(simulator.ok());
    EXPECT_TRUE(ValidateCommand(command, s.view, **simulator, {}).ok());
  }
  {
    ClusterView fresh = s.view;
    // A pod appeared on the destination: the candidate's pods no longer fit there.
    fresh.snapshot.pods_by_node[other].push_back(
        s.objects().Pod(state::testing::PodJson("default", "new", other, "2")));
    auto simulator = Simulator::Create(fresh, {});
    ASSERT_TRUE(simulator.ok());
    absl::Status status = ValidateCommand(command, fresh, **simulator, {});
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  }
  {
    ClusterView fresh = s.view;
    for (auto& n : fresh.snapshot.nodes) {
      if (n.Name() == candidate) n.nominated_until = kNow + absl::Seconds(20);
    }
    auto simulator = Simulator::Create(fresh, {});
    ASSERT_TRUE(simulator.ok());
    absl::Status status = ValidateCommand(command, fresh, **simulator, {});
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(status.message(), HasSubstr("nominated"));
  }
}

TEST(DisruptionTest, ConsolidationOrderIsPricePerDisruptionCost) {
  Scene s;
  s.Pool();
  s.AddNode("cheap", {.type = "small"});
  s.AddPod("cheap", "c", "100m");
  s.AddNode("dear", {.type = "large"});
  s.AddPod("dear", "d", "100m");
  s.AddNode("dear-busy", {.type = "large"});
  for (int i = 0; i < 5; ++i) s.AddPod("dear-busy", absl::StrCat("b", i), "100m");
  auto candidates = GetCandidates(s.view, Method::kSingleNodeConsolidation, {}, nullptr);
  ASSERT_THAT(candidates, SizeIs(3));
  EXPECT_EQ(candidates[0].name, "dear");
  EXPECT_EQ(candidates[1].name, "dear-busy");
  EXPECT_EQ(candidates[2].name, "cheap");
  EXPECT_DOUBLE_EQ(candidates[0].reschedule_disruption_cost, 2.0);
}

TEST(DisruptionTest, PodsMustNotLandOnUninitializedNodes) {
  Scene s;
  s.Pool();
  s.AddNode("a");
  s.AddPod("a", "pa", "1");
  s.AddNode("coming-up", {.initialized = false});
  auto result = s.Run(Method::kSingleNodeConsolidation);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->commands, SizeIs(0));
  ASSERT_NE(Find(result->explanations, "a"), nullptr);
  EXPECT_THAT(Find(result->explanations, "a")->message, HasSubstr("uninitialized node"));
  const Explanation* coming_up = Find(result->explanations, "coming-up");
  ASSERT_NE(coming_up, nullptr);
  EXPECT_THAT(coming_up->message, HasSubstr("not initialized"));
}

TEST(DisruptionTest, MinNodeAgeKeepsYoungNodes) {
  Scene s;
  s.Pool();
  s.AddNode("young", {.type = "large", .age = absl::Minutes(10)});
  s.AddPod("young", "a", "1");
  Options options;
  options.min_node_age = absl::Minutes(30);
  std::vector<Explanation> explanations;
  EXPECT_THAT(GetCandidates(s.view, Method::kSingleNodeConsolidation, options, &explanations),
              SizeIs(0));
  EXPECT_THAT(Find(explanations, "young")->message, HasSubstr("minimum node age"));
  s.view.node_pools["default"].metadata.annotations[std::string(kMinNodeAgeAnnotationKey)] = "5m";
  EXPECT_THAT(GetCandidates(s.view, Method::kSingleNodeConsolidation, options, nullptr), SizeIs(1));
}

TEST(DisruptionTest, DriftIgnoresPodBlocksWithTerminationGracePeriod) {
  Scene s;
  s.Pool();
  auto pinned = [](nlohmann::json& pod) {
    pod["metadata"]["annotations"] = {{std::string(v1::kDoNotDisruptAnnotationKey), "true"}};
  };
  s.AddNode("blocked", {.drifted_since = kNow - absl::Hours(2)});
  s.AddPod("blocked", "a", "1", pinned);
  s.AddNode("graceful", {.drifted_since = kNow - absl::Hours(1), .termination_grace_period = true});
  s.AddPod("graceful", "b", "1", pinned);
  std::vector<Explanation> explanations;
  auto candidates = GetCandidates(s.view, Method::kDrift, {}, &explanations);
  ASSERT_THAT(candidates, SizeIs(1));
  EXPECT_EQ(candidates[0].name, "graceful");
  EXPECT_EQ(Find(explanations, "blocked")->event_reason, "DisruptionBlocked");
  // Consolidation still respects the pod.
  EXPECT_THAT(GetCandidates(s.view, Method::kSingleNodeConsolidation, {}, nullptr), SizeIs(0));
}

TEST(DisruptionTest, DisruptionCostWeighsEvictionCostsByLifetimeRemaining) {
  Scene s;
  s.Pool();
  s.AddNode("node", {.age = absl::Hours(1), .expire_after = "2h"});
  s.AddPod("node", "important", "100m", [](nlohmann::json& pod) {
    pod["spec"]["priority"] = 1 << 25;  // eviction cost 2
  });
  s.AddPod("node", "expendable", "100m", [](nlohmann::json& pod) {
    pod["metadata"]["annotations"] = {{"controller.kubernetes.io/pod-deletion-cost", "-268435456"}};
  });  // eviction cost 1 - 2 = -1
  auto candidates = GetCandidates(s.view, Method::kSingleNodeConsolidation, {}, nullptr);
  ASSERT_THAT(candidates, SizeIs(1));
  EXPECT_DOUBLE_EQ(candidates[0].disruption_cost, (2.0 - 1.0) * 0.5);
  EXPECT_DOUBLE_EQ(candidates[0].reschedule_disruption_cost, 1.0 + 2.0);
}

TEST(DisruptionTest, GlobalMultiNodeSearchSkipsACandidateThatCannotMove) {
  Scene s;
  s.Pool().spec.disruption->budgets = std::vector<v1::Budget>{};
  s.AddNode("a");
  s.AddPod("a", "pa", "1");
  s.AddNode("b");
  s.AddPod("b", "pb", "1");
  s.AddNode("c");  // its pods cannot leave: the others can move onto it
  for (int i = 0; i < 2; ++i) {
    s.AddPod("c", absl::StrCat("pinned-", i), "100m", [](nlohmann::json& pod) {
      pod["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", "c"}};
    });
  }
  s.AddNode("d");
  for (int i = 0; i < 3; ++i) s.AddPod("d", absl::StrCat("pd-", i), "100m");

  auto result = s.Run(Method::kMultiNodeConsolidation);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  EXPECT_THAT(Names(result->commands[0]), ElementsAre("a", "b"));  // upstream's binary search

  Options global;
  global.global_multi_node_search = true;
  result = s.Run(Method::kMultiNodeConsolidation, global);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  EXPECT_THAT(Names(result->commands[0]), ElementsAre("a", "b", "d"));
  EXPECT_EQ(result->commands[0].Decision(), "delete");
  EXPECT_NEAR(result->commands[0].savings_per_hour, 0.60, 1e-9);
}

TEST(DisruptionTest, EmptinessValidationKeepsTheValidSubset) {
  Scene s;
  s.Pool().spec.disruption->budgets = std::vector<v1::Budget>{};
  s.AddNode("a");
  s.AddNode("b");
  s.AddNode("c");
  auto result = s.Run(Method::kEmptiness);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  const Command command = result->commands[0];
  ASSERT_THAT(command.candidates, SizeIs(3));

  ClusterView fresh = s.view;
  fresh.snapshot.pods_by_node["b"].push_back(
      s.objects().Pod(state::testing::PodJson("default", "arrived", "b", "100m")));
  for (auto& n : fresh.snapshot.nodes) {
    if (n.Name() == "c") n.nominated_until = kNow + absl::Seconds(20);
  }
  absl::StatusOr<Command> valid = ValidEmptinessSubset(command, fresh, {});
  ASSERT_TRUE(valid.ok()) << valid.status();
  EXPECT_THAT(Names(*valid), ElementsAre("a"));
  auto simulator = Simulator::Create(fresh, {});
  ASSERT_TRUE(simulator.ok());
  EXPECT_EQ(ValidateCommand(command, fresh, **simulator, {}).code(),
            absl::StatusCode::kFailedPrecondition);

  for (auto& n : fresh.snapshot.nodes) n.marked_for_deletion = true;
  EXPECT_EQ(ValidEmptinessSubset(command, fresh, {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(DisruptionTest, MultiNodeReplacesSixtyLightNodesWithOne) {
  Scene s;
  s.Pool().spec.disruption->budgets = std::vector<v1::Budget>{};
  for (int i = 0; i < 60; ++i) {
    const std::string name = absl::StrCat("node-", i);
    s.AddNode(name);
    s.AddPod(name, absl::StrCat("p-", i), "100m");
  }
  auto result = s.Run(Method::kMultiNodeConsolidation);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->commands, SizeIs(1));
  // The largest valid prefix is all of them: one node replaces the sixty.
  EXPECT_THAT(result->commands[0].candidates, SizeIs(60));
  ASSERT_THAT(result->commands[0].replacements, SizeIs(1));
  EXPECT_EQ(result->commands[0].pods_moved, 60);
  EXPECT_GT(result->commands[0].savings_per_hour, 11.0);
}

TEST(DisruptionTest, NotConsolidatableYetIsNotACandidate) {
  Scene s;
  s.Pool();
  s.AddNode("fresh", {.consolidatable = false});
  EXPECT_THAT(GetCandidates(s.view, Method::kEmptiness, {}, nullptr), SizeIs(0));
}

}  // namespace
}  // namespace dovetail::controllers::disruption
