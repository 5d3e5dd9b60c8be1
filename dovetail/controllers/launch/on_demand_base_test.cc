#include "dovetail/controllers/launch/on_demand_base.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/kwok/kwok_cloud_provider.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "dovetail/controllers/launch/node_claim_builder.h"
#include "dovetail/scenario/pool_template.h"
#include "dovetail/solver/solver_test_builders.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::launch {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;
using scheduling::Requirement;
using scheduling::Requirements;
using solver::test_builders::MakeType;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kCt(v1::kCapacityTypeLabelKey);
const std::string kIt(v1::kLabelInstanceType);

TEST(OnDemandBaseTest, ParsesCountsAndPercentages) {
  struct Case {
    std::string value;
    int64_t count;
    std::optional<int64_t> percent;
  };
  for (const Case& c : std::vector<Case>{{"0", 0, std::nullopt},
                                         {"2", 2, std::nullopt},
                                         {" 3 ", 3, std::nullopt},
                                         {"0%", 0, 0},
                                         {"25%", 0, 25},
                                         {"100%", 0, 100}}) {
    SCOPED_TRACE(c.value);
    absl::StatusOr<OnDemandBase> base = ParseOnDemandBase(c.value);
    ASSERT_TRUE(base.ok()) << base.status();
    EXPECT_EQ(base->percent, c.percent);
    if (!c.percent.has_value()) {
      EXPECT_EQ(base->count, c.count);
    }
  }
  EXPECT_EQ(ParseOnDemandBase("25%")->String(), "25%");
  EXPECT_EQ(ParseOnDemandBase("2")->String(), "2");
}

TEST(OnDemandBaseTest, RejectsInvalidValues) {
  for (const char* value :
       {"", " ", "-1", "+2", "2.5", "abc", "%", "101%", "-5%", "2 %", "1e3", "5%%", "9999999999"}) {
    SCOPED_TRACE(value);
    absl::StatusOr<OnDemandBase> base = ParseOnDemandBase(value);
    ASSERT_FALSE(base.ok());
    EXPECT_EQ(base.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(base.status().message(), HasSubstr("dovetail.sh/on-demand-base"));
  }
}

TEST(OnDemandBaseTest, RequiredCapsCountsAtTheTotalAndRoundsPercentagesUp) {
  const OnDemandBase two{.count = 2};
  EXPECT_EQ(two.Required(0), 0);
  EXPECT_EQ(two.Required(1), 1);  // the first N nodes: a 1-node pool needs its one node
  EXPECT_EQ(two.Required(5), 2);
  const OnDemandBase quarter{.percent = 25};
  EXPECT_EQ(quarter.Required(0), 0);
  EXPECT_EQ(quarter.Required(1), 1);  // ceil(0.25)
  EXPECT_EQ(quarter.Required(4), 1);
  EXPECT_EQ(quarter.Required(5), 2);  // ceil(1.25)
  EXPECT_EQ(quarter.Required(8), 2);
  EXPECT_EQ((OnDemandBase{.percent = 0}).Required(10), 0);
  EXPECT_EQ((OnDemandBase{.percent = 100}).Required(7), 7);
  EXPECT_EQ((OnDemandBase{.percent = 33}).Required(3), 1);  // ceil(0.99)
}

TEST(OnDemandBaseTest, ReadsTheNodePoolAnnotation) {
  v1::NodePool pool;
  pool.metadata.name = "web";
  auto none = OnDemandBaseOf(pool);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  pool.metadata.annotations[std::string(kOnDemandBaseAnnotationKey)] = "50%";
  auto half = OnDemandBaseOf(pool);
  ASSERT_TRUE(half.ok());
  ASSERT_TRUE(half->has_value());
  EXPECT_EQ((*half)->percent, 50);
  pool.metadata.annotations[std::string(kOnDemandBaseAnnotationKey)] = "lots";
  auto bad = OnDemandBaseOf(pool);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("NodePool/web"));
  EXPECT_THAT(bad.status().message(), HasSubstr("\"lots\""));
}

