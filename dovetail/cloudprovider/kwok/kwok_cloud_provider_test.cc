#include "dovetail/cloudprovider/kwok/kwok_cloud_provider.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/errors.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "gtest/gtest.h"

namespace dovetail::cloudprovider::kwok {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;

core::NodeSelectorRequirement In(std::string key, std::vector<std::string> values) {
  return {.key = std::move(key), .op = core::SelectorOperator::kIn, .values = std::move(values)};
}

class KwokProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto catalog = SyntheticCatalog();
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    catalog_ = std::move(*catalog);
  }

  v1::NodeClaim Claim(std::vector<core::NodeSelectorRequirement> requirements) const {
    v1::NodeClaim claim;
    claim.metadata.name = "default-x7k2p";
    claim.metadata.uid = "3f1c-uid";
    claim.metadata.labels = {{"karpenter.sh/nodepool", "default"}, {"team", "a"}};
    claim.metadata.annotations = {{"karpenter.sh/nodepool-hash", "123"}};
    claim.spec.requirements = std::move(requirements);
    claim.spec.resources.requests = {{"cpu", *Quantity::Parse("1")},
                                     {"memory", *Quantity::Parse("1Gi")},
                                     {"pods", *Quantity::Parse("2")}};
    return claim;
  }

  // Every (type, offering) a brute-force search would consider for these requirements.
  double CheapestPriceByBruteForce(const v1::NodeClaim& claim) const {
    auto reqs = scheduling::Requirements::FromNodeSelectorRequirements(claim.spec.requirements);
    double best = -1;
    for (const InstanceTypePtr& type : catalog_) {
      if (!type->Compatible(*reqs)) continue;
      bool fits = true;
      for (const auto& [name, q] : claim.spec.resources.requests) {
        auto it = type->Allocatable().find(name);
        if (it == type->Allocatable().end() || it->second < q) fits = false;
      }
      if (!fits) continue;
      for (const Offering& o : type->offerings()) {
        if (!o.available || !RequirementsIntersect(o.requirements, *reqs)) continue;
        if (best < 0 || o.price < best) best = o.price;
      }
    }
    return best;
  }

  Catalog catalog_;
};

TEST_F(KwokProviderTest, ChoosesTheCheapestAvailableOfferingTheRequirementsAllow) {
  v1::NodeClaim claim = Claim({In("node.kubernetes.io/instance-type",
                                  {"m7k.large", "c7k.xlarge", "m7k.2xlarge", "r7gk.large"}),
                               In("karpenter.sh/capacity-type", {"on-demand"}),
                               In("topology.kubernetes.io/zone", {"test-zone-b", "test-zone-c"})});
  absl::StatusOr<Launch> launch = ChooseLaunch(catalog_, claim);
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->offering.capacity_type, "on-demand");
  EXPECT_NE(launch->offering.zone, "test-zone-a");
  EXPECT_DOUBLE_EQ(launch->offering.price, CheapestPriceByBruteForce(claim));
  // From the synthetic price formula: m7k.large 1.15 x (0.004 + 2 x 0.022 + 8 x 0.005) = 0.1012
  // beats r7gk.large 0.8 x 1.15 x (0.004 + 2 x 0.020 + 16 x 0.0045) = 0.1067.
  EXPECT_EQ(launch->instance_type->name(), "m7k.large");
}

TEST_F(KwokProviderTest, SkipsTypesTooSmallForTheRequests) {
  v1::NodeClaim claim =
      Claim({In("karpenter.sh/capacity-type", {"on-demand"}), In("kubernetes.io/arch", {"amd64"})});
  claim.spec.resources.requests["cpu"] = *Quantity::Parse("7");
  absl::StatusOr<Launch> launch = ChooseLaunch(catalog_, claim);
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_GE(launch->instance_type->Allocatable().at("cpu").MilliValue(), 7000);
  EXPECT_DOUBLE_EQ(launch->offering.price, CheapestPriceByBruteForce(claim));
}

TEST_F(KwokProviderTest, NoFittingOfferingIsInsufficientCapacity) {
  v1::NodeClaim claim = Claim({In("node.kubernetes.io/instance-type", {"t7k.medium"})});
  claim.spec.resources.requests["cpu"] = *Quantity::Parse("64");
  EXPECT_TRUE(IsInsufficientCapacity(ChooseLaunch(catalog_, claim).status()));
  v1::NodeClaim unknown_zone = Claim({In("topology.kubernetes.io/zone", {"elsewhere-1a"})});
  EXPECT_TRUE(IsInsufficientCapacity(ChooseLaunch(catalog_, unknown_zone).status()));
}

