#include "dovetail/apis/aws/v1/ec2nodeclass.h"

#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/manifest.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::apis::aws::v1 {
namespace {

using ::dovetail::apis::core::DecodeJson;
using ::dovetail::apis::core::DecodeOptions;
using ::dovetail::apis::core::EncodeJson;
using ::dovetail::apis::core::Manifest;
using ::nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string TestData(const std::string& name) {
  return std::string(DOVETAIL_APIS_TESTDATA) + "/" + name;
}

std::vector<Manifest> Read(const std::string& file) {
  absl::StatusOr<std::vector<Manifest>> manifests = core::ReadManifests(TestData(file));
  EXPECT_TRUE(manifests.ok()) << manifests.status();
  return manifests.ok() ? *manifests : std::vector<Manifest>{};
}

EC2NodeClass Decode(const json& in) {
  EC2NodeClass node_class;
  const absl::Status status = DecodeJson(in, node_class);
  EXPECT_TRUE(status.ok()) << status;
  return node_class;
}

EC2NodeClass DecodeFixture(const std::string& file, const std::string& name) {
  for (const Manifest& m : Read(file)) {
    if (m.name == name) return Decode(m.json);
  }
  ADD_FAILURE() << name << " not in " << file;
  return EC2NodeClass{};
}

TEST(EC2NodeClassTest, DocumentedShapesRoundTripLosslessly) {
  std::vector<Manifest> manifests;
  for (const char* file : {"ec2nodeclass_kitchen_sink.yaml", "ec2nodeclass_variants.yaml",
                           "ec2nodeclass_status.yaml"}) {
    for (const Manifest& m : Read(file)) manifests.push_back(m);
  }
  ASSERT_EQ(manifests.size(), 7);
  for (const Manifest& m : manifests) {
    const json encoded = EncodeJson(Decode(m.json));
    EXPECT_EQ(encoded, m.json) << m.Describe() << " differs: " << json::diff(m.json, encoded);
    absl::StatusOr<std::vector<Manifest>> again = core::ParseManifests(m.json.dump(), "x.json");
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(EncodeJson(Decode((*again)[0].json)), encoded) << m.Describe();
  }
}

TEST(EC2NodeClassTest, KitchenSinkSpecIsDecoded) {
  const EC2NodeClass nc = DecodeFixture("ec2nodeclass_kitchen_sink.yaml", "kitchen-sink");
  const EC2NodeClassSpec& spec = nc.spec;
  EXPECT_EQ(spec.ami_family, AMIFamily::kAL2023);
  ASSERT_EQ(spec.subnet_selector_terms.size(), 2);
  EXPECT_EQ(spec.subnet_selector_terms[0].tags.at("environment"), "test");
  EXPECT_EQ(spec.subnet_selector_terms[1].id, "subnet-09fa4a0a8f233a921");
  EXPECT_EQ(spec.security_group_selector_terms[2].name, "my-security-group");
  ASSERT_EQ(spec.capacity_reservation_selector_terms.size(), 3);
  EXPECT_EQ(spec.capacity_reservation_selector_terms[2].owner_id, "012345678901");
  EXPECT_EQ(spec.capacity_reservation_selector_terms[2].instance_match_criteria, "targeted");
  EXPECT_EQ(spec.placement_group_selector->name, "my-placement-group");
  EXPECT_EQ(spec.associate_public_ip_address, false);
  EXPECT_EQ(spec.ip_prefix_count, 2);
  EXPECT_EQ(spec.role, "KarpenterNodeRole-my-cluster");
  EXPECT_FALSE(spec.instance_profile.has_value());
  ASSERT_EQ(spec.ami_selector_terms.size(), 4);
  EXPECT_EQ(spec.ami_selector_terms[1].owner, "123456789012");
  EXPECT_EQ(spec.ami_selector_terms[2].id, "ami-123");
  EXPECT_THAT(spec.ami_selector_terms[3].ssm_parameter, HasSubstr("/aws/service/eks/"));
  EXPECT_EQ(spec.user_data, "echo \"Hello world\"\n");
  EXPECT_EQ(spec.tags.at("team"), "team-a");

  ASSERT_TRUE(spec.kubelet.has_value());
  const KubeletConfiguration& kubelet = *spec.kubelet;
  EXPECT_EQ(kubelet.pods_per_core, 2);
  EXPECT_EQ(kubelet.max_pods, 20);
  EXPECT_EQ(kubelet.system_reserved.at("ephemeral-storage"), "1Gi");
  EXPECT_EQ(kubelet.kube_reserved.at("cpu"), "200m");
  EXPECT_EQ(kubelet.eviction_hard.at("memory.available"), "5%");
  EXPECT_EQ(kubelet.eviction_soft.at("nodefs.available"), "15%");
  EXPECT_EQ(kubelet.eviction_soft_grace_period.at("nodefs.available"), "1m30s");
  EXPECT_EQ(kubelet.eviction_max_pod_grace_period, 60);
  EXPECT_EQ(kubelet.image_gc_high_threshold_percent, 85);
  EXPECT_EQ(kubelet.image_gc_low_threshold_percent, 80);
  EXPECT_EQ(kubelet.cpu_cfs_quota, true);
  EXPECT_THAT(kubelet.cluster_dns, ElementsAre("10.0.1.100"));

  ASSERT_EQ(spec.block_device_mappings.size(), 1);
  const BlockDeviceMapping& root = spec.block_device_mappings[0];
  EXPECT_EQ(root.device_name, "/dev/xvda");
  EXPECT_TRUE(root.root_volume);
  ASSERT_TRUE(root.ebs.has_value());
  EXPECT_EQ(root.ebs->volume_size->Value(), 100LL << 30);
  EXPECT_EQ(root.ebs->volume_type, "gp3");
  EXPECT_EQ(root.ebs->iops, 10000);
  EXPECT_EQ(root.ebs->throughput, 125);
  EXPECT_EQ(root.ebs->encrypted, true);
  EXPECT_EQ(root.ebs->delete_on_termination, true);
  EXPECT_EQ(root.ebs->kms_key_id, "1234abcd-12ab-34cd-56ef-1234567890ab");
  EXPECT_EQ(root.ebs->snapshot_id, "snap-0123456789");
  EXPECT_EQ(root.ebs->volume_initialization_rate, 200);

  EXPECT_EQ(spec.instance_store_policy, InstanceStorePolicy::kRAID0);
  ASSERT_EQ(spec.network_interfaces.size(), 3);
  EXPECT_EQ(spec.network_interfaces[0].interface_type, NetworkInterfaceType::kInterface);
  EXPECT_EQ(spec.network_interfaces[1].device_index, 1);
  EXPECT_EQ(spec.network_interfaces[2].network_card_index, 1);
  EXPECT_EQ(spec.network_interfaces[2].interface_type, NetworkInterfaceType::kEfaOnly);
  EXPECT_EQ(spec.detailed_monitoring, true);
  ASSERT_TRUE(spec.metadata_options.has_value());
  EXPECT_EQ(spec.metadata_options->http_put_response_hop_limit, 1);
  EXPECT_EQ(spec.metadata_options->http_tokens, HttpTokens::kRequired);
  EXPECT_EQ(spec.connection_tracking->tcp_established_timeout, 3600);
  EXPECT_EQ(spec.connection_tracking->udp_stream_timeout, 120);
  EXPECT_EQ(spec.connection_tracking->udp_timeout, 45);
  EXPECT_EQ(spec.cpu_options->nested_virtualization, FeatureState::kEnabled);
  EXPECT_EQ(spec.context, "cfc-0123456789abcdef0");
}

TEST(EC2NodeClassTest, StatusIsDecoded) {
  const EC2NodeClass nc = DecodeFixture("ec2nodeclass_status.yaml", "default");
  const EC2NodeClassStatus& status = nc.status;
  ASSERT_EQ(status.amis.size(), 3);
  EXPECT_EQ(status.amis[0].requirements[0].values, std::vector<std::string>{"amd64"});
  EXPECT_TRUE(status.amis[2].deprecated);
  EXPECT_EQ(status.amis[2].requirements[1].op, core::SelectorOperator::kExists);
  ASSERT_EQ(status.capacity_reservations.size(), 2);
  EXPECT_EQ(status.capacity_reservations[0].reservation_type, "capacity-block");
  EXPECT_EQ(status.capacity_reservations[0].end_time, absl::FromUnixSeconds(1751369400));
  EXPECT_EQ(status.capacity_reservations[1].interruptible, false);
  EXPECT_FALSE(status.capacity_reservations[1].state.has_value());
  EXPECT_EQ(status.instance_profile, "my-cluster_1234567890123456789");
  EXPECT_EQ(status.security_groups[1].name, "");
  EXPECT_EQ(status.subnets[1].zone_id, "usw2-az3");
  EXPECT_EQ(status.conditions[1].type, "Ready");
}

TEST(EC2NodeClassTest, ApplyDefaultsFillsMetadataOptionsAndReservationDefaults) {
  EC2NodeClass nc = DecodeFixture("ec2nodeclass_variants.yaml", "default");
  EXPECT_FALSE(nc.spec.metadata_options.has_value());
  ApplyDefaults(nc);
  EXPECT_EQ(EncodeJson(nc)["spec"]["metadataOptions"],
            json::parse(R"({"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                            "httpPutResponseHopLimit": 1, "httpTokens": "required"})"));

  EC2NodeClass custom = DecodeFixture("ec2nodeclass_variants.yaml", "custom");
  ApplyDefaults(custom);
  EXPECT_EQ(EncodeJson(custom)["spec"]["metadataOptions"],
            json::parse(R"({"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                            "httpPutResponseHopLimit": 1, "httpTokens": "optional"})"));

  EC2NodeClass resolved = DecodeFixture("ec2nodeclass_status.yaml", "default");
  ApplyDefaults(resolved);
  EXPECT_EQ(resolved.status.capacity_reservations[0].reservation_type, "capacity-block");
  EXPECT_EQ(resolved.status.capacity_reservations[1].reservation_type, "default");
  EXPECT_EQ(resolved.status.capacity_reservations[1].state, "active");
}

TEST(EC2NodeClassTest, AmiFamilyComesFromTheFieldOrTheAlias) {
  EXPECT_EQ(EffectiveAMIFamily(DecodeFixture("ec2nodeclass_variants.yaml", "default").spec),
            AMIFamily::kAL2023);
  EXPECT_EQ(EffectiveAMIFamily(DecodeFixture("ec2nodeclass_variants.yaml", "windows").spec),
            AMIFamily::kWindows2022);
  EXPECT_EQ(AliasFamily(DecodeFixture("ec2nodeclass_variants.yaml", "bottlerocket").spec),
            AMIFamily::kBottlerocket);
  const EC2NodeClass custom = DecodeFixture("ec2nodeclass_variants.yaml", "custom");
  EXPECT_EQ(AliasFamily(custom.spec), std::nullopt);
  EXPECT_EQ(EffectiveAMIFamily(custom.spec), AMIFamily::kCustom);
  EC2NodeClassSpec unknown;
  unknown.ami_selector_terms.push_back(AMISelectorTerm{.alias = "ubuntu@latest"});
  EXPECT_EQ(EffectiveAMIFamily(unknown), std::nullopt);
}

TEST(EC2NodeClassTest, NewerKubeletFieldsAreKeptAndReported) {
  const json input = json::parse(R"({"spec": {"kubelet": {"maxPods": 110,
      "shutdownGracePeriod": "30s", "registryPullQPS": 10}}})");
  std::vector<std::string> paths;
  EC2NodeClass nc;
  ASSERT_TRUE(DecodeJson(input, nc, DecodeOptions{.unknown_field_paths = &paths}).ok());
  EXPECT_THAT(paths, testing::UnorderedElementsAre("spec.kubelet.shutdownGracePeriod",
                                                   "spec.kubelet.registryPullQPS"));
  json expected = input;
  expected["spec"]["subnetSelectorTerms"] = json::array();
  expected["spec"]["securityGroupSelectorTerms"] = json::array();
  expected["spec"]["amiSelectorTerms"] = json::array();
  EXPECT_EQ(EncodeJson(nc), expected);
}