TEST(OnDemandBaseTest, CapacityTypePredicates) {
  Requirements any;
  EXPECT_TRUE(AllowsSpotAndOnDemand(any));  // undefined: anything
  EXPECT_FALSE(OnDemandOnly(any));
  Requirements both;
  both.Add(Requirement::In(kCt, {"on-demand", "spot"}));
  EXPECT_TRUE(AllowsSpotAndOnDemand(both));
  EXPECT_FALSE(OnDemandOnly(both));
  Requirements spot;
  spot.Add(Requirement::In(kCt, {"spot"}));
  EXPECT_FALSE(AllowsSpotAndOnDemand(spot));
  EXPECT_FALSE(OnDemandOnly(spot));
  Requirements od;
  od.Add(Requirement::In(kCt, {"on-demand"}));
  EXPECT_FALSE(AllowsSpotAndOnDemand(od));
  EXPECT_TRUE(OnDemandOnly(od));
  Requirements not_spot;
  not_spot.Add(Requirement::NotIn(kCt, {"spot"}));
  EXPECT_FALSE(AllowsSpotAndOnDemand(not_spot));
  EXPECT_FALSE(OnDemandOnly(not_spot));  // reserved too
}

// The NodeClaim's karpenter.sh/capacity-type In values (the provider reads them at launch).
std::vector<std::string> CapacityTypes(const v1::NodeClaim& claim) {
  for (const core::NodeSelectorRequirement& r : claim.spec.requirements) {
    if (r.key == kCt && r.op == core::SelectorOperator::kIn) return r.values;
  }
  return {};
}

state::StateNode Machine(const std::string& pool, const std::string& label,
                         std::vector<std::string> required = {}) {
  auto claim = std::make_shared<v1::NodeClaim>();
  claim->metadata.name = absl::StrCat(pool, "-", label, "-", required.size());
  claim->metadata.labels[std::string(v1::kNodePoolLabelKey)] = pool;
  if (!label.empty()) claim->metadata.labels[kCt] = label;
  if (!required.empty()) {
    core::NodeSelectorRequirement r;
    r.key = kCt;
    r.op = core::SelectorOperator::kIn;
    r.values = std::move(required);
    claim->spec.requirements.push_back(std::move(r));
  }
  state::StateNode node;
  node.node_claim = std::move(claim);
  return node;
}

TEST(OnDemandBaseTest, CountsActiveNodeClaimsPerPoolIncludingInFlightOnes) {
  std::vector<state::StateNode> nodes;
  nodes.push_back(Machine("a", "on-demand"));
  nodes.push_back(Machine("a", "spot"));
  nodes.push_back(Machine("a", "", {"on-demand"}));          // in flight, narrowed
  nodes.push_back(Machine("a", "", {"on-demand", "spot"}));  // in flight, likely spot
  nodes.push_back(Machine("a", "on-demand"));
  nodes.back().marked_for_deletion = true;  // going away
  nodes.push_back(Machine("a", "on-demand"));
  auto deleting = std::make_shared<v1::NodeClaim>(*nodes.back().node_claim);
  deleting->metadata.deletion_timestamp = absl::UnixEpoch();
  nodes.back().node_claim = deleting;
  nodes.push_back(Machine("b", "reserved"));
  state::StateNode unmanaged;  // no NodeClaim: not a pool's
  nodes.push_back(unmanaged);

  const auto counts = CountCapacityTypes(nodes);
  ASSERT_TRUE(counts.contains("a"));
  EXPECT_EQ(counts.at("a").total, 4);
  EXPECT_EQ(counts.at("a").on_demand, 2);
  ASSERT_TRUE(counts.contains("b"));
  EXPECT_EQ(counts.at("b").total, 1);
  EXPECT_EQ(counts.at("b").on_demand, 0);  // reserved does not count
  EXPECT_EQ(counts.size(), 2u);
}

// A planned claim admitting `cts` over `types` (cheapest first, as the solver orders them).
solver::NewNodeClaim Planned(const std::string& pool, const std::string& hostname,
                             std::vector<cloudprovider::InstanceTypePtr> types,
                             std::initializer_list<std::string_view> cts = {"on-demand", "spot"},
                             std::optional<std::string> zone = std::nullopt) {
  solver::NewNodeClaim claim;
  claim.pool = pool;
  claim.hostname = hostname;
  std::vector<std::string> names;
  names.reserve(types.size());
  for (const auto& t : types) names.push_back(t->name());
  claim.requirements.Add(Requirement::In(kIt, names));
  claim.requirements.Add(Requirement::In(kCt, cts));
  if (zone.has_value()) {
    claim.requirements.Add(Requirement::In(std::string(v1::kLabelTopologyZone), {*zone}));
  }
  claim.instance_types = std::move(types);
  const cloudprovider::Offering* o =
      claim.instance_types.front()->CheapestOffering(claim.requirements);
  if (o != nullptr) {
    claim.instance_type = claim.instance_types.front()->name();
    claim.zone = o->zone;
    claim.capacity_type = o->capacity_type;
    claim.price = o->price;
  }
  return claim;
}