TEST_F(KwokProviderTest, NodeCarriesWellKnownLabelsKwokMarkersAndTheTypesCapacity) {
  v1::NodeClaim claim = Claim({In("node.kubernetes.io/instance-type", {"m7k.xlarge"}),
                               In("karpenter.sh/capacity-type", {"spot"}),
                               In("topology.kubernetes.io/zone", {"test-zone-c"})});
  claim.spec.taints = {{.key = "team", .value = "a", .effect = core::TaintEffect::kNoSchedule}};
  claim.spec.startup_taints = {{.key = "cni", .effect = core::TaintEffect::kNoSchedule}};
  absl::StatusOr<Launch> launch = ChooseLaunch(catalog_, claim);
  ASSERT_TRUE(launch.ok()) << launch.status();
  const core::Node node = BuildNode(claim, *launch);

  EXPECT_EQ(node.metadata.name, "default-x7k2p");
  EXPECT_EQ(node.spec.provider_id, "kwok://default-x7k2p");
  const core::StringMap& l = node.metadata.labels;
  EXPECT_EQ(l.at("node.kubernetes.io/instance-type"), "m7k.xlarge");
  EXPECT_EQ(l.at("karpenter.sh/capacity-type"), "spot");
  EXPECT_EQ(l.at("topology.kubernetes.io/zone"), "test-zone-c");
  EXPECT_EQ(l.at("topology.kubernetes.io/region"), "test-region");
  EXPECT_EQ(l.at("kubernetes.io/arch"), "amd64");
  EXPECT_EQ(l.at("kubernetes.io/os"), "linux");
  EXPECT_EQ(l.at("kubernetes.io/hostname"), "default-x7k2p");
  EXPECT_EQ(l.at("karpenter.sh/nodepool"), "default");
  EXPECT_EQ(l.at("team"), "a");
  EXPECT_EQ(l.at("karpenter.kwok.sh/instance-family"), "m7k");
  EXPECT_EQ(l.at("karpenter.kwok.sh/instance-size"), "xlarge");
  EXPECT_EQ(l.at("karpenter.kwok.sh/instance-cpu"), "4");
  EXPECT_EQ(l.at("karpenter.k8s.aws/instance-family"), "m7k");
  EXPECT_EQ(l.at("kwok.x-k8s.io/node"), "fake");
  EXPECT_TRUE(absl::StartsWith(l.at("kwok-partition"), "partition-"));
  EXPECT_EQ(l.at("kwok-partition").size(), std::string("partition-a").size());
  EXPECT_FALSE(l.at("eks-node-viewer/instance-price").empty());
  // Every single-valued requirement of the type is a label (and nothing multi-valued leaks in).
  for (const auto& [key, value] : launch->instance_type->requirements().SingleValuedLabels()) {
    EXPECT_EQ(l.at(key), value) << key;
  }
  EXPECT_EQ(node.metadata.annotations.at("kwok.x-k8s.io/node"), "fake");
  EXPECT_EQ(node.metadata.annotations.at("dovetail.sh/nodeclaim-uid"), "3f1c-uid");
  EXPECT_EQ(node.metadata.annotations.at("karpenter.sh/nodepool-hash"), "123");

  ASSERT_EQ(node.spec.taints.size(), 3u);
  EXPECT_EQ(node.spec.taints[0].key, "team");
  EXPECT_EQ(node.spec.taints[1].key, "cni");
  EXPECT_EQ(node.spec.taints[2].key, v1::kUnregisteredTaintKey);
  EXPECT_EQ(node.spec.taints[2].effect, core::TaintEffect::kNoExecute);

  EXPECT_EQ(node.status.capacity, launch->instance_type->capacity());
  EXPECT_EQ(node.status.allocatable, launch->instance_type->Allocatable());
  EXPECT_LT(node.status.allocatable.at("cpu"), node.status.capacity.at("cpu"));
  EXPECT_EQ(node.status.capacity.at("cpu").MilliValue(), 4000);
}

TEST_F(KwokProviderTest, PartitionIsStablePerName) {
  v1::NodeClaim claim = Claim({In("node.kubernetes.io/instance-type", {"m7k.large"})});
  auto launch = ChooseLaunch(catalog_, claim);
  ASSERT_TRUE(launch.ok());
  const std::string first = BuildNode(claim, *launch).metadata.labels.at("kwok-partition");
  EXPECT_EQ(BuildNode(claim, *launch).metadata.labels.at("kwok-partition"), first);
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    claim.metadata.name = "pool-" + std::to_string(i);
    seen.insert(BuildNode(claim, *launch).metadata.labels.at("kwok-partition"));
  }
  EXPECT_EQ(seen.size(), 10u);
}

TEST_F(KwokProviderTest, NodeClaimFromNodeReportsTheMachine) {
  v1::NodeClaim claim = Claim({In("node.kubernetes.io/instance-type", {"c7k.large"})});
  auto launch = ChooseLaunch(catalog_, claim);
  ASSERT_TRUE(launch.ok());
  const v1::NodeClaim machine = NodeClaimFromNode(BuildNode(claim, *launch));
  EXPECT_EQ(machine.status.provider_id, "kwok://default-x7k2p");
  EXPECT_EQ(machine.status.node_name, "default-x7k2p");
  EXPECT_EQ(machine.status.allocatable, launch->instance_type->Allocatable());
  EXPECT_EQ(machine.metadata.labels.at("node.kubernetes.io/instance-type"), "c7k.large");
}

TEST(KwokProviderIdTest, ParsesOnlyKwokIds) {
  EXPECT_EQ(*NodeNameFromProviderId("kwok://n-1"), "n-1");
  EXPECT_TRUE(absl::IsInvalidArgument(NodeNameFromProviderId("aws:///us-east-1a/i-1").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(NodeNameFromProviderId("kwok://").status()));
}

}  // namespace
}  // namespace dovetail::cloudprovider::kwok
