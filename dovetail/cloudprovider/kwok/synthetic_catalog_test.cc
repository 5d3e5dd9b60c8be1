#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/instance_type_test_util.h"
#include "dovetail/common/test_temp_dir.h"
#include "dovetail/scheduling/requirement.h"
#include "dovetail/scheduling/requirements.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::cloudprovider::kwok {
namespace {

namespace labels = ::dovetail::apis::v1;
using scheduling::Requirement;
using scheduling::Requirements;

Quantity Q(std::string_view text) { return Quantity::Parse(text).value(); }

double OnDemand(const Catalog& catalog, std::string_view name) {
  const InstanceType* type = catalog.Find(name);
  EXPECT_NE(type, nullptr) << name;
  if (type == nullptr) return 0;
  const Offering* od = FindOffering(*type, "on-demand", "test-zone-a");
  EXPECT_NE(od, nullptr) << name;
  return od == nullptr ? 0 : od->price;
}

class SyntheticCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Catalog> catalog = SyntheticCatalog();
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    catalog_ = *std::move(catalog);
  }
  Catalog catalog_;
};

TEST_F(SyntheticCatalogTest, IsDeterministic) {
  EXPECT_EQ(FormatInstanceTypesCsv(GenerateSyntheticCatalogFiles().instance_types),
            FormatInstanceTypesCsv(GenerateSyntheticCatalogFiles().instance_types));
  EXPECT_EQ(FormatOnDemandPricesCsv(GenerateSyntheticCatalogFiles().on_demand_prices),
            FormatOnDemandPricesCsv(GenerateSyntheticCatalogFiles().on_demand_prices));
  absl::StatusOr<Catalog> again = SyntheticCatalog();
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), catalog_.size());
  for (size_t i = 0; i < catalog_.size(); ++i) {
    EXPECT_EQ(again->instance_types()[i]->name(), catalog_[i]->name());
    EXPECT_EQ(again->instance_types()[i]->requirements(), catalog_[i]->requirements());
    for (size_t j = 0; j < catalog_[i]->offerings().size(); ++j) {
      EXPECT_EQ(again->instance_types()[i]->offerings()[j].price,
                catalog_[i]->offerings()[j].price);
    }
  }
}

TEST_F(SyntheticCatalogTest, PinnedShapesAndPrices) {
  // From the header's table and price formula.
  const InstanceType* m = catalog_.Find("m7k.large");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->capacity().at("cpu"), Q("2"));
  EXPECT_EQ(LabelValue(*m, labels::kLabelInstanceMemory), "8192");
  EXPECT_EQ(m->capacity().at("pods"), Q("32"));
  EXPECT_DOUBLE_EQ(OnDemand(catalog_, "m7k.large"), 0.1012);  // 1.15 x (0.004 + 0.044 + 0.040)
  EXPECT_DOUBLE_EQ(OnDemand(catalog_, "c7k.large"), 0.092);   // 1.15 x (0.004 + 0.060 + 0.016)
  EXPECT_DOUBLE_EQ(OnDemand(catalog_, "m7gk.large"), 0.08096);
  EXPECT_DOUBLE_EQ(OnDemand(catalog_, "m7k.16xlarge"), 0.9 * (0.004 + 64 * 0.022 + 256 * 0.005));
  EXPECT_EQ(catalog_.size(), 64u);
}

TEST_F(SyntheticCatalogTest, CoversSizesArchitecturesAndFamilies) {
  std::set<std::string> archs;
  std::set<std::string> categories;
  int64_t min_cpu = 1 << 30;
  int64_t max_cpu = 0;
  for (const InstanceTypePtr& type : catalog_) {
    archs.insert(LabelValue(*type, labels::kLabelArch));
    categories.insert(LabelValue(*type, labels::kLabelInstanceCategory));
    const int64_t cpu = type->capacity().at("cpu").Value();
    min_cpu = std::min(min_cpu, cpu);
    max_cpu = std::max(max_cpu, cpu);
  }
  EXPECT_THAT(archs, ::testing::ElementsAre("amd64", "arm64"));
  EXPECT_THAT(categories, ::testing::ElementsAre("c", "g", "m", "r", "t"));
  EXPECT_EQ(min_cpu, 1);
  EXPECT_GE(max_cpu, 64);
}

