#include "dovetail/cloudprovider/aws_catalog.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/instance_type_test_util.h"
#include "dovetail/common/test_temp_dir.h"
#include "dovetail/scheduling/requirement.h"
#include "dovetail/scheduling/requirements.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::cloudprovider {
namespace {

namespace labels = ::dovetail::apis::v1;
using scheduling::Requirement;
using scheduling::Requirements;
using ::testing::HasSubstr;

constexpr int64_t kMiB = int64_t{1} << 20;

std::string AwsDataDir() { return DOVETAIL_AWS_DATA_DIR; }

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

Quantity Q(std::string_view text) { return Quantity::Parse(text).value(); }

// The real catalog, loaded once for the whole suite (in SetUp rather than SetUpTestSuite so that
// missing data fails every test instead of skipping them).
class AwsCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (catalog_ != nullptr) return;
    absl::StatusOr<CatalogFiles> files = ReadCatalogDirectory(AwsDataDir());
    ASSERT_TRUE(files.ok()) << files.status();
    absl::StatusOr<Catalog> catalog = BuildCatalog(*files, CatalogOptions());
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    files_ = new CatalogFiles(*std::move(files));
    catalog_ = new Catalog(*std::move(catalog));
  }
  static void TearDownTestSuite() {
    delete catalog_;
    delete files_;
    catalog_ = nullptr;
    files_ = nullptr;
  }

  static const InstanceType& Get(std::string_view name) {
    const InstanceType* type = catalog_->Find(name);
    EXPECT_NE(type, nullptr) << name;
    return *type;
  }

  static CatalogFiles* files_;
  static Catalog* catalog_;
};

CatalogFiles* AwsCatalogTest::files_ = nullptr;
Catalog* AwsCatalogTest::catalog_ = nullptr;

TEST_F(AwsCatalogTest, LoadsEveryInstanceType) {
  EXPECT_EQ(files_->instance_types.size(), 1363u);
  EXPECT_EQ(catalog_->size(), 1363u);
  EXPECT_EQ(files_->on_demand_prices.size(), 2686u);
  EXPECT_FALSE(files_->spot_prices.has_value());
}

// The CSV's allocatable columns are upstream's own computation for AL2023; ours must agree on
// every row.
TEST_F(AwsCatalogTest, AllocatableMatchesUpstreamOnEveryRow) {
  int matched = 0;
  std::vector<std::string> mismatches;
  for (const InstanceTypeRow& row : files_->instance_types) {
    const InstanceType& type = Get(row.name);
    const ResourceList& allocatable = type.Allocatable();
    const int64_t cpu_milli = allocatable.at("cpu").MilliValue();
    const int64_t memory_bytes = allocatable.at("memory").Value();
    const int64_t storage_bytes = allocatable.at("ephemeral-storage").Value();
    if (cpu_milli == row.allocatable_cpu_millicores &&
        memory_bytes == row.allocatable_memory_mib * kMiB &&
        storage_bytes == row.allocatable_ephemeral_storage_gib * 1024 * kMiB) {
      ++matched;
    } else if (mismatches.size() < 10) {
      mismatches.push_back(absl::StrCat(
          row.name, ": cpu ", cpu_milli, "m vs ", row.allocatable_cpu_millicores, "m, memory ",
          memory_bytes / kMiB, "Mi vs ", row.allocatable_memory_mib, "Mi"));
    }
  }
  EXPECT_EQ(matched, 1363) << ::testing::PrintToString(mismatches);
}

TEST_F(AwsCatalogTest, FillAllocatableColumnsReproducesTheFile) {
  for (InstanceTypeRow row : files_->instance_types) {
    const InstanceTypeRow original = row;
    row.allocatable_cpu_millicores = row.allocatable_memory_mib = 0;
    row.allocatable_ephemeral_storage_gib = 0;
    FillAllocatableColumns(row);
    ASSERT_EQ(row, original) << row.name;
  }
}