TEST(OnDemandBaseTest, NarrowKeepsTypesWithACompatibleOnDemandOfferingCheapestFirst) {
  // "cheap" has no on-demand offering in zone-a; "mid" and "dear" do, with spot cheaper.
  auto cheap = MakeType({.name = "cheap", .price = 0.05, .unavailable = {"on-demand/zone-a"}});
  auto mid = MakeType({.name = "mid", .price = 0.30});
  auto dear = MakeType({.name = "dear", .price = 0.20, .zones = {"zone-a"}});
  solver::NewNodeClaim claim =
      Planned("p", "h1", {cheap, dear, mid}, {"on-demand", "spot"}, "zone-a");
  EXPECT_EQ(claim.capacity_type, "spot");
  ASSERT_TRUE(NarrowToOnDemand(claim).ok());
  EXPECT_EQ(claim.capacity_type, "on-demand");
  EXPECT_EQ(claim.zone, "zone-a");
  EXPECT_EQ(claim.instance_type, "dear");  // $0.20 on-demand beats mid's $0.30
  EXPECT_DOUBLE_EQ(claim.price, 0.20);
  ASSERT_EQ(claim.instance_types.size(), 2u);
  EXPECT_EQ(claim.instance_types[0]->name(), "dear");
  EXPECT_EQ(claim.instance_types[1]->name(), "mid");
  EXPECT_TRUE(OnDemandOnly(claim.requirements));
  const Requirement* it = claim.requirements.Find(kIt);
  ASSERT_NE(it, nullptr);
  EXPECT_FALSE(it->Has("cheap"));
  EXPECT_TRUE(it->Has("mid"));
  EXPECT_TRUE(it->Has("dear"));

  // The built NodeClaim asks for on-demand only, and kwok's launch choice honours it.
  v1::NodePool pool;
  pool.metadata.name = "p";
  const v1::NodeClaim built = BuildNodeClaim(pool, claim);
  EXPECT_THAT(CapacityTypes(built), ElementsAre("on-demand"));
  auto catalog = cloudprovider::Catalog::Create({cheap, mid, dear});
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  auto launch = cloudprovider::kwok::ChooseLaunch(*catalog, built);
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->offering.capacity_type, "on-demand");
  EXPECT_EQ(launch->instance_type->name(), "dear");
}

TEST(OnDemandBaseTest, NarrowLeavesTheClaimWhenNoOnDemandOptionRemains) {
  auto spot_only = MakeType({.name = "s", .price = 0.10, .unavailable = {"on-demand/zone-a"}});
  solver::NewNodeClaim claim = Planned("p", "h1", {spot_only}, {"on-demand", "spot"}, "zone-a");
  const solver::NewNodeClaim before = claim;
  absl::Status status = NarrowToOnDemand(claim);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("on-demand offering"));
  EXPECT_EQ(claim.requirements, before.requirements);
  EXPECT_EQ(claim.capacity_type, "spot");
  ASSERT_EQ(claim.instance_types.size(), 1u);

  solver::NewNodeClaim spot = Planned("p", "h2", {MakeType({.name = "x"})}, {"spot"});
  status = NarrowToOnDemand(spot);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("do not admit on-demand"));
}

TEST(OnDemandBaseTest, NarrowRefusesToBreakMinValues) {
  auto a = MakeType({.name = "a", .price = 0.10});
  auto b = MakeType({.name = "b", .price = 0.20, .unavailable = {"on-demand/zone-a"}});
  solver::NewNodeClaim claim = Planned("p", "h1", {a, b}, {"on-demand", "spot"}, "zone-a");
  Requirement types = Requirement::In(kIt, {"a", "b"});
  types.set_min_values(2);
  claim.requirements.Remove(kIt);
  claim.requirements.Add(types);
  absl::Status status = NarrowToOnDemand(claim);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("minValues"));
  EXPECT_EQ(claim.instance_types.size(), 2u);
}

std::vector<std::string> OnDemandHosts(const std::vector<solver::NewNodeClaim>& claims) {
  std::vector<std::string> out;
  for (const auto& c : claims) {
    if (OnDemandOnly(c.requirements)) out.push_back(c.hostname);
  }
  return out;
}

std::vector<solver::NewNodeClaim> Batch(const std::string& pool, int n) {
  std::vector<solver::NewNodeClaim> out;
  out.reserve(n);
  auto type = MakeType({.name = "m", .price = 0.20});
  for (int i = 0; i < n; ++i) out.push_back(Planned(pool, absl::StrCat("h", i), {type}));
  return out;
}

