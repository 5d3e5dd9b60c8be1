#include "dovetail/cloudprovider/instance_type.h"

#include <string>
#include <vector>

#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/quantity.h"
#include "dovetail/scheduling/requirement.h"
#include "dovetail/scheduling/requirements.h"
#include "gtest/gtest.h"

namespace dovetail::cloudprovider {
namespace {

namespace labels = ::dovetail::apis::v1;
using scheduling::Requirement;
using scheduling::Requirements;

Quantity Q(std::string_view text) { return Quantity::Parse(text).value(); }

Requirements Reqs(std::vector<Requirement> items) {
  Requirements out;
  for (Requirement& r : items) out.Add(std::move(r));
  return out;
}

Requirement ZoneIn(std::initializer_list<std::string_view> zones) {
  return Requirement::In(std::string(labels::kLabelTopologyZone), zones);
}

Requirement CapacityTypeIn(std::initializer_list<std::string_view> types) {
  return Requirement::In(std::string(labels::kCapacityTypeLabelKey), types);
}

// Two zones x {on-demand, spot}; zone-b spot is cheapest but unavailable.
Offerings TestOfferings() {
  return Offerings({
      Offering::Make("on-demand", "zone-a", "", 0.10, true),
      Offering::Make("spot", "zone-a", "", 0.04, true),
      Offering::Make("on-demand", "zone-b", "", 0.11, true),
      Offering::Make("spot", "zone-b", "", 0.02, false),
  });
}

InstanceType TestType(std::string name, const std::string& arch, Offerings offerings) {
  Requirements reqs = Reqs({
      Requirement::In(std::string(labels::kLabelInstanceType), {name}),
      Requirement::In(std::string(labels::kLabelArch), {arch}),
      ZoneIn({"zone-a", "zone-b"}),
      CapacityTypeIn({"on-demand", "spot"}),
      Requirement::DoesNotExist(std::string(labels::kLabelInstanceGpuCount)),
  });
  ResourceList capacity = {{"cpu", Q("4")}, {"memory", Q("16Gi")}, {"pods", Q("110")}};
  InstanceTypeOverhead overhead;
  overhead.kube_reserved = {{"cpu", Q("80m")}, {"memory", Q("1465Mi")}};
  overhead.system_reserved = {{"memory", Q("100Mi")}};
  overhead.eviction_threshold = {{"memory", Q("100Mi")}, {"ephemeral-storage", Q("2Gi")}};
  return InstanceType(std::move(name), std::move(reqs), std::move(offerings), capacity, overhead);
}

TEST(OfferingTest, MakeSetsCapacityTypeAndZoneRequirements) {
  Offering o = Offering::Make("spot", "us-east-1a", "", 0.5, true);
  EXPECT_EQ(o.capacity_type, "spot");
  EXPECT_EQ(o.zone, "us-east-1a");
  ASSERT_NE(o.requirements.Find(labels::kCapacityTypeLabelKey), nullptr);
  EXPECT_EQ(*o.requirements.Find(labels::kCapacityTypeLabelKey), CapacityTypeIn({"spot"}));
  EXPECT_EQ(*o.requirements.Find(labels::kLabelTopologyZone), ZoneIn({"us-east-1a"}));
  EXPECT_FALSE(o.requirements.Has(labels::kLabelTopologyZoneId));
  EXPECT_EQ(o.requirements.size(), 2u);
  EXPECT_FALSE(o.reservation_capacity.has_value());
}

TEST(OfferingTest, MakeAddsZoneIdWhenGiven) {
  Offering o = Offering::Make("reserved", "us-east-1a", "use1-az1", 0.0, true, 3);
  ASSERT_NE(o.requirements.Find(labels::kLabelTopologyZoneId), nullptr);
  EXPECT_TRUE(o.requirements.Find(labels::kLabelTopologyZoneId)->Has("use1-az1"));
  EXPECT_EQ(o.reservation_capacity, 3);
}

TEST(OfferingsTest, AvailableDropsUnavailableOfferings) {
  Offerings available = TestOfferings().Available();
  ASSERT_EQ(available.size(), 3u);
  for (const Offering& o : available) EXPECT_TRUE(o.available);
}

TEST(OfferingsTest, CompatibleFiltersByZoneAndCapacityType) {
  Offerings offerings = TestOfferings();
  Offerings zone_b = offerings.Compatible(Reqs({ZoneIn({"zone-b"})}));
  ASSERT_EQ(zone_b.size(), 2u);
  EXPECT_EQ(zone_b[0].zone, "zone-b");
  EXPECT_EQ(zone_b[1].zone, "zone-b");

  Offerings spot_a = offerings.Compatible(Reqs({ZoneIn({"zone-a"}), CapacityTypeIn({"spot"})}));
  ASSERT_EQ(spot_a.size(), 1u);
  EXPECT_EQ(spot_a[0].price, 0.04);

  EXPECT_EQ(offerings.Compatible(Requirements()).size(), 4u);
  EXPECT_FALSE(offerings.HasCompatible(Reqs({ZoneIn({"zone-c"})})));
  EXPECT_TRUE(offerings.HasCompatible(Reqs({ZoneIn({"zone-c", "zone-a"})})));
}

TEST(OfferingsTest, CompatibleHonoursNotIn) {
  Offerings not_a = TestOfferings().Compatible(
      Reqs({Requirement::NotIn(std::string(labels::kLabelTopologyZone), {"zone-a"})}));
  ASSERT_EQ(not_a.size(), 2u);
  EXPECT_EQ(not_a[0].zone, "zone-b");
}

TEST(OfferingsTest, CheapestAndMostExpensive) {
  Offerings offerings = TestOfferings();
  ASSERT_NE(offerings.Cheapest(), nullptr);
  EXPECT_EQ(offerings.Cheapest()->price, 0.02);
  EXPECT_EQ(offerings.MostExpensive()->price, 0.11);
  EXPECT_EQ(offerings.Available().Cheapest()->price, 0.04);
  EXPECT_EQ(Offerings().Cheapest(), nullptr);
  EXPECT_EQ(Offerings().MostExpensive(), nullptr);
}

TEST(OfferingsTest, CheapestAvailableCompatibleSkipsUnavailableAndIncompatible) {
  Offerings offerings = TestOfferings();
  const Offering* any = offerings.CheapestAvailableCompatible(Requirements());
  ASSERT_NE(any, nullptr);
  EXPECT_EQ(any->zone, "zone-a");
  EXPECT_EQ(any->capacity_type, "spot");

  const Offering* zone_b = offerings.CheapestAvailableCompatible(Reqs({ZoneIn({"zone-b"})}));
  ASSERT_NE(zone_b, nullptr);
  EXPECT_EQ(zone_b->capacity_type, "on-demand");  // zone-b spot is cheaper but unavailable

  EXPECT_EQ(
      offerings.CheapestAvailableCompatible(Reqs({ZoneIn({"zone-b"}), CapacityTypeIn({"spot"})})),
      nullptr);
}

TEST(RequirementsIntersectTest, FollowsKarpenterMatchingRules) {
  Requirements in_a = Reqs({ZoneIn({"a", "b"})});
  EXPECT_TRUE(RequirementsIntersect(in_a, Reqs({ZoneIn({"b", "c"})})));
  EXPECT_FALSE(RequirementsIntersect(in_a, Reqs({ZoneIn({"c"})})));
  // Undefined keys do not constrain.
  EXPECT_TRUE(RequirementsIntersect(in_a, Reqs({CapacityTypeIn({"spot"})})));
  EXPECT_TRUE(RequirementsIntersect(in_a, Requirements()));
  // DoesNotExist conflicts with In and Exists, but not with another negative requirement.
  const std::string gpu(labels::kLabelInstanceGpuCount);
  Requirements no_gpu = Reqs({Requirement::DoesNotExist(gpu)});
  EXPECT_FALSE(RequirementsIntersect(no_gpu, Reqs({Requirement::In(gpu, {"1"})})));
  EXPECT_FALSE(RequirementsIntersect(no_gpu, Reqs({Requirement::Exists(gpu)})));
  EXPECT_TRUE(RequirementsIntersect(no_gpu, Reqs({Requirement::DoesNotExist(gpu)})));
  EXPECT_TRUE(RequirementsIntersect(no_gpu, Reqs({Requirement::NotIn(gpu, {"1"})})));
  // Symmetric, and agrees with Requirements::Intersects.
  for (const Requirements& other :
       {Reqs({Requirement::In(gpu, {"1"})}), Reqs({Requirement::NotIn(gpu, {"1"})}), in_a}) {
    EXPECT_EQ(RequirementsIntersect(no_gpu, other), RequirementsIntersect(other, no_gpu));
    EXPECT_EQ(RequirementsIntersect(no_gpu, other), no_gpu.Intersects(other).ok());
  }
}

TEST(InstanceTypeTest, AllocatableIsCapacityMinusAllOverhead) {
  InstanceType type = TestType("x.large", "amd64", TestOfferings());
  const ResourceList& allocatable = type.Allocatable();
  EXPECT_EQ(allocatable.at("cpu"), Q("3920m"));
  EXPECT_EQ(allocatable.at("memory"), Q("16Gi") - Q("1465Mi") - Q("100Mi") - Q("100Mi"));
  EXPECT_EQ(allocatable.at("pods"), Q("110"));
  // ephemeral-storage is only in the overhead, so it is not allocatable.
  EXPECT_EQ(allocatable.count("ephemeral-storage"), 0u);
  EXPECT_EQ(type.overhead().Total().at("memory"), Q("1665Mi"));
}

TEST(InstanceTypeTest, AllocatableFloorsAtZero) {
  InstanceTypeOverhead overhead;
  overhead.kube_reserved = {{"memory", Q("2Gi")}};
  InstanceType type("tiny", Requirements(), Offerings(), {{"memory", Q("1Gi")}}, overhead);
  EXPECT_EQ(type.Allocatable().at("memory"), Quantity());
}

TEST(ResourcesFitTest, PositiveRequestsMustFitWhatIsAllocatable) {
  const ResourceList allocatable = {{"cpu", Q("2")}, {"memory", Q("4Gi")}};
  EXPECT_TRUE(ResourcesFit({}, allocatable));
  EXPECT_TRUE(ResourcesFit({{"cpu", Q("2")}, {"memory", Q("1Gi")}}, allocatable));
  EXPECT_FALSE(ResourcesFit({{"cpu", Q("2001m")}}, allocatable));
  EXPECT_FALSE(ResourcesFit({{"nvidia.com/gpu", Q("1")}}, allocatable));
  // Zero and negative requests ask for nothing, whether or not the resource exists.
  EXPECT_TRUE(ResourcesFit({{"nvidia.com/gpu", Q("0")}, {"cpu", Q("-1")}}, allocatable));
}

TEST(InstanceTypeTest, CompatibleNeedsMatchingRequirementsAndAnAvailableOffering) {
  InstanceType type = TestType("x.large", "amd64", TestOfferings());
  EXPECT_TRUE(type.Compatible(Requirements()));
  EXPECT_TRUE(type.Compatible(Reqs({Requirement::In(std::string(labels::kLabelArch), {"amd64"})})));
  EXPECT_FALSE(
      type.Compatible(Reqs({Requirement::In(std::string(labels::kLabelArch), {"arm64"})})));
  // A pod that needs a GPU does not fit a type whose GPU labels do not exist.
  EXPECT_FALSE(
      type.Compatible(Reqs({Requirement::Exists(std::string(labels::kLabelInstanceGpuCount))})));
  // zone-b spot exists but is unavailable.
  EXPECT_FALSE(type.Compatible(Reqs({ZoneIn({"zone-b"}), CapacityTypeIn({"spot"})})));
  EXPECT_TRUE(type.Compatible(Reqs({ZoneIn({"zone-b"})})));
  ASSERT_NE(type.CheapestOffering(Reqs({ZoneIn({"zone-b"})})), nullptr);
  EXPECT_EQ(type.CheapestOffering(Reqs({ZoneIn({"zone-b"})}))->price, 0.11);
}

TEST(InstanceTypeTest, WithOfferingsReplacesOnlyTheOfferings) {
  InstanceType type = TestType("x.large", "amd64", TestOfferings());
  InstanceTypePtr none_available =
      type.WithOfferings(Offerings({Offering::Make("on-demand", "zone-a", "", 0.10, false)}));
  EXPECT_EQ(none_available->name(), "x.large");
  EXPECT_EQ(none_available->requirements(), type.requirements());
  EXPECT_EQ(none_available->Allocatable(), type.Allocatable());
  EXPECT_EQ(none_available->offerings().size(), 1u);
  EXPECT_FALSE(none_available->Compatible(Requirements()));
  EXPECT_TRUE(type.Compatible(Requirements()));
}

}  // namespace
}  // namespace dovetail::cloudprovider