TEST_F(AwsCatalogTest, M5LargeShapeAndPrice) {
  const InstanceType& m5 = Get("m5.large");
  EXPECT_EQ(m5.capacity().at("cpu"), Q("2"));
  EXPECT_EQ(LabelValue(m5, labels::kLabelInstanceCpu), "2");
  EXPECT_EQ(LabelValue(m5, labels::kLabelInstanceMemory), "8192");
  // 8192 - ceil(0.075 x 8192) = 8192 - 615.
  EXPECT_EQ(m5.capacity().at("memory"), Q("7577Mi"));
  EXPECT_EQ(m5.capacity().at("pods"), Q("29"));
  EXPECT_EQ(m5.capacity().at("ephemeral-storage"), Q("20Gi"));
  EXPECT_EQ(m5.capacity().at("vpc.amazonaws.com/pod-eni"), Q("9"));
  EXPECT_EQ(m5.capacity().count("nvidia.com/gpu"), 0u);
  EXPECT_EQ(m5.overhead().kube_reserved.at("cpu"), Q("70m"));
  EXPECT_EQ(m5.overhead().kube_reserved.at("memory"), Q("574Mi"));  // 11 x 29 + 255
  EXPECT_EQ(m5.overhead().kube_reserved.at("ephemeral-storage"), Q("1Gi"));
  EXPECT_EQ(m5.overhead().eviction_threshold.at("memory"), Q("100Mi"));
  EXPECT_EQ(m5.overhead().eviction_threshold.at("ephemeral-storage"), Q("2Gi"));
  EXPECT_TRUE(m5.overhead().system_reserved.empty());
  EXPECT_EQ(m5.Allocatable().at("memory"), Q("6903Mi"));
  for (std::string_view zone : {"us-east-1a", "us-east-1b", "us-east-1c"}) {
    const Offering* od = FindOffering(m5, "on-demand", zone);
    ASSERT_NE(od, nullptr) << zone;
    EXPECT_TRUE(od->available);
    EXPECT_DOUBLE_EQ(od->price, 0.096);
  }
  EXPECT_EQ(m5.offerings().size(), 6u);
}

TEST_F(AwsCatalogTest, C5LargePrice) {
  const Offering* od = FindOffering(Get("c5.large"), "on-demand", "us-east-1a");
  ASSERT_NE(od, nullptr);
  EXPECT_DOUBLE_EQ(od->price, 0.085);
}

TEST_F(AwsCatalogTest, Arm64CapacityLosesTheCmaReservation) {
  // a1.medium: 2048 MiB - 64 = 1984, minus ceil(148.8) = 1835 MiB.
  EXPECT_EQ(Get("a1.medium").capacity().at("memory"), Q("1835Mi"));
  EXPECT_EQ(LabelValue(Get("a1.medium"), labels::kLabelArch), "arm64");
  EXPECT_EQ(MemoryCapacityMib(2048, "arm64"), 1835);
  EXPECT_EQ(MemoryCapacityMib(2048, "amd64"), 1894);
}

// VM_MEMORY_OVERHEAD_PERCENT: the overhead is a parameter; 0 leaves the whole machine.
TEST_F(AwsCatalogTest, VmMemoryOverheadIsASetting) {
  // m5.large: 8192 MiB; 5% is 409.6 -> 410 MiB.
  EXPECT_EQ(MemoryCapacityMib(8192, "amd64", 0.05), 7782);
  EXPECT_EQ(MemoryCapacityMib(8192, "amd64", 0), 8192);
  EXPECT_EQ(MemoryCapacityMib(8192, "amd64"), 8192 - 615);  // ceil(614.4)
  CatalogOptions options;
  options.capacity.vm_memory_overhead_percent = 0.05;
  absl::StatusOr<Catalog> catalog = BuildCatalog(*files_, options);
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  EXPECT_EQ(catalog->Find("m5.large")->capacity().at("memory"), Q("7782Mi"));
  // Kube-reserved does not depend on it.
  EXPECT_EQ(catalog->Find("m5.large")->overhead().kube_reserved.at("memory"),
            Get("m5.large").overhead().kube_reserved.at("memory"));
}

// RESERVED_ENIS: rows with ENI data (from DescribeInstanceTypes) lose (IPv4 per ENI - 1) pods
// per reserved ENI; kube-reserved memory keeps the unreserved count, as upstream.
TEST(AwsFormulaTest, ReservedEnisLowerThePodsOfRowsWithEniData) {
  InstanceTypeRow m5;  // m5.large: 3 ENIs x 10 IPv4 addresses, 3 x 9 + 2 = 29 pods
  m5.name = "m5.large";
  m5.vcpu = 2;
  m5.memory_mib = 8192;
  m5.arch = "amd64";
  m5.max_pods = 29;
  m5.enis = 3;
  m5.ipv4_per_eni = 10;
  EXPECT_EQ(PodsCapacity(m5, 0), 29);
  EXPECT_EQ(PodsCapacity(m5, 1), 20);
  EXPECT_EQ(PodsCapacity(m5, 2), 11);
  EXPECT_EQ(PodsCapacity(m5, 3), 0);  // no ENI left: no pods, as upstream
  EXPECT_EQ(PodsCapacity(m5, 7), 0);
  const ResourceList capacity = ComputeCapacity(m5, {.reserved_enis = 1});
  EXPECT_EQ(capacity.at("pods"), Q("20"));
  EXPECT_EQ(ComputeOverhead(m5, capacity).kube_reserved.at("memory"), Q("574Mi"));  // 11x29+255
  // Without ENI data (a row read from a file) the file's max pods stand.
  InstanceTypeRow from_file = m5;
  from_file.enis = from_file.ipv4_per_eni = 0;
  EXPECT_EQ(PodsCapacity(from_file, 1), 29);
}