TEST(EC2NodeClassTest, ZeroNetworkInterfaceIndicesAreWritten) {
  EC2NodeClass nc;
  nc.spec.network_interfaces.push_back(NetworkInterface{});
  EXPECT_EQ(
      EncodeJson(nc)["spec"]["networkInterfaces"],
      json::parse(R"([{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}])"));
}

TEST(EC2NodeClassTest, InvalidValuesNameTheJsonPath) {
  EC2NodeClass nc;
  EXPECT_THAT(
      std::string(DecodeJson(json::parse(R"({"spec": {"amiFamily": "Ubuntu"}})"), nc).message()),
      HasSubstr("spec.amiFamily: unsupported value \"Ubuntu\""));
  EXPECT_EQ(DecodeJson(json::parse(R"({"spec": {"blockDeviceMappings": [
                           {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "twenty"}}]}})"),
                       nc)
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(DecodeJson(json::parse(R"({"spec": {"blockDeviceMappings": [
                           {"ebs": {"iops": "fast"}}]}})"),
                                     nc)
                              .message()),
              testing::StartsWith("spec.blockDeviceMappings[0].ebs.iops: expected integer"));
  EXPECT_THAT(
      std::string(DecodeJson(json::parse(R"({"spec": {"tags": {"team": 5}}})"), nc).message()),
      testing::StartsWith("spec.tags.team: expected string, got number"));
}

}  // namespace
}  // namespace dovetail::apis::aws::v1