TEST(OnDemandBaseTest, NarrowsTheFirstDeficitClaimsOfABatch) {
  std::vector<solver::NewNodeClaim> claims = Batch("p", 5);
  auto out = ApplyOnDemandBase(claims, {{"p", {.count = 2}}}, {});
  EXPECT_THAT(OnDemandHosts(claims), ElementsAre("h0", "h1"));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].pool, "p");
  EXPECT_EQ(out[0].total, 5);
  EXPECT_EQ(out[0].required, 2);
  EXPECT_EQ(out[0].on_demand, 2);
  EXPECT_EQ(out[0].narrowed, 2);
  EXPECT_TRUE(out[0].Met());
  EXPECT_EQ(claims[0].capacity_type, "on-demand");
  EXPECT_EQ(claims[2].capacity_type, "spot");

  // Two on-demand NodeClaims already running: nothing to narrow.
  claims = Batch("p", 5);
  out = ApplyOnDemandBase(claims, {{"p", {.count = 2}}}, {{"p", {.total = 3, .on_demand = 2}}});
  EXPECT_TRUE(OnDemandHosts(claims).empty());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].narrowed, 0);
  EXPECT_EQ(out[0].total, 8);

  // One running: one more.
  claims = Batch("p", 5);
  out = ApplyOnDemandBase(claims, {{"p", {.count = 2}}}, {{"p", {.total = 4, .on_demand = 1}}});
  EXPECT_THAT(OnDemandHosts(claims), ElementsAre("h0"));
}

TEST(OnDemandBaseTest, PercentCountsTheTotalAfterTheLaunch) {
  // 50% of (2 spot running + 4 new) = 3.
  std::vector<solver::NewNodeClaim> claims = Batch("p", 4);
  auto out = ApplyOnDemandBase(claims, {{"p", {.percent = 50}}}, {{"p", {.total = 2}}});
  EXPECT_THAT(OnDemandHosts(claims), ElementsAre("h0", "h1", "h2"));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].required, 3);
  // 30% of (0 + 5) = ceil(1.5) = 2.
  claims = Batch("p", 5);
  ApplyOnDemandBase(claims, {{"p", {.percent = 30}}}, {});
  EXPECT_THAT(OnDemandHosts(claims), ElementsAre("h0", "h1"));
}

TEST(OnDemandBaseTest, ClaimsThatAlreadyRequireOnDemandCount) {
  auto type = MakeType({.name = "m", .price = 0.20});
  std::vector<solver::NewNodeClaim> claims = {Planned("p", "both-1", {type}),
                                              Planned("p", "od", {type}, {"on-demand"}),
                                              Planned("p", "both-2", {type})};
  auto out = ApplyOnDemandBase(claims, {{"p", {.count = 2}}}, {});
  EXPECT_THAT(OnDemandHosts(claims), ElementsAre("both-1", "od"));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].narrowed, 1);
}

TEST(OnDemandBaseTest, PoolsThatAllowOneCapacityTypeAreLeftAlone) {
  auto type = MakeType({.name = "m", .price = 0.20});
  std::vector<solver::NewNodeClaim> claims = {Planned("spot", "s1", {type}, {"spot"}),
                                              Planned("spot", "s2", {type}, {"spot"}),
                                              Planned("od", "o1", {type}, {"on-demand"})};
  auto out = ApplyOnDemandBase(claims, {{"spot", {.count = 1}}, {"od", {.count = 1}}}, {});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].pool, "od");
  EXPECT_TRUE(out[0].Met());
  EXPECT_EQ(out[0].narrowed, 0);
  EXPECT_EQ(out[1].pool, "spot");
  EXPECT_FALSE(out[1].Met());  // cannot be met: nothing admits on-demand
  EXPECT_EQ(out[1].narrowed, 0);
  EXPECT_TRUE(out[1].failures.empty());
  EXPECT_EQ(claims[0].requirements.Get(kCt).Has("on-demand"), false);
  EXPECT_THAT(OnDemandHosts(claims), ElementsAre("o1"));
}