TEST(AwsFormulaTest, KubeReservedCpuTiers) {
  EXPECT_EQ(KubeReservedCpuMillicores(0), 0);
  EXPECT_EQ(KubeReservedCpuMillicores(1), 60);
  EXPECT_EQ(KubeReservedCpuMillicores(2), 70);
  EXPECT_EQ(KubeReservedCpuMillicores(3), 75);
  EXPECT_EQ(KubeReservedCpuMillicores(4), 80);
  EXPECT_EQ(KubeReservedCpuMillicores(5), 82);  // 82.5m rounded down
  EXPECT_EQ(KubeReservedCpuMillicores(8), 90);
  EXPECT_EQ(KubeReservedCpuMillicores(96), 310);
}

TEST_F(AwsCatalogTest, SingleValuedLabels) {
  const InstanceType& m5 = Get("m5.large");
  EXPECT_EQ(LabelValue(m5, labels::kLabelInstanceType), "m5.large");
  EXPECT_EQ(LabelValue(m5, labels::kLabelArch), "amd64");
  EXPECT_EQ(LabelValue(m5, labels::kLabelOS), "linux");
  EXPECT_EQ(LabelValue(m5, labels::kLabelTopologyRegion), "us-east-1");
  EXPECT_EQ(LabelValue(m5, labels::kLabelInstanceCategory), "m");
  EXPECT_EQ(LabelValue(m5, labels::kLabelInstanceFamily), "m5");
  EXPECT_EQ(LabelValue(m5, labels::kLabelInstanceGeneration), "5");
  EXPECT_EQ(LabelValue(m5, labels::kLabelInstanceSize), "large");
  EXPECT_EQ(LabelValue(m5, labels::kLabelInstanceCpuManufacturer), "intel");
  EXPECT_EQ(LabelValue(m5, labels::kLabelInstanceCpuSustainedClockSpeedMhz), "3100");
  EXPECT_EQ(LabelValue(m5, labels::kLabelInstanceHypervisor), "nitro");
  EXPECT_EQ(LabelValue(m5, labels::kLabelInstanceEncryptionInTransitSupported), "false");
  EXPECT_EQ(LabelValue(m5, labels::kLabelInstanceCapabilityFlex), "false");
  EXPECT_EQ(LabelValue(m5, labels::kLabelInstanceNetworkBandwidth), "750");
  EXPECT_EQ(LabelValue(m5, labels::kLabelInstanceEbsBandwidth), "4750");
  EXPECT_EQ(LabelValue(m5, labels::kLabelInstanceLocalNvme), "<absent>");
  EXPECT_EQ(LabelValue(m5, labels::kLabelWindowsBuild), "<absent>");
  EXPECT_EQ(LabelValue(m5, labels::kLabelTopologyZoneId), "<absent>");
  EXPECT_EQ(LabelValue(m5, labels::kLabelCapacityReservationId), "<absent>");
  EXPECT_EQ(LabelValue(Get("m7i-flex.large"), labels::kLabelInstanceCapabilityFlex), "true");
  EXPECT_EQ(LabelValue(Get("m5d.large"), labels::kLabelInstanceLocalNvme), "75");
  // Bare metal has no hypervisor; old xen types have no network bandwidth label.
  EXPECT_EQ(LabelValue(Get("m5.metal"), labels::kLabelInstanceHypervisor), "<absent>");
  EXPECT_EQ(LabelValue(Get("c3.large"), labels::kLabelInstanceNetworkBandwidth), "<absent>");
  EXPECT_EQ(LabelValue(Get("c1.medium"), labels::kLabelInstanceCpuSustainedClockSpeedMhz),
            "<absent>");
}

TEST_F(AwsCatalogTest, MultiValuedLabelsListTheOfferedValues) {
  const InstanceType& m5 = Get("m5.large");
  const Requirement* zone = m5.requirements().Find(labels::kLabelTopologyZone);
  ASSERT_NE(zone, nullptr);
  EXPECT_THAT(zone->values(), ::testing::ElementsAre("us-east-1a", "us-east-1b", "us-east-1c"));
  const Requirement* capacity_type = m5.requirements().Find(labels::kCapacityTypeLabelKey);
  ASSERT_NE(capacity_type, nullptr);
  EXPECT_THAT(capacity_type->values(), ::testing::ElementsAre("on-demand", "spot"));
  const Requirement* tenancy = m5.requirements().Find(labels::kLabelInstanceTenancy);
  ASSERT_NE(tenancy, nullptr);
  EXPECT_THAT(tenancy->values(), ::testing::ElementsAre("dedicated", "default"));
}

TEST_F(AwsCatalogTest, EveryTypeDefinesEveryWellKnownLabel) {
  for (const InstanceTypePtr& type : *catalog_) {
    for (std::string_view key : labels::kWellKnownLabels) {
      // Set by the NodePool and the NodeClass, not by the instance type.
      if (key == labels::kNodePoolLabelKey || key == labels::kLabelNodeClass) continue;
      ASSERT_TRUE(type->requirements().Has(key)) << type->name() << " " << key;
    }
  }
}

