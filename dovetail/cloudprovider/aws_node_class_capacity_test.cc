#include "dovetail/cloudprovider/aws_node_class_capacity.h"

#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::cloudprovider {
namespace {

namespace awsv1 = apis::aws::v1;
using ::testing::HasSubstr;

constexpr int64_t kGi = int64_t{1} << 30;
constexpr int64_t kMi = int64_t{1} << 20;

awsv1::EC2NodeClassSpec Family(awsv1::AMIFamily family) {
  awsv1::EC2NodeClassSpec spec;
  spec.ami_family = family;
  return spec;
}

awsv1::BlockDeviceMapping Device(std::string name, std::string size, bool root = false) {
  awsv1::BlockDeviceMapping m;
  m.device_name = std::move(name);
  m.root_volume = root;
  if (!size.empty()) m.ebs = awsv1::BlockDevice{.volume_size = *Quantity::Parse(size)};
  return m;
}

// m5.2xlarge as DescribeInstanceTypes reports it: 8 vCPUs, 32 GiB, 4 ENIs x 15 IPv4 (58 pods),
// no instance store.
InstanceTypeRow M52xlarge() {
  InstanceTypeRow r;
  r.name = "m5.2xlarge";
  r.vcpu = 8;
  r.memory_mib = 32768;
  r.arch = "amd64";
  r.max_pods = 58;
  r.enis = 4;
  r.ipv4_per_eni = 15;
  return r;
}

TEST(NodeClassCapacityTest, AnAl2023ClassWithNothingSetChangesNothing) {
  auto o = NodeClassCapacity(Family(awsv1::AMIFamily::kAL2023));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(*o, CapacityOptions{});
  // An alias names the family as well.
  awsv1::EC2NodeClassSpec alias;
  alias.ami_selector_terms.push_back({.alias = "al2@latest"});
  EXPECT_EQ(*NodeClassCapacity(alias), CapacityOptions{});
}

TEST(NodeClassCapacityTest, EphemeralStorageFollowsUpstreamsOrder) {
  // The family's defaults: Bottlerocket's data volume, Windows' 50Gi, Custom's 20Gi.
  EXPECT_EQ(NodeClassCapacity(Family(awsv1::AMIFamily::kBottlerocket))->ephemeral_storage_bytes,
            20 * kGi);
  EXPECT_EQ(NodeClassCapacity(Family(awsv1::AMIFamily::kWindows2022))->ephemeral_storage_bytes,
            50 * kGi);
  EXPECT_EQ(NodeClassCapacity(awsv1::EC2NodeClassSpec{})->ephemeral_storage_bytes, 20 * kGi);

  // A root volume with a size wins, whatever its device.
  auto spec = Family(awsv1::AMIFamily::kAL2023);
  spec.block_device_mappings = {Device("/dev/xvda", "30Gi"), Device("/dev/sdf", "100Gi", true)};
  EXPECT_EQ(NodeClassCapacity(spec)->ephemeral_storage_bytes, 100 * kGi);
  // Else the family's data device.
  spec.block_device_mappings = {Device("/dev/sdf", "100Gi"), Device("/dev/xvda", "30Gi")};
  EXPECT_EQ(NodeClassCapacity(spec)->ephemeral_storage_bytes, 30 * kGi);
  // Bottlerocket's is /dev/xvdb, not the 4Gi OS volume.
  spec = Family(awsv1::AMIFamily::kBottlerocket);
  spec.block_device_mappings = {Device("/dev/xvda", "4Gi"), Device("/dev/xvdb", "80Gi")};
  EXPECT_EQ(NodeClassCapacity(spec)->ephemeral_storage_bytes, 80 * kGi);
  // Mappings that name neither: the default.
  spec.block_device_mappings = {Device("/dev/sdf", "500Gi")};
  EXPECT_EQ(NodeClassCapacity(spec)->ephemeral_storage_bytes, 20 * kGi);
  // Custom: the last mapping's size, 20Gi without one.
  spec = Family(awsv1::AMIFamily::kCustom);
  spec.block_device_mappings = {Device("/dev/xvda", "40Gi"), Device("/dev/xvdc", "60Gi")};
  EXPECT_EQ(NodeClassCapacity(spec)->ephemeral_storage_bytes, 60 * kGi);
  spec.block_device_mappings = {Device("/dev/xvda", "40Gi"), Device("/dev/xvdc", "")};
  EXPECT_EQ(NodeClassCapacity(spec)->ephemeral_storage_bytes, 20 * kGi);
}

TEST(NodeClassCapacityTest, Raid0UsesTheInstanceStoreOfTypesThatHaveOne) {
  auto spec = Family(awsv1::AMIFamily::kAL2023);
  spec.instance_store_policy = awsv1::InstanceStorePolicy::kRAID0;
  const CapacityOptions o = *NodeClassCapacity(spec);
  InstanceTypeRow with_store = M52xlarge();
  with_store.name = "m5d.2xlarge";
  with_store.instance_storage_gb = 300;
  EXPECT_EQ(ComputeCapacity(with_store, o).at("ephemeral-storage").Value(), 300'000'000'000);
  EXPECT_EQ(ComputeCapacity(M52xlarge(), o).at("ephemeral-storage").Value(), 20 * kGi);
  // A file row: local NVMe stands for the store.
  InstanceTypeRow from_file = M52xlarge();
  from_file.local_nvme_gib = 300;
  EXPECT_EQ(ComputeCapacity(from_file, o).at("ephemeral-storage").Value(), 300'000'000'000);
}

TEST(NodeClassCapacityTest, PodsFromMaxPodsPodsPerCoreAndTheFamily) {
  auto spec = Family(awsv1::AMIFamily::kAL2023);
  spec.kubelet = awsv1::KubeletConfiguration{};
  spec.kubelet->max_pods = 8;
  EXPECT_EQ(ComputeCapacity(M52xlarge(), *NodeClassCapacity(spec)).at("pods").Value(), 8);
  spec.kubelet->max_pods.reset();
  spec.kubelet->pods_per_core = 4;  // 4 x 8 vCPUs = 32 < 58
  EXPECT_EQ(ComputeCapacity(M52xlarge(), *NodeClassCapacity(spec)).at("pods").Value(), 32);
  // Bottlerocket ignores podsPerCore; Windows has no ENI-limited density (110).
  spec.ami_family = awsv1::AMIFamily::kBottlerocket;
  EXPECT_EQ(ComputeCapacity(M52xlarge(), *NodeClassCapacity(spec)).at("pods").Value(), 58);
  spec.ami_family = awsv1::AMIFamily::kWindows2022;
  spec.kubelet->pods_per_core.reset();
  EXPECT_EQ(ComputeCapacity(M52xlarge(), *NodeClassCapacity(spec)).at("pods").Value(), 110);
  // RESERVED_ENIS from the controller: 3 x 14 + 2.
  CapacityOptions controller;
  controller.reserved_enis = 1;
  spec.ami_family = awsv1::AMIFamily::kAL2023;
  EXPECT_EQ(ComputeCapacity(M52xlarge(), *NodeClassCapacity(spec, controller)).at("pods").Value(),
            44);
}

TEST(NodeClassCapacityTest, EfaOnlyInterfacesCarryNoPods) {
  auto spec = Family(awsv1::AMIFamily::kAL2023);
  spec.network_interfaces = {{.network_card_index = 0, .device_index = 0},
                             {.network_card_index = 0,
                              .device_index = 1,
                              .interface_type = awsv1::NetworkInterfaceType::kEfaOnly},
                             {.network_card_index = 1,
                              .device_index = 0,
                              .interface_type = awsv1::NetworkInterfaceType::kEfaOnly}};
  const CapacityOptions o = *NodeClassCapacity(spec);
  EXPECT_EQ(o.efa_only_enis, 1);
  const ResourceList capacity = ComputeCapacity(M52xlarge(), o);
  EXPECT_EQ(capacity.at("pods").Value(), 3 * 14 + 2);
  EXPECT_EQ(capacity.at("vpc.amazonaws.com/efa").Value(), 2);
  EXPECT_EQ(ComputeOverhead(M52xlarge(), capacity, o).kube_reserved.at("memory").Value(),
            (11 * 44 + 255) * kMi);
}

TEST(NodeClassCapacityTest, ReservedAndEvictionReachTheOverhead) {
  auto spec = Family(awsv1::AMIFamily::kBottlerocket);
  spec.kubelet = awsv1::KubeletConfiguration{};
  spec.kubelet->max_pods = 20;
  spec.kubelet->kube_reserved = {{"memory", "1Gi"}};
  spec.kubelet->system_reserved = {{"cpu", "100m"}, {"memory", "200Mi"}};
  spec.kubelet->eviction_hard = {{"memory.available", "500Mi"}, {"nodefs.available", "15%"}};
  spec.kubelet->eviction_soft = {{"memory.available", "1Gi"}};  // never changes allocatable
  const CapacityOptions o = *NodeClassCapacity(spec);
  const ResourceList capacity = ComputeCapacity(M52xlarge(), o);
  const InstanceTypeOverhead overhead = ComputeOverhead(M52xlarge(), capacity, o);
  EXPECT_EQ(overhead.kube_reserved.at("memory").Value(), kGi);
  EXPECT_EQ(overhead.kube_reserved.at("cpu").MilliValue(), 90);  // computed, not replaced
  EXPECT_EQ(overhead.system_reserved.at("cpu").MilliValue(), 100);
  EXPECT_EQ(overhead.eviction_threshold.at("memory").Value(), 500 * kMi);
  EXPECT_EQ(overhead.eviction_threshold.at("ephemeral-storage").Value(),
            static_cast<int64_t>(std::ceil(static_cast<double>(20 * kGi) / 100 * 15)));
  // Bottlerocket: kube-reserved memory from the pods capacity when not replaced.
  spec.kubelet->kube_reserved.clear();
  const CapacityOptions b = *NodeClassCapacity(spec);
  EXPECT_EQ(ComputeOverhead(M52xlarge(), ComputeCapacity(M52xlarge(), b), b)
                .kube_reserved.at("memory")
                .Value(),
            (11 * 20 + 255) * kMi);
  // "100%" is no threshold.
  EXPECT_EQ(*EvictionSignalBytes(1000, "100%"), 0);
  EXPECT_EQ(*EvictionSignalBytes(1000, "7.5%"), 75);
}

TEST(NodeClassCapacityTest, BadQuantitiesNameTheirField) {
  auto spec = Family(awsv1::AMIFamily::kAL2023);
  spec.kubelet = awsv1::KubeletConfiguration{};
  spec.kubelet->system_reserved = {{"memory", "much"}};
  EXPECT_THAT(NodeClassCapacity(spec).status().message(), HasSubstr("systemReserved"));
  spec.kubelet->system_reserved.clear();
  spec.kubelet->eviction_hard = {{"nodefs.available", "150%"}};
  EXPECT_THAT(NodeClassCapacity(spec).status().message(), HasSubstr("nodefs.available"));
}

}  // namespace
}  // namespace dovetail::cloudprovider
