#include "dovetail/providers/aws/api_catalog.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace dovetail::providers::aws {
namespace {

using cloudprovider::InstanceTypeRow;
constexpr int64_t kMiB = 1024 * 1024;

std::string AwsDataDir() { return DOVETAIL_AWS_DATA_DIR; }

// m5.large as DescribeInstanceTypes reports it.
Ec2InstanceTypeInfo M5Large() {
  return {.instance_type = "m5.large",
          .supported_usage_classes = {"on-demand", "spot"},
          .supported_virtualization_types = {"hvm"},
          .architectures = {"x86_64"},
          .hypervisor = "nitro",
          .manufacturer = "Intel",
          .sustained_clock_speed_ghz = 3.1,
          .default_vcpus = 2,
          .memory_mib = 8192,
          .ebs_optimized_support = "default",
          .ebs_baseline_bandwidth_mbps = 650,
          .ebs_maximum_bandwidth_mbps = 4750,
          .maximum_network_interfaces = 3,
          .default_network_card_interfaces = 3,
          .ipv4_addresses_per_interface = 10};
}

Ec2InstanceTypeInfo M6gLarge() {
  Ec2InstanceTypeInfo t = M5Large();
  t.instance_type = "m6g.large";
  t.architectures = {"arm64"};
  t.manufacturer = "AWS";
  t.sustained_clock_speed_ghz = 2.5;
  return t;
}

const cloudprovider::CatalogFiles& StaticFiles() {
  static const auto* files = [] {
    auto f = cloudprovider::ReadCatalogFiles(AwsDataDir() + "/instance-types.csv",
                                             AwsDataDir() + "/on-demand-prices.csv");
    EXPECT_TRUE(f.ok()) << f.status();
    return new cloudprovider::CatalogFiles(f.ok() ? *f : cloudprovider::CatalogFiles{});
  }();
  return *files;
}

const InstanceTypeRow* StaticRow(std::string_view name) {
  for (const auto& r : StaticFiles().instance_types) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

TEST(ApiCatalogTest, RowFromTheApiMatchesUpstreamsPublishedAllocatable) {
  for (const Ec2InstanceTypeInfo& info : {M5Large(), M6gLarge()}) {
    const InstanceTypeRow* expected = StaticRow(info.instance_type);
    ASSERT_NE(expected, nullptr) << info.instance_type;
    auto row = InstanceTypeRowFromApi(info, expected);
    ASSERT_TRUE(row.ok()) << row.status();
    EXPECT_EQ(row->max_pods, expected->max_pods) << info.instance_type;
    EXPECT_EQ(row->allocatable_cpu_millicores, expected->allocatable_cpu_millicores);
    EXPECT_EQ(row->allocatable_memory_mib, expected->allocatable_memory_mib);
    EXPECT_EQ(row->allocatable_ephemeral_storage_gib, expected->allocatable_ephemeral_storage_gib);
    EXPECT_EQ(row->category, expected->category);
    EXPECT_EQ(row->family, expected->family);
    EXPECT_EQ(row->generation, expected->generation);
    EXPECT_EQ(row->size, expected->size);
    EXPECT_EQ(row->arch, expected->arch);
    EXPECT_EQ(row->cpu_manufacturer, expected->cpu_manufacturer);
    EXPECT_EQ(row->cpu_sustained_clock_speed_mhz, expected->cpu_sustained_clock_speed_mhz);
    EXPECT_EQ(row->ebs_bandwidth_mbps, expected->ebs_bandwidth_mbps);
    EXPECT_EQ(row->network_bandwidth_mbps, expected->network_bandwidth_mbps);
  }
}

TEST(ApiCatalogTest, CategoryAndGenerationFollowUpstreamsScheme) {
  Ec2InstanceTypeInfo u = M5Large();
  u.instance_type = "u-6tb1.metal";
  auto row = InstanceTypeRowFromApi(u, nullptr);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->category, "u");
  EXPECT_EQ(row->generation, 1);
  EXPECT_EQ(row->family, "u-6tb1");
  EXPECT_EQ(row->size, "metal");
  Ec2InstanceTypeInfo flex = M5Large();
  flex.instance_type = "c7i-flex.large";
  row = InstanceTypeRowFromApi(flex, nullptr);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->category, "c");
  EXPECT_EQ(row->generation, 7);
  EXPECT_TRUE(row->capability_flex);
  Ec2InstanceTypeInfo i386 = M5Large();
  i386.architectures = {"i386"};
  EXPECT_EQ(InstanceTypeRowFromApi(i386, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ApiCatalogTest, GpuNamesBecomeLabelValuesAsUpstreamWritesThem) {
  Ec2InstanceTypeInfo g7 = M5Large();
  g7.instance_type = "g7.2xlarge";
  Ec2InstanceTypeInfo::Gpu gpu;
  gpu.name = "RTX PRO 4500";
  gpu.manufacturer = "NVIDIA";
  gpu.count = 1;
  gpu.memory_mib = 32768;
  g7.gpus = {gpu};
  auto row = InstanceTypeRowFromApi(g7, nullptr);
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_EQ(row->gpu_name, "rtx-pro-4500");
  EXPECT_EQ(row->gpu_manufacturer, "nvidia");
  EXPECT_EQ(row->nvidia_gpu, 1);
  // The row reads back from instance-types.csv (simulate's catalog directory).
  EXPECT_TRUE(cloudprovider::ParseInstanceTypesCsv(cloudprovider::FormatInstanceTypesCsv({*row}),
                                                   "instance-types.csv")
                  .ok());
}

TEST(ApiCatalogTest, OffersEachTypeOnlyInItsZonesWithPerZoneSpotPrices) {
  Ec2InstanceTypeInfo no_spot = M5Large();
  no_spot.instance_type = "m5.xlarge";
  no_spot.supported_usage_classes = {"on-demand"};
  Ec2InstanceTypeInfo paravirtual = M5Large();
  paravirtual.instance_type = "m1.small";
  paravirtual.supported_virtualization_types = {"paravirtual"};
  Ec2InstanceTypeInfo unoffered = M5Large();
  unoffered.instance_type = "m5.2xlarge";

  ApiCatalogInputs inputs;
  inputs.instance_types = {M5Large(), M6gLarge(), no_spot, paravirtual, unoffered};
  inputs.zones = {{.zone_name = "us-east-1a",
                   .zone_id = "use1-az1",
                   .state = "available",
                   .zone_type = "availability-zone",
                   .region = "us-east-1"},
                  {.zone_name = "us-east-1b",
                   .zone_id = "use1-az2",
                   .state = "available",
                   .zone_type = "availability-zone",
                   .region = "us-east-1"},
                  {.zone_name = "us-east-1-bos-1a",
                   .zone_id = "use1-bos1-az1",
                   .state = "available",
                   .zone_type = "local-zone",
                   .region = "us-east-1"}};
  inputs.zone_offerings = {{"m5.large", "availability-zone", "us-east-1a"},
                           {"m5.large", "availability-zone", "us-east-1b"},
                           {"m5.large", "availability-zone", "us-east-1-bos-1a"},
                           {"m6g.large", "availability-zone", "us-east-1b"},
                           {"m5.xlarge", "availability-zone", "us-east-1a"},
                           {"m1.small", "availability-zone", "us-east-1a"}};
  inputs.spot_prices = std::vector<Ec2SpotPrice>{
      {.instance_type = "m5.large", .availability_zone = "us-east-1a", .price = 0.035},
      {.instance_type = "m5.xlarge", .availability_zone = "us-east-1a", .price = 0.07}};
  auto catalog = BuildApiCatalog(inputs, {.region = "us-east-1", .static_files = StaticFiles()});
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  ASSERT_EQ(catalog->size(), 3u);  // m1.small (paravirtual) and m5.2xlarge (unoffered) left out

  const cloudprovider::InstanceType* m5 = catalog->Find("m5.large");
  ASSERT_NE(m5, nullptr);
  ASSERT_EQ(m5->offerings().size(), 4u);
  for (const auto& o : m5->offerings()) {
    ASSERT_TRUE(o.zone == "us-east-1a" || o.zone == "us-east-1b") << o.zone;
    if (o.capacity_type == "on-demand") {
      EXPECT_TRUE(o.available);
      EXPECT_DOUBLE_EQ(o.price, 0.096);
    } else if (o.zone == "us-east-1a") {
      EXPECT_TRUE(o.available);
      EXPECT_DOUBLE_EQ(o.price, 0.035);
    } else {
      EXPECT_FALSE(o.available) << "no spot price in us-east-1b";
    }
  }
  EXPECT_EQ(m5->capacity().at("pods").ToString(), "29");

  const cloudprovider::InstanceType* m6g = catalog->Find("m6g.large");
  ASSERT_NE(m6g, nullptr);
  ASSERT_EQ(m6g->offerings().size(), 2u);
  EXPECT_EQ(m6g->offerings()[0].zone, "us-east-1b");

  const cloudprovider::InstanceType* xl = catalog->Find("m5.xlarge");
  ASSERT_NE(xl, nullptr);
  for (const auto& o : xl->offerings()) {
    EXPECT_EQ(o.available, o.capacity_type == "on-demand") << o.capacity_type;
  }
}

// RESERVED_ENIS and VM_MEMORY_OVERHEAD_PERCENT reach the API catalog's capacity: m5.large has
// 3 ENIs of 10 IPv4 addresses, 29 pods; one reserved ENI leaves 2 x 9 + 2 = 20.
TEST(ApiCatalogTest, ReservedEnisAndMemoryOverheadShapeTheCapacity) {
  ApiCatalogInputs inputs;
  inputs.instance_types = {M5Large()};
  inputs.zones = {{.zone_name = "us-east-1a",
                   .zone_id = "use1-az1",
                   .state = "available",
                   .zone_type = "availability-zone",
                   .region = "us-east-1"}};
  inputs.zone_offerings = {{"m5.large", "availability-zone", "us-east-1a"}};
  auto plain = BuildApiCatalog(inputs, {.region = "us-east-1", .static_files = StaticFiles()});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->Find("m5.large")->capacity().at("pods").Value(), 29);
  EXPECT_EQ(plain->Find("m5.large")->capacity().at("memory").Value(), (8192 - 615) * kMiB);
  auto reserved = BuildApiCatalog(
      inputs, {.region = "us-east-1",
               .static_files = StaticFiles(),
               .capacity = {.vm_memory_overhead_percent = 0.1, .reserved_enis = 1}});
  ASSERT_TRUE(reserved.ok()) << reserved.status();
  const cloudprovider::InstanceType* m5 = reserved->Find("m5.large");
  EXPECT_EQ(m5->capacity().at("pods").Value(), 20);
  EXPECT_EQ(m5->capacity().at("memory").Value(), (8192 - 820) * kMiB);  // ceil(819.2)
  // kube-reserved memory from the unreserved 29 pods: 11 x 29 + 255 = 574Mi.
  EXPECT_EQ(m5->overhead().kube_reserved.at("memory").Value(), 574 * kMiB);
}

TEST(ApiCatalogTest, WithoutSpotDataTheSpotModelPricesEveryZone) {
  ApiCatalogInputs inputs;
  inputs.instance_types = {M5Large()};
  inputs.zones = {{.zone_name = "eu-west-1a", .zone_id = "euw1-az1", .state = "available"}};
  inputs.zone_offerings = {{"m5.large", "availability-zone", "eu-west-1a"}};
  auto catalog = BuildApiCatalog(inputs, {.region = "eu-west-1", .static_files = StaticFiles()});
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  const auto* m5 = catalog->Find("m5.large");
  ASSERT_NE(m5, nullptr);
  for (const auto& o : m5->offerings()) {
    EXPECT_TRUE(o.available);  // eu-west-1 has no static prices: the us-east-1 table is used
    EXPECT_GT(o.price, 0);
  }
}

}  // namespace
}  // namespace dovetail::providers::aws