TEST_F(AwsCatalogTest, GpuLabelsDoNotExistOnNonGpuTypes) {
  const std::string_view gpu_keys[] = {
      labels::kLabelInstanceGpuName,         labels::kLabelInstanceGpuManufacturer,
      labels::kLabelInstanceGpuCount,        labels::kLabelInstanceGpuMemory,
      labels::kLabelInstanceAcceleratorName, labels::kLabelInstanceAcceleratorManufacturer,
      labels::kLabelInstanceAcceleratorCount};
  for (std::string_view name : {"m5.large", "c5.large", "a1.medium", "t3.micro"}) {
    for (std::string_view key : gpu_keys) {
      EXPECT_EQ(LabelValue(Get(name), key), "<absent>") << name << " " << key;
    }
  }
  // A pod that needs any GPU does not fit.
  Requirements needs_gpu;
  needs_gpu.Add(Requirement::Exists(std::string(labels::kLabelInstanceGpuCount)));
  EXPECT_FALSE(Get("m5.large").Compatible(needs_gpu));
  EXPECT_TRUE(Get("p5.48xlarge").Compatible(needs_gpu));
  // Every row without a GPU name has the GPU name label absent.
  for (const InstanceTypeRow& row : files_->instance_types) {
    if (row.gpu_name.empty()) {
      ASSERT_EQ(LabelValue(Get(row.name), labels::kLabelInstanceGpuName), "<absent>") << row.name;
    }
  }
}

TEST_F(AwsCatalogTest, GpuAndAcceleratorTypes) {
  const InstanceType& p5 = Get("p5.48xlarge");
  EXPECT_EQ(LabelValue(p5, labels::kLabelInstanceGpuName), "h100");
  EXPECT_EQ(LabelValue(p5, labels::kLabelInstanceGpuManufacturer), "nvidia");
  EXPECT_EQ(LabelValue(p5, labels::kLabelInstanceGpuCount), "8");
  EXPECT_EQ(LabelValue(p5, labels::kLabelInstanceGpuMemory), "81920");
  EXPECT_EQ(p5.capacity().at("nvidia.com/gpu"), Q("8"));
  EXPECT_EQ(p5.capacity().at("vpc.amazonaws.com/efa"), Q("32"));
  // Fractional GPU: a name but no count.
  const InstanceType& g6f = Get("g6f.large");
  EXPECT_EQ(LabelValue(g6f, labels::kLabelInstanceGpuName), "l4");
  EXPECT_EQ(LabelValue(g6f, labels::kLabelInstanceGpuCount), "<absent>");
  const InstanceType& inf2 = Get("inf2.xlarge");
  EXPECT_EQ(LabelValue(inf2, labels::kLabelInstanceAcceleratorName), "inferentia2");
  EXPECT_EQ(LabelValue(inf2, labels::kLabelInstanceAcceleratorCount), "1");
  EXPECT_EQ(LabelValue(inf2, labels::kLabelInstanceGpuName), "<absent>");
  EXPECT_EQ(inf2.capacity().at("aws.amazon.com/neuron"), Q("1"));
  EXPECT_EQ(inf2.capacity().at("aws.amazon.com/neuroncore"), Q("2"));
  EXPECT_EQ(Get("g4ad.xlarge").capacity().at("amd.com/gpu"), Q("1"));
}

TEST_F(AwsCatalogTest, SpotIsCheaperThanOnDemandInEveryZone) {
  int priced = 0;
  int varies_across_zones = 0;
  for (const InstanceTypePtr& type : *catalog_) {
    std::set<double> spot_prices;
    for (std::string_view zone : {"us-east-1a", "us-east-1b", "us-east-1c"}) {
      const Offering* od = FindOffering(*type, "on-demand", zone);
      const Offering* spot = FindOffering(*type, "spot", zone);
      ASSERT_NE(od, nullptr);
      ASSERT_NE(spot, nullptr);
      ASSERT_EQ(od->available, spot->available) << type->name();
      if (!od->available) continue;
      EXPECT_LT(spot->price, od->price) << type->name() << " " << zone;
      EXPECT_GE(spot->price, 0.3 * od->price - 1e-6) << type->name() << " " << zone;
      EXPECT_LE(spot->price, 0.7 * od->price + 1e-6) << type->name() << " " << zone;
      spot_prices.insert(spot->price);
    }
    if (!spot_prices.empty()) ++priced;
    if (spot_prices.size() > 1) ++varies_across_zones;
  }
  EXPECT_EQ(priced, 1363 - 18);
  EXPECT_GT(varies_across_zones, priced * 9 / 10);
}