namespace dovetail::apis::aws::v1 {
namespace {

// Upstream's EC2NodeClass hash through the typed object (decode, then DriftHash) equals upstream's
// own Hash(caBundle) on every vector of test/testdata/upstream-hashes.json, the present-but-empty
// collections included.
TEST(EC2NodeClassDriftHashTest, EveryUpstreamVectorThroughTheTypedObject) {
  std::ifstream in(std::string(DOVETAIL_TESTDATA_DIR) + "/upstream-hashes.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  int checked = 0;
  for (const nlohmann::json& v : doc.at("vectors")) {
    if (v.at("kind") != "EC2NodeClass") continue;
    EC2NodeClass node_class;
    ASSERT_TRUE(core::DecodeJson(v.at("object"), node_class).ok()) << v.at("name");
    const std::string ca = v.contains("caBundle") ? v.at("caBundle").get<std::string>() : "";
    absl::StatusOr<std::string> hash = DriftHash(node_class, ca);
    ASSERT_TRUE(hash.ok()) << v.at("name") << ": " << hash.status();
    EXPECT_EQ(*hash, v.at("hash").get<std::string>()) << v.at("name");
    ++checked;
  }
  EXPECT_GE(checked, 40);
}

}  // namespace
}  // namespace dovetail::apis::aws::v1