TEST_F(SyntheticCatalogTest, DefinesEveryWellKnownLabelAndTheKwokLabels) {
  for (const InstanceTypePtr& type : catalog_) {
    for (std::string_view key : labels::kWellKnownLabels) {
      if (key == labels::kNodePoolLabelKey || key == labels::kLabelNodeClass) continue;
      ASSERT_TRUE(type->requirements().Has(key)) << type->name() << " " << key;
    }
    EXPECT_EQ(LabelValue(*type, kLabelInstanceSize), LabelValue(*type, labels::kLabelInstanceSize));
    EXPECT_EQ(LabelValue(*type, kLabelInstanceFamily),
              LabelValue(*type, labels::kLabelInstanceFamily));
    EXPECT_EQ(LabelValue(*type, kLabelInstanceCpu), LabelValue(*type, labels::kLabelInstanceCpu));
    EXPECT_EQ(LabelValue(*type, kLabelInstanceMemory),
              LabelValue(*type, labels::kLabelInstanceMemory));
    EXPECT_EQ(LabelValue(*type, labels::kLabelTopologyRegion), "test-region");
  }
  const InstanceType* c = catalog_.Find("c7gk.4xlarge");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(LabelValue(*c, kLabelInstanceSize), "4xlarge");
  EXPECT_EQ(LabelValue(*c, kLabelInstanceFamily), "c7gk");
  EXPECT_EQ(LabelValue(*c, kLabelInstanceCpu), "16");
  EXPECT_EQ(LabelValue(*c, kLabelInstanceMemory), "32768");
  EXPECT_EQ(LabelValue(*c, labels::kLabelInstanceGeneration), "7");
  EXPECT_EQ(LabelValue(*c, labels::kLabelArch), "arm64");
}

TEST_F(SyntheticCatalogTest, GpuFamilyHasGpusAndOthersDoNot) {
  int gpu_types = 0;
  for (const InstanceTypePtr& type : catalog_) {
    const bool gpu = LabelValue(*type, labels::kLabelInstanceFamily) == "g7k";
    if (gpu) {
      ++gpu_types;
      ASSERT_EQ(type->capacity().count("nvidia.com/gpu"), 1u) << type->name();
      EXPECT_EQ(LabelValue(*type, labels::kLabelInstanceGpuCount),
                std::to_string(type->capacity().at("nvidia.com/gpu").Value()));
      EXPECT_EQ(LabelValue(*type, labels::kLabelInstanceGpuManufacturer), "nvidia");
    } else {
      EXPECT_EQ(type->capacity().count("nvidia.com/gpu"), 0u) << type->name();
      EXPECT_EQ(LabelValue(*type, labels::kLabelInstanceGpuCount), "<absent>");
      EXPECT_EQ(LabelValue(*type, labels::kLabelInstanceGpuName), "<absent>");
    }
  }
  EXPECT_GE(gpu_types, 4);
  EXPECT_EQ(catalog_.Find("g7k.24xlarge")->capacity().at("nvidia.com/gpu"), Q("8"));
}

TEST_F(SyntheticCatalogTest, ArmIsCheaperThanAmd) {
  for (const InstanceTypePtr& type : catalog_) {
    if (LabelValue(*type, labels::kLabelArch) != "arm64") continue;
    // c7gk.large -> c7k.large
    std::string amd = type->name();
    amd.erase(amd.find("gk."), 1);
    EXPECT_LT(OnDemand(catalog_, type->name()), OnDemand(catalog_, amd)) << type->name();
  }
}

TEST_F(SyntheticCatalogTest, PricesAreNotLinearInSize) {
  // Per-vCPU price falls with size within a family, so two halves cost more than the whole.
  for (const char* family : {"c7k", "m7k", "r7k", "m7gk"}) {
    const double large = OnDemand(catalog_, absl::StrCat(family, ".large"));
    const double xlarge = OnDemand(catalog_, absl::StrCat(family, ".xlarge"));
    const double x16 = OnDemand(catalog_, absl::StrCat(family, ".16xlarge"));
    EXPECT_GT(2 * large, xlarge) << family;
    EXPECT_GT(large / 2, x16 / 64) << family;
  }
  // Compute-optimised is the cheapest per vCPU among the big families, memory-optimised the
  // dearest.
  EXPECT_LT(OnDemand(catalog_, "c7k.4xlarge"), OnDemand(catalog_, "m7k.4xlarge"));
  EXPECT_LT(OnDemand(catalog_, "m7k.4xlarge"), OnDemand(catalog_, "r7k.4xlarge"));
}