TEST(SpotModelTest, IsTheDocumentedHash) {
  // Values computed independently from the header's definition (FNV-1a of "<type>|<zone>").
  EXPECT_DOUBLE_EQ(SpotPriceFactor("m5.large", "us-east-1a"), 0.3 + 0.4 * 585 / 10000.0);
  EXPECT_DOUBLE_EQ(SpotPriceFactor("m5.large", "us-east-1b"), 0.3 + 0.4 * 6459 / 10000.0);
  EXPECT_DOUBLE_EQ(ModelSpotPrice("m5.large", "us-east-1a", 0.096), 0.031046);
  EXPECT_DOUBLE_EQ(ModelSpotPrice("m5.large", "us-east-1b", 0.096), 0.053603);
  EXPECT_DOUBLE_EQ(ModelSpotPrice("c5.large", "us-east-1c", 0.096), 0.044348);
}

TEST_F(AwsCatalogTest, TypesWithoutAPriceHaveNoAvailableOffering) {
  for (std::string_view name : {"hpc7a.96xlarge", "p5e.48xlarge", "dl2q.24xlarge"}) {
    const InstanceType& type = Get(name);
    EXPECT_EQ(type.offerings().size(), 6u);
    EXPECT_TRUE(type.offerings().Available().empty()) << name;
    EXPECT_FALSE(type.Compatible(Requirements())) << name;
  }
}

TEST_F(AwsCatalogTest, RegionWithoutPricesFallsBackToUsEast1) {
  CatalogOptions options;
  options.region = "ap-northeast-2";
  absl::StatusOr<Catalog> seoul = BuildCatalog(*files_, options);
  ASSERT_TRUE(seoul.ok()) << seoul.status();
  const InstanceType* m5 = seoul->Find("m5.large");
  ASSERT_NE(m5, nullptr);
  EXPECT_EQ(LabelValue(*m5, labels::kLabelTopologyRegion), "ap-northeast-2");
  const Offering* od = FindOffering(*m5, "on-demand", "ap-northeast-2b");
  ASSERT_NE(od, nullptr);
  EXPECT_TRUE(od->available);
  EXPECT_DOUBLE_EQ(od->price, 0.096);
  const Offering* spot = FindOffering(*m5, "spot", "ap-northeast-2b");
  ASSERT_NE(spot, nullptr);
  EXPECT_LT(spot->price, 0.096);
}

TEST_F(AwsCatalogTest, RegionWithPricesUsesThem) {
  CatalogOptions options;
  options.region = "us-gov-west-1";
  absl::StatusOr<Catalog> gov = BuildCatalog(*files_, options);
  ASSERT_TRUE(gov.ok()) << gov.status();
  double gov_price = 0;
  for (const OnDemandPriceRow& p : files_->on_demand_prices) {
    if (p.region == "us-gov-west-1" && p.instance_type == "m5.large") gov_price = p.usd_per_hour;
  }
  ASSERT_GT(gov_price, 0);
  EXPECT_NE(gov_price, 0.096);
  const Offering* od = FindOffering(*gov->Find("m5.large"), "on-demand", "us-gov-west-1a");
  ASSERT_NE(od, nullptr);
  EXPECT_DOUBLE_EQ(od->price, gov_price);
  // A type priced in us-east-1 but not in this region is not available here (no per-type
  // fallback).
  int unpriced = 0;
  for (const InstanceTypePtr& type : *gov) {
    if (type->offerings().Available().empty()) ++unpriced;
  }
  EXPECT_GT(unpriced, 500);
}

