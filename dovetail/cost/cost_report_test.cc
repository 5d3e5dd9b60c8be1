#include "dovetail/cost/cost_report.h"

#include <map>
#include <tuple>

#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "gtest/gtest.h"

namespace dovetail::cost {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

Machine MakeMachine(std::string name, std::string pool, std::string type, std::string ct,
                    std::string zone) {
  Machine m;
  m.name = std::move(name);
  m.node_claim = pool.empty() ? "" : m.name;
  m.node_pool = std::move(pool);
  m.instance_type = std::move(type);
  m.capacity_type = std::move(ct);
  m.zone = std::move(zone);
  m.created = kNow - absl::Minutes(5);
  m.cpu_allocatable_milli = 2000;
  m.cpu_requested_milli = 500;
  m.memory_allocatable_bytes = 4LL << 30;
  m.memory_requested_bytes = 1LL << 30;
  m.pods = 2;
  return m;
}

PriceLookup Table(std::map<std::tuple<std::string, std::string, std::string>, double> prices) {
  return [prices](std::string_view t, std::string_view z, std::string_view c) {
    auto it = prices.find({std::string(t), std::string(z), std::string(c)});
    return it == prices.end() ? std::nullopt : std::optional<double>(it->second);
  };
}

TEST(ComputeTest, TotalsPerNodePoolAreTheSumOfTheirMachinesAndMonthIs730Hours) {
  auto prices = Table({{{"a.large", "z1", "spot"}, 0.25}, {{"b.large", "z2", "on-demand"}, 0.5}});
  Report r = Compute({MakeMachine("n2", "web", "b.large", "on-demand", "z2"),
                      MakeMachine("n1", "web", "a.large", "spot", "z1"),
                      MakeMachine("n3", "batch", "a.large", "spot", "z1")},
                     prices, kNow);
  ASSERT_EQ(r.machines.size(), 3u);
  EXPECT_EQ(r.machines[0].machine.name, "n3");  // batch < web, then by name
  EXPECT_EQ(r.machines[1].machine.name, "n1");
  EXPECT_EQ(r.machines[2].machine.name, "n2");
  ASSERT_EQ(r.node_pools.size(), 2u);
  EXPECT_EQ(r.node_pools[0].node_pool, "batch");
  EXPECT_DOUBLE_EQ(r.node_pools[0].cost_per_hour, 0.25);
  EXPECT_EQ(r.node_pools[1].node_pool, "web");
  EXPECT_DOUBLE_EQ(r.node_pools[1].cost_per_hour, 0.75);
  EXPECT_DOUBLE_EQ(r.node_pools[1].cost_per_month, 0.75 * 730);
  EXPECT_EQ(r.node_pools[1].nodes, 2);
  EXPECT_EQ(r.node_pools[1].pods, 4);
  EXPECT_DOUBLE_EQ(r.total.cost_per_hour, 1.0);
  EXPECT_DOUBLE_EQ(r.total.cost_per_month, 730.0);
  EXPECT_EQ(r.total.priced_nodes, 3);
  EXPECT_TRUE(r.notes.empty());
  EXPECT_DOUBLE_EQ(*r.machines[0].cpu_utilisation, 0.25);
  EXPECT_DOUBLE_EQ(*r.machines[0].memory_utilisation, 0.25);
  EXPECT_EQ(r.machines[0].age, absl::Minutes(5));
}

TEST(ComputeTest, UnknownPriceIsLeftOutOfTheTotalsWithANote) {
  auto prices = Table({{{"a.large", "z1", "spot"}, 0.25}});
  Report r = Compute({MakeMachine("n1", "web", "a.large", "spot", "z1"),
                      MakeMachine("n2", "web", "mystery.large", "spot", "z1"),
                      MakeMachine("n3", "web", "a.large", "", "z1")},
                     prices, kNow);
  EXPECT_FALSE(r.machines[1].price_per_hour.has_value());
  EXPECT_FALSE(r.machines[2].price_per_hour.has_value());
  EXPECT_DOUBLE_EQ(r.total.cost_per_hour, 0.25);
  EXPECT_EQ(r.total.unpriced_nodes, 2);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("n2, n3"), std::string::npos) << r.notes[0];
  const std::string table = ToTable(r);
  EXPECT_NE(table.find("?"), std::string::npos) << table;
  EXPECT_NE(table.find("note: 2 node(s) with no known price"), std::string::npos) << table;
  EXPECT_TRUE(ToJson(r, "kwok")["nodes"][1]["pricePerHour"].is_null());
}

TEST(ComputeTest, LaunchedClaimsCostAndLaunchingClaimsDoNot) {
  auto prices = Table({{{"a.large", "z1", "spot"}, 0.25}});
  Machine launched = MakeMachine("claim-a", "web", "a.large", "spot", "z1");
  launched.status = MachineStatus::kLaunched;
  Machine launching = MakeMachine("claim-b", "web", "a.large", "spot", "z1");
  launching.status = MachineStatus::kLaunching;
  Report r = Compute({launched, launching}, prices, kNow);
  EXPECT_DOUBLE_EQ(r.total.cost_per_hour, 0.25);
  EXPECT_EQ(r.total.launching_nodes, 1);
  EXPECT_EQ(r.total.unpriced_nodes, 0);
  const std::string table = ToTable(r);
  EXPECT_NE(table.find("claim-a*"), std::string::npos) << table;
  EXPECT_NE(table.find("* launched, Node not registered yet"), std::string::npos) << table;
  EXPECT_EQ(ToJson(r, "kwok")["nodes"][0]["status"], "launched");
}