TEST_F(SyntheticCatalogTest, SpotIsCheaperInEveryZoneAndVariesAcrossZones) {
  int varies = 0;
  for (const InstanceTypePtr& type : catalog_) {
    EXPECT_EQ(type->offerings().size(), 6u);
    std::set<double> spot;
    for (std::string_view zone : {"test-zone-a", "test-zone-b", "test-zone-c"}) {
      const Offering* od = FindOffering(*type, "on-demand", zone);
      const Offering* sp = FindOffering(*type, "spot", zone);
      ASSERT_NE(od, nullptr);
      ASSERT_NE(sp, nullptr);
      EXPECT_TRUE(od->available);
      EXPECT_TRUE(sp->available);
      EXPECT_LT(sp->price, od->price) << type->name() << " " << zone;
      EXPECT_GT(sp->price, 0);
      spot.insert(sp->price);
    }
    if (spot.size() > 1) ++varies;
  }
  EXPECT_GT(varies, static_cast<int>(catalog_.size()) * 9 / 10);
}

TEST(SyntheticCatalogOptionsTest, ZonesAndRegionAreConfigurable) {
  KwokCatalogOptions options;
  options.region = "us-east-1";
  options.zones = {"us-east-1a", "us-east-1b"};
  absl::StatusOr<Catalog> catalog = SyntheticCatalog(options);
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  const InstanceType& type = *catalog->Find("m7k.xlarge");
  EXPECT_EQ(type.offerings().size(), 4u);
  EXPECT_EQ(LabelValue(type, labels::kLabelTopologyRegion), "us-east-1");
  const Offering* od = FindOffering(type, "on-demand", "us-east-1b");
  ASSERT_NE(od, nullptr);
  EXPECT_TRUE(od->available);
  Requirements zone_b;
  zone_b.Add(Requirement::In(std::string(labels::kLabelTopologyZone), {"us-east-1b"}));
  EXPECT_TRUE(type.Compatible(zone_b));
}

TEST(SyntheticCatalogFilesTest, WrittenCatalogLoadsBackIdentically) {
  const std::string dir = dovetail::testing::ProcessTempDir("kwok_synthetic_catalog");
  ASSERT_TRUE(WriteSyntheticCatalog(dir).ok());
  absl::StatusOr<Catalog> loaded = LoadCatalog(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  absl::StatusOr<Catalog> built = SyntheticCatalog();
  ASSERT_TRUE(built.ok());
  ASSERT_EQ(loaded->size(), built->size());
  for (size_t i = 0; i < built->size(); ++i) {
    const InstanceType& a = *(*loaded)[i];
    const InstanceType& b = *(*built)[i];
    EXPECT_EQ(a.name(), b.name());
    EXPECT_EQ(a.requirements(), b.requirements()) << a.name();
    EXPECT_EQ(a.capacity(), b.capacity()) << a.name();
    EXPECT_EQ(a.Allocatable(), b.Allocatable()) << a.name();
    ASSERT_EQ(a.offerings().size(), b.offerings().size());
    for (size_t j = 0; j < a.offerings().size(); ++j) {
      EXPECT_EQ(a.offerings()[j].price, b.offerings()[j].price) << a.name();
      EXPECT_EQ(a.offerings()[j].requirements, b.offerings()[j].requirements) << a.name();
    }
  }
  // The written allocatable columns are what the loader computes.
  for (const InstanceTypeRow& row : GenerateSyntheticCatalogFiles().instance_types) {
    EXPECT_EQ(built->Find(row.name)->Allocatable().at("cpu").MilliValue(),
              row.allocatable_cpu_millicores);
  }
}

TEST(SyntheticCatalogFilesTest, LoadsTheAwsCatalogWithKwokLabels) {
  absl::StatusOr<Catalog> catalog = LoadCatalog(DOVETAIL_AWS_DATA_DIR);
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  EXPECT_EQ(catalog->size(), 1363u);
  const InstanceType* m5 = catalog->Find("m5.large");
  ASSERT_NE(m5, nullptr);
  EXPECT_EQ(LabelValue(*m5, kLabelInstanceFamily), "m5");
  EXPECT_EQ(LabelValue(*m5, kLabelInstanceMemory), "8192");
  EXPECT_EQ(LabelValue(*m5, labels::kLabelTopologyRegion), "test-region");
  // test-region has no prices in the AWS file: us-east-1's are used.
  const Offering* od = FindOffering(*m5, "on-demand", "test-zone-c");
  ASSERT_NE(od, nullptr);
  EXPECT_TRUE(od->available);
  EXPECT_DOUBLE_EQ(od->price, 0.096);
}

}  // namespace
}  // namespace dovetail::cloudprovider::kwok