TEST_F(AwsCatalogTest, ZonesAndZoneIdsAreConfigurable) {
  CatalogOptions options;
  options.zones = {"us-east-1d", "us-east-1f"};
  options.zone_ids = {{"us-east-1d", "use1-az4"}, {"us-east-1f", "use1-az5"}};
  absl::StatusOr<Catalog> catalog = BuildCatalog(*files_, options);
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  const InstanceType* m5 = catalog->Find("m5.large");
  ASSERT_NE(m5, nullptr);
  EXPECT_EQ(m5->offerings().size(), 4u);
  const Requirement* ids = m5->requirements().Find(labels::kLabelTopologyZoneId);
  ASSERT_NE(ids, nullptr);
  EXPECT_THAT(ids->values(), ::testing::ElementsAre("use1-az4", "use1-az5"));
  const Offering* od = FindOffering(*m5, "on-demand", "us-east-1f");
  ASSERT_NE(od, nullptr);
  EXPECT_TRUE(od->requirements.Find(labels::kLabelTopologyZoneId)->Has("use1-az5"))
      << od->requirements.String();

  options.zones = {"us-east-1d", "us-east-1d"};
  EXPECT_EQ(BuildCatalog(*files_, options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(AwsCatalogTest, FormattingReproducesTheFiles) {
  EXPECT_EQ(FormatInstanceTypesCsv(files_->instance_types),
            ReadText(AwsDataDir() + "/instance-types.csv"));
  EXPECT_EQ(FormatOnDemandPricesCsv(files_->on_demand_prices),
            ReadText(AwsDataDir() + "/on-demand-prices.csv"));
}

TEST_F(AwsCatalogTest, SpotFileOverridesTheModel) {
  CatalogFiles files = *files_;
  files.spot_prices = std::vector<SpotPriceRow>{
      {"us-east-1", "us-east-1a", "m5.large", 0.0412},
      {"us-west-2", "us-west-2a", "m5.large", 0.0100},
  };
  absl::StatusOr<Catalog> catalog = BuildCatalog(files, CatalogOptions());
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  const InstanceType& m5 = *catalog->Find("m5.large");
  const Offering* spot_a = FindOffering(m5, "spot", "us-east-1a");
  ASSERT_NE(spot_a, nullptr);
  EXPECT_TRUE(spot_a->available);
  EXPECT_DOUBLE_EQ(spot_a->price, 0.0412);
  // No spot price for this zone in the file: unavailable.
  EXPECT_FALSE(FindOffering(m5, "spot", "us-east-1b")->available);
  EXPECT_TRUE(FindOffering(m5, "on-demand", "us-east-1b")->available);
  EXPECT_FALSE(FindOffering(*catalog->Find("c5.large"), "spot", "us-east-1a")->available);
}

TEST(AwsCatalogFilesTest, WritesAndReadsADirectory) {
  const std::string dir = dovetail::testing::ProcessTempDir("aws_catalog_roundtrip");
  std::filesystem::remove(dir + "/spot-prices.csv");
  CatalogFiles files;
  InstanceTypeRow row;
  row.name = "x1k.large";
  row.category = "x";
  row.family = "x1k";
  row.generation = 1;
  row.size = "large";
  row.arch = "arm64";
  row.vcpu = 2;
  row.memory_mib = 4096;
  row.max_pods = 20;
  row.network_bandwidth_mbps = 0;  // known and zero, distinct from unknown
  FillAllocatableColumns(row);
  files.instance_types = {row};
  files.on_demand_prices = {{"r1", "x1k.large", 0.125}};
  ASSERT_TRUE(WriteCatalogDirectory(dir, files).ok());
  absl::StatusOr<CatalogFiles> read = ReadCatalogDirectory(dir);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->instance_types, files.instance_types);
  EXPECT_EQ(read->on_demand_prices, files.on_demand_prices);
  EXPECT_FALSE(read->spot_prices.has_value());

  files.spot_prices = std::vector<SpotPriceRow>{{"r1", "r1a", "x1k.large", 0.05}};
  ASSERT_TRUE(WriteCatalogDirectory(dir, files).ok());
  read = ReadCatalogDirectory(dir);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->spot_prices, files.spot_prices);
}

TEST_F(AwsCatalogTest, OfferingsFileGivesEachTypeItsZonesAndTheDefaults) {
  CatalogFiles files = *files_;
  files.on_demand_prices.push_back({"eu-west-1", "m5.large", 0.107});
  files.on_demand_prices.push_back({"eu-west-1", "c5.large", 0.096});
  files.offerings = std::vector<OfferingRow>{
      {"eu-west-1", "eu-west-1b", "euw1-az1", "m5.large"},
      {"eu-west-1", "eu-west-1a", "euw1-az3", "m5.large"},
      {"eu-west-1", "eu-west-1b", "euw1-az1", "c5.large"},
  };
  EXPECT_EQ(OfferingsRegion(files), "eu-west-1");
  CatalogOptions options;
  options.region = "eu-west-1";
  absl::StatusOr<Catalog> catalog = BuildCatalog(files, options);
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  // Types without a row are left out.
  EXPECT_EQ(catalog->size(), 2u);
  const InstanceType* m5 = catalog->Find("m5.large");
  ASSERT_NE(m5, nullptr);
  EXPECT_THAT(m5->requirements().Find(labels::kLabelTopologyZone)->values(),
              ::testing::UnorderedElementsAre("eu-west-1a", "eu-west-1b"));
  EXPECT_THAT(m5->requirements().Find(labels::kLabelTopologyZoneId)->values(),
              ::testing::UnorderedElementsAre("euw1-az3", "euw1-az1"));
  EXPECT_EQ(m5->offerings().size(), 4u);
  const InstanceType* c5 = catalog->Find("c5.large");
  ASSERT_NE(c5, nullptr);
  EXPECT_EQ(LabelValue(*c5, labels::kLabelTopologyZone), "eu-west-1b");
  EXPECT_EQ(c5->offerings().size(), 2u);
  ASSERT_NE(FindOffering(*c5, "on-demand", "eu-west-1b"), nullptr);
  EXPECT_TRUE(FindOffering(*c5, "on-demand", "eu-west-1b")->available);
  EXPECT_EQ(FindOffering(*c5, "on-demand", "eu-west-1a"), nullptr);

  // Explicit zones narrow the file's.
  options.zones = {"eu-west-1a"};
  catalog = BuildCatalog(files, options);
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  EXPECT_EQ(catalog->size(), 1u);
  EXPECT_NE(catalog->Find("m5.large"), nullptr);

  // Rows of another region: every type in every zone, as without the file.
  catalog = BuildCatalog(files, CatalogOptions());
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  EXPECT_EQ(catalog->size(), catalog_->size());
}

TEST(AwsCatalogFilesTest, OfferingsFileRoundTripsAndIsOptional) {
  const std::string dir = dovetail::testing::ProcessTempDir("aws_catalog_offerings");
  std::filesystem::remove(dir + "/offerings.csv");
  CatalogFiles files;
  files.on_demand_prices = {{"r1", "x1k.large", 0.125}};
  ASSERT_TRUE(WriteCatalogDirectory(dir, files).ok());
  absl::StatusOr<CatalogFiles> read = ReadCatalogDirectory(dir);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->offerings.has_value());
  EXPECT_EQ(OfferingsRegion(*read), "");

  files.offerings = std::vector<OfferingRow>{{"r1", "r1a", "r1-az1", "x1k.large"},
                                             {"r1", "r1b", "", "x1k.large"}};
  ASSERT_TRUE(WriteCatalogDirectory(dir, files).ok());
  read = ReadCatalogDirectory(dir);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->offerings, files.offerings);
}