TEST(ComputeTest, UnmanagedNodesSortLastAndEmptyNodePoolsAreListed) {
  auto prices = Table({{{"a.large", "z1", "spot"}, 0.25}});
  Report r = Compute({MakeMachine("control-plane", "", "a.large", "spot", "z1"),
                      MakeMachine("n1", "web", "a.large", "spot", "z1")},
                     prices, kNow, {.node_pools = {"idle", "web"}});
  ASSERT_EQ(r.node_pools.size(), 3u);
  EXPECT_EQ(r.node_pools[0].node_pool, "idle");
  EXPECT_EQ(r.node_pools[0].nodes, 0);
  EXPECT_EQ(r.node_pools[1].node_pool, "web");
  EXPECT_EQ(r.node_pools[2].node_pool, "");
  EXPECT_EQ(r.machines.back().machine.name, "control-plane");
  EXPECT_NE(ToTable(r).find("control-plane  -  "), std::string::npos) << ToTable(r);
}

TEST(ComputeTest, OnlyNodePoolKeepsOneNodePool) {
  auto prices = Table({{{"a.large", "z1", "spot"}, 0.25}});
  Report r = Compute({MakeMachine("n1", "web", "a.large", "spot", "z1"),
                      MakeMachine("n2", "batch", "a.large", "spot", "z1")},
                     prices, kNow, {.node_pools = {"batch", "web"}, .only_node_pool = "web"});
  ASSERT_EQ(r.machines.size(), 1u);
  ASSERT_EQ(r.node_pools.size(), 1u);
  EXPECT_EQ(r.node_pools[0].node_pool, "web");
  EXPECT_DOUBLE_EQ(r.total.cost_per_hour, 0.25);
}

TEST(ComputeTest, ZeroAllocatableHasNoUtilisation) {
  Machine m = MakeMachine("n1", "web", "a.large", "spot", "z1");
  m.cpu_allocatable_milli = 0;
  Report r = Compute({m}, Table({}), kNow);
  EXPECT_FALSE(r.machines[0].cpu_utilisation.has_value());
  EXPECT_TRUE(ToJson(r, "kwok")["nodes"][0]["cpu"]["utilisation"].is_null());
}

TEST(ComputeTest, JsonHasTheDocumentedShape) {
  auto prices = Table({{{"a.large", "z1", "spot"}, 0.25}});
  Report r = Compute({MakeMachine("n1", "web", "a.large", "spot", "z1")}, prices, kNow);
  nlohmann::json j = ToJson(r, "kwok");
  EXPECT_EQ(j["apiVersion"], "dovetail.sh/v1alpha1");
  EXPECT_EQ(j["kind"], "CostReport");
  EXPECT_EQ(j["hoursPerMonth"], 730);
  EXPECT_EQ(j["cloudProvider"], "kwok");
  const nlohmann::json& n = j["nodes"][0];
  EXPECT_EQ(n["nodePool"], "web");
  EXPECT_EQ(n["instanceType"], "a.large");
  EXPECT_EQ(n["ageSeconds"], 300);
  EXPECT_DOUBLE_EQ(n["pricePerHour"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(n["pricePerMonth"].get<double>(), 182.5);
  EXPECT_EQ(n["cpu"]["requestedMillicores"], 500);
  EXPECT_EQ(n["memory"]["allocatableBytes"], 4LL << 30);
  EXPECT_DOUBLE_EQ(j["nodePools"][0]["costPerMonth"].get<double>(), 182.5);
  EXPECT_EQ(j["total"]["pricedNodes"], 1);
}

TEST(OfferingPriceTest, IsTheCatalogOfferingOfTheTypeZoneAndCapacityType) {
  absl::StatusOr<cloudprovider::Catalog> catalog = cloudprovider::kwok::SyntheticCatalog();
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  const cloudprovider::InstanceType* type = catalog->Find("m7k.large");
  ASSERT_NE(type, nullptr);
  for (const cloudprovider::Offering& o : type->offerings()) {
    EXPECT_EQ(OfferingPrice(*catalog, "m7k.large", o.zone, o.capacity_type), o.price)
        << o.zone << " " << o.capacity_type;
  }
  EXPECT_FALSE(OfferingPrice(*catalog, "m7k.large", "elsewhere-1a", "spot").has_value());
  EXPECT_FALSE(OfferingPrice(*catalog, "nope.large", "test-zone-a", "spot").has_value());
  EXPECT_FALSE(OfferingPrice(*catalog, "m7k.large", "test-zone-a", "").has_value());
}

TEST(FormatAgeTest, UsesTheLargestWholeUnit) {
  EXPECT_EQ(FormatAge(absl::Seconds(45)), "45s");
  EXPECT_EQ(FormatAge(absl::Minutes(12)), "12m");
  EXPECT_EQ(FormatAge(absl::Hours(3)), "3h");
  EXPECT_EQ(FormatAge(absl::Hours(24 * 5)), "5d");
}

}  // namespace
}  // namespace dovetail::cost