TEST(OnDemandBaseTest, AClaimThatCannotBeNarrowedIsSkippedForTheNext) {
  auto spot_only = MakeType({.name = "s", .price = 0.10, .unavailable = {"on-demand/zone-a"}});
  auto fine = MakeType({.name = "m", .price = 0.20});
  std::vector<solver::NewNodeClaim> claims = {
      Planned("p", "stuck", {spot_only}, {"on-demand", "spot"}, "zone-a"),
      Planned("p", "next", {fine}), Planned("p", "last", {fine}),
      Planned("other", "untouched", {fine})};
  auto out = ApplyOnDemandBase(claims, {{"p", {.count = 1}}}, {});
  EXPECT_THAT(OnDemandHosts(claims), ElementsAre("next"));
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].failures.size(), 1u);
  EXPECT_THAT(out[0].failures[0], HasSubstr("stuck: "));
  EXPECT_TRUE(out[0].Met());
}

// The provisioning path: a kwok-catalog pool admitting spot and on-demand with base 2, five pods
// that need a node each, the solver's plan, then the NodeClaims the provisioner would create.
v1::NodePool KwokPool(const std::string& base) {
  const nlohmann::json json = {
      {"apiVersion", "karpenter.sh/v1"},
      {"kind", "NodePool"},
      {"metadata",
       {{"name", "general"},
        {"uid", "pool-uid"},
        {"annotations", {{std::string(kOnDemandBaseAnnotationKey), base}}}}},
      {"spec",
       {{"template",
         {{"spec",
           {{"requirements",
             {{{"key", "karpenter.sh/capacity-type"},
               {"operator", "In"},
               {"values", {"on-demand", "spot"}}}}},
            {"nodeClassRef",
             {{"group", "karpenter.kwok.sh"},
              {"kind", "KWOKNodeClass"},
              {"name", "default"}}}}}}}}}};
  auto pool = core::DecodeAs<v1::NodePool>(json);
  EXPECT_TRUE(pool.ok()) << pool.status();
  return pool.ok() ? *pool : v1::NodePool{};
}

TEST(OnDemandBaseTest, AFiveNodePlanWithBaseTwoGetsExactlyTwoOnDemandNodeClaims) {
  auto catalog = cloudprovider::kwok::SyntheticCatalog();
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  const v1::NodePool pool = KwokPool("2");
  auto t = scenario::BuildPoolTemplate(pool, catalog->instance_types(), std::nullopt);
  ASSERT_TRUE(t.ok()) << t.status();
  solver::test_builders::Scene scene;
  scene.input.pools.push_back(std::move(*t));
  for (int i = 0; i < 5; ++i) {
    auto pod = solver::test_builders::MakePod(absl::StrCat("p", i), "1", "1Gi", {{"app", "x"}});
    solver::test_builders::AddAntiAffinity(*pod, v1::kLabelHostname, {{"app", "x"}});
    scene.AddPod(std::move(pod));
  }
  scene.input.options.lower_bound = false;
  auto plan = solver::Solve(scene.input);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->node_claims.size(), 5u);
  for (const auto& c : plan->node_claims) ASSERT_TRUE(AllowsSpotAndOnDemand(c.requirements));

  auto base = OnDemandBaseOf(pool);
  ASSERT_TRUE(base.ok() && base->has_value());
  const std::vector<solver::NewNodeClaim> original = plan->node_claims;
  ApplyOnDemandBase(plan->node_claims, {{"general", **base}}, CountCapacityTypes({}));
  int on_demand = 0;
  for (size_t i = 0; i < plan->node_claims.size(); ++i) {
    const v1::NodeClaim claim = BuildNodeClaim(pool, plan->node_claims[i]);
    auto launch = cloudprovider::kwok::ChooseLaunch(*catalog, claim);
    ASSERT_TRUE(launch.ok()) << launch.status();
    if (i < 2) {
      ++on_demand;
      EXPECT_THAT(CapacityTypes(claim), ElementsAre("on-demand")) << i;
      EXPECT_EQ(launch->offering.capacity_type, "on-demand") << i;
    } else {
      EXPECT_THAT(CapacityTypes(claim), ElementsAre("on-demand", "spot")) << i;
      EXPECT_EQ(launch->offering.capacity_type, "spot") << i;
      EXPECT_EQ(plan->node_claims[i].requirements, original[i].requirements) << i;
    }
  }
  EXPECT_EQ(on_demand, 2);

  // With two on-demand NodeClaims already running, none is narrowed.
  std::vector<solver::NewNodeClaim> again = original;
  std::vector<state::StateNode> running = {Machine("general", "on-demand"),
                                           Machine("general", "on-demand")};
  ApplyOnDemandBase(again, {{"general", **base}}, CountCapacityTypes(running));
  EXPECT_TRUE(OnDemandHosts(again).empty());
}

}  // namespace
}  // namespace dovetail::controllers::launch