TEST(AwsCatalogFilesTest, MissingDirectoryIsNotFound) {
  EXPECT_EQ(ReadCatalogDirectory("/nonexistent/dovetail-catalog").status().code(),
            absl::StatusCode::kNotFound);
}

// ---- malformed input ---------------------------------------------------------------------------

// A valid instance-types.csv with one row (m5.large), from the real file's header.
std::string ValidTypesCsv() {
  return absl::StrCat(FormatInstanceTypesCsv({}),
                      "m5.large,m,m5,5,large,amd64,linux,intel,3100,false,2,8192,,,0,0,,,0,0,750,"
                      "4750,nitro,false,no,29,1930,6903,17,9,0,0,0,0,0\n");
}

// ValidTypesCsv() with the first `from` replaced by `to`.
std::string ValidTypesCsvWith(std::string_view from, std::string_view to) {
  std::string text = ValidTypesCsv();
  text.replace(text.find(from), from.size(), to);
  return text;
}

TEST(AwsCatalogParseTest, AcceptsValidInputWithCrlfAndNoFinalNewline) {
  std::string text = absl::StrReplaceAll(ValidTypesCsv(), {{"\n", "\r\n"}});
  text.resize(text.size() - 2);
  absl::StatusOr<std::vector<InstanceTypeRow>> rows = ParseInstanceTypesCsv(text, "t.csv");
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].name, "m5.large");
  EXPECT_EQ((*rows)[0].ebs_bandwidth_mbps, 4750);
  EXPECT_EQ((*rows)[0].gpu_name, "");
}

TEST(AwsCatalogParseTest, AcceptsColumnsInAnyOrder) {
  absl::StatusOr<std::vector<OnDemandPriceRow>> rows =
      ParseOnDemandPricesCsv("usd_per_hour,region,instance_type\n0.5,r,t.large\n", "p.csv");
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ((*rows)[0], (OnDemandPriceRow{"r", "t.large", 0.5}));
}

void ExpectInvalid(const absl::Status& status, const std::vector<std::string>& substrings) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  for (const std::string& s : substrings) EXPECT_THAT(status.message(), HasSubstr(s));
}

TEST(AwsCatalogParseTest, RejectsAWrongHeader) {
  ExpectInvalid(ParseInstanceTypesCsv(ValidTypesCsvWith("vcpu", "vcpus"), "types.csv").status(),
                {"types.csv:1:", "unknown column \"vcpus\""});
  ExpectInvalid(ParseOnDemandPricesCsv("region,instance_type\nr,t,1\n", "p.csv").status(),
                {"p.csv:1:", "missing column \"usd_per_hour\""});
  ExpectInvalid(
      ParseOnDemandPricesCsv("region,region,instance_type,usd_per_hour\n", "p.csv").status(),
      {"p.csv:1:", "duplicate column \"region\""});
  ExpectInvalid(ParseOnDemandPricesCsv("", "empty.csv").status(), {"empty.csv:1:", "empty"});
}

TEST(AwsCatalogParseTest, RejectsAWrongColumnCount) {
  std::string text = ValidTypesCsv() + "c5.large,c,c5,5,large\n";
  ExpectInvalid(ParseInstanceTypesCsv(text, "types.csv").status(),
                {"types.csv:3:", "expected 35 columns, got 5"});
  ExpectInvalid(ParseSpotPricesCsv("region,zone,instance_type,usd_per_hour\n\n", "s.csv").status(),
                {"s.csv:2:", "expected 4 columns, got 1"});
}

TEST(AwsCatalogParseTest, RejectsBadNumbersNamingTheColumn) {
  ExpectInvalid(
      ParseInstanceTypesCsv(ValidTypesCsvWith(",2,8192,", ",two,8192,"), "types.csv").status(),
      {"types.csv:2:", "column \"vcpu\"", "\"two\""});

  for (const char* bad : {"-1", "1.5", " 2", "2 ", "+2", "99999999999999999999", ""}) {
    std::string t = ValidTypesCsvWith(",29,1930,", absl::StrCat(",", bad, ",1930,"));
    ExpectInvalid(ParseInstanceTypesCsv(t, "types.csv").status(),
                  {"types.csv:2:", "column \"max_pods\""});
  }
  ExpectInvalid(
      ParseInstanceTypesCsv(ValidTypesCsvWith(",2,8192,", ",0,8192,"), "types.csv").status(),
      {"column \"vcpu\""});

  for (const char* bad : {"abc", "-0.5", "nan", "inf", "", "0.1x", "1e300"}) {
    ExpectInvalid(ParseOnDemandPricesCsv(absl::StrCat("region,instance_type,usd_per_hour\n"
                                                      "us-east-1,m5.large,0.096\n"
                                                      "us-east-1,c5.large,",
                                                      bad, "\n"),
                                         "prices.csv")
                      .status(),
                  {"prices.csv:3:", "column \"usd_per_hour\""});
  }
}

TEST(AwsCatalogParseTest, RejectsBadBooleansAndArchitectures) {
  ExpectInvalid(
      ParseInstanceTypesCsv(ValidTypesCsvWith("nitro,false,no", "nitro,false,maybe"), "types.csv")
          .status(),
      {"types.csv:2:", "column \"bare_metal\"", "\"yes\" or \"no\""});
  ExpectInvalid(ParseInstanceTypesCsv(ValidTypesCsvWith("amd64", "x86_64"), "types.csv").status(),
                {"types.csv:2:", "column \"arch\""});
  ExpectInvalid(ParseInstanceTypesCsv(ValidTypesCsvWith("intel", "in tel"), "types.csv").status(),
                {"types.csv:2:", "column \"cpu_manufacturer\""});
}

TEST(AwsCatalogParseTest, RejectsDuplicateRows) {
  std::string text = ValidTypesCsv();
  text += text.substr(text.find("m5.large"));
  ExpectInvalid(ParseInstanceTypesCsv(text, "types.csv").status(),
                {"types.csv:3:", "duplicate instance type \"m5.large\"", "line 2"});
  ExpectInvalid(
      ParseOnDemandPricesCsv("region,instance_type,usd_per_hour\nr,t,1\nr,t,2\n", "p.csv").status(),
      {"p.csv:3:", "duplicate"});
  // The same type in two regions is fine.
  EXPECT_TRUE(
      ParseOnDemandPricesCsv("region,instance_type,usd_per_hour\nr1,t,1\nr2,t,2\n", "p.csv").ok());
}

TEST(AwsCatalogParseTest, ReadCatalogFilesNamesTheFileInErrors) {
  const std::string dir = dovetail::testing::ProcessTempDir("aws_catalog_bad");
  {
    std::ofstream(dir + "/instance-types.csv") << ValidTypesCsv();
    std::ofstream(dir + "/on-demand-prices.csv") << "region,instance_type,usd_per_hour\nr,t,x\n";
  }
  absl::Status status = ReadCatalogDirectory(dir).status();
  ExpectInvalid(status, {dir + "/on-demand-prices.csv:2:", "usd_per_hour"});
}

TEST(AwsCatalogBuildTest, RejectsAnEmptyRegion) {
  CatalogOptions options;
  options.region = "";
  EXPECT_EQ(BuildCatalog(CatalogFiles(), options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AwsCatalogParseTest, RejectsBadOfferingRows) {
  const std::string header = "region,zone,zone_id,instance_type\n";
  ExpectInvalid(ParseOfferingsCsv(header + "r,z,,t\nr,z,,t\n", "o.csv").status(),
                {"o.csv:3:", "duplicate offering"});
  ExpectInvalid(ParseOfferingsCsv(header + "r,z,id1,t\nr,z,id2,u\n", "o.csv").status(),
                {"o.csv:3:", "zone id"});
  ExpectInvalid(ParseOfferingsCsv(header + "r,,,t\n", "o.csv").status(), {"o.csv:2:", "zone"});
  EXPECT_TRUE(ParseOfferingsCsv(header + "r,za,id1,t\nr,zb,id2,t\n", "o.csv").ok());
}

TEST(AwsCatalogFilesTest, AFileOverTheSizeLimitIsInvalidArgumentNotRead) {
  const std::string dir = dovetail::testing::ProcessTempDir("aws_catalog_huge");
  std::ofstream(dir + "/on-demand-prices.csv") << "";
  std::ofstream(dir + "/instance-types.csv") << "";
  std::filesystem::resize_file(dir + "/instance-types.csv", uintmax_t{1} << 40);  // sparse
  const absl::Status status = ReadCatalogDirectory(dir).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("more than the limit"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dovetail::cloudprovider
