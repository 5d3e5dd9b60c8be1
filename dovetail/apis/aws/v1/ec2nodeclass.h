// EC2NodeClass (karpenter.k8s.aws/v1): how the AWS provider launches instances for the NodePools
// that reference it — subnets, security groups, capacity reservations, placement group, AMIs and
// AMI family, IAM role or instance profile, tags, kubelet settings, block devices, instance
// store, network interfaces, IMDS options, connection tracking, CPU options — and the resolved
// values the node class controller writes to status. Every field of the v1 API is modelled;
// unknown keys are kept at the object, spec, kubelet and status levels (newer kubelet fields land
// in kubelet.unknown_fields and are written back).
//
// Decoding leaves fields the manifest does not set unset; ApplyDefaults fills what the CRD
// defaulting adds: metadataOptions {httpEndpoint: enabled, httpProtocolIPv6: disabled,
// httpPutResponseHopLimit: 1, httpTokens: required} (per field when the block is partly set) and,
// in status, capacity reservations' reservationType "default" and state "active".
// Plain data with a JSON codec (DecodeJson/EncodeJson in apis/core/codec.h); thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/meta.h"
#include "dovetail/common/quantity.h"
#include "nlohmann/json.hpp"

namespace dovetail::apis::aws::v1 {

inline constexpr std::string_view kApiVersion = "karpenter.k8s.aws/v1";
inline constexpr std::string_view kEC2NodeClassKind = "EC2NodeClass";

// A term selects by tags (value "*" matches any value) or by id.
struct SubnetSelectorTerm {
  core::StringMap tags;
  std::string id;
};

struct SecurityGroupSelectorTerm {
  core::StringMap tags;
  std::string id;
  std::string name;  // the group name, not the Name tag
};

struct CapacityReservationSelectorTerm {
  core::StringMap tags;
  std::string id;
  std::string owner_id;                 // ownerID
  std::string instance_match_criteria;  // open | targeted
};

// Exactly one of name and id.
struct PlacementGroupSelector {
  std::string name;
  std::string id;
};

struct AMISelectorTerm {
  std::string alias;  // family@version, e.g. al2023@latest
  core::StringMap tags;
  std::string id;
  std::string name;
  std::string owner;
  std::string ssm_parameter;  // ssmParameter
};

enum class AMIFamily {
  kAL2,
  kAL2023,
  kBottlerocket,
  kCustom,
  kWindows2019,
  kWindows2022,
  kWindows2025
};

// The kubelet settings of v1.14.1 (typed); anything newer is kept in unknown_fields.
struct KubeletConfiguration {
  std::vector<std::string> cluster_dns;  // clusterDNS
  std::optional<int32_t> max_pods;
  std::optional<int32_t> pods_per_core;
  core::StringMap system_reserved;
  core::StringMap kube_reserved;
  core::StringMap eviction_hard;
  core::StringMap eviction_soft;
  core::StringMap eviction_soft_grace_period;  // signal -> Go duration text
  std::optional<int32_t> eviction_max_pod_grace_period;
  std::optional<int32_t> image_gc_high_threshold_percent;  // imageGCHighThresholdPercent
  std::optional<int32_t> image_gc_low_threshold_percent;   // imageGCLowThresholdPercent
  std::optional<bool> cpu_cfs_quota;                       // cpuCFSQuota
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct BlockDevice {
  std::optional<bool> delete_on_termination;
  std::optional<bool> encrypted;
  std::optional<int64_t> iops;
  std::optional<std::string> kms_key_id;   // kmsKeyID
  std::optional<std::string> snapshot_id;  // snapshotID
  std::optional<int64_t> throughput;
  std::optional<int32_t> volume_initialization_rate;
  std::optional<Quantity> volume_size;
  std::optional<std::string> volume_type;  // standard, io1, io2, gp2, sc1, st1, gp3
};

struct BlockDeviceMapping {
  std::optional<std::string> device_name;
  std::optional<BlockDevice> ebs;
  bool root_volume = false;
};

enum class InstanceStorePolicy { kRAID0 };

enum class NetworkInterfaceType { kInterface, kEfaOnly };

struct NetworkInterface {
  int32_t network_card_index = 0;
  int32_t device_index = 0;
  NetworkInterfaceType interface_type = NetworkInterfaceType::kInterface;
};

// "enabled" / "disabled" settings (IMDS endpoint, IMDS IPv6, nested virtualisation).
enum class FeatureState { kEnabled, kDisabled };
enum class HttpTokens { kRequired, kOptional };

struct MetadataOptions {
  std::optional<FeatureState> http_endpoint;           // default enabled
  std::optional<FeatureState> http_protocol_ipv6;      // httpProtocolIPv6; default disabled
  std::optional<int64_t> http_put_response_hop_limit;  // default 1
  std::optional<HttpTokens> http_tokens;               // default required
};

struct ConnectionTracking {
  std::optional<int32_t> tcp_established_timeout;
  std::optional<int32_t> udp_stream_timeout;
  std::optional<int32_t> udp_timeout;
};

struct CPUOptions {
  std::optional<FeatureState> nested_virtualization;
};

struct EC2NodeClassSpec {
  std::vector<SubnetSelectorTerm> subnet_selector_terms;                 // always written
  std::vector<SecurityGroupSelectorTerm> security_group_selector_terms;  // always written
  std::vector<CapacityReservationSelectorTerm> capacity_reservation_selector_terms;
  std::optional<PlacementGroupSelector> placement_group_selector;
  std::optional<bool> associate_public_ip_address;  // associatePublicIPAddress
  std::optional<int32_t> ip_prefix_count;
  std::vector<AMISelectorTerm> ami_selector_terms;  // always written
  std::optional<AMIFamily> ami_family;
  std::optional<std::string> user_data;
  std::string role;
  std::optional<std::string> instance_profile;
  core::StringMap tags;
  std::optional<KubeletConfiguration> kubelet;
  std::vector<BlockDeviceMapping> block_device_mappings;
  std::optional<InstanceStorePolicy> instance_store_policy;
  std::vector<NetworkInterface> network_interfaces;
  std::optional<bool> detailed_monitoring;
  std::optional<MetadataOptions> metadata_options;
  std::optional<ConnectionTracking> connection_tracking;
  std::optional<std::string> context;
  std::optional<CPUOptions> cpu_options;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct Subnet {
  std::string id;
  std::string zone;
  std::string zone_id;  // zoneID
};

struct SecurityGroup {
  std::string id;
  std::string name;
};

struct AMI {
  std::string id;
  std::string name;
  bool deprecated = false;
  std::vector<core::NodeSelectorRequirement> requirements;  // always written
};

struct CapacityReservation {
  std::string availability_zone;
  std::optional<absl::Time> end_time;
  std::string id;
  std::string instance_match_criteria;
  std::string instance_type;
  std::string owner_id;                         // ownerID
  std::optional<std::string> reservation_type;  // default | capacity-block; default "default"
  std::optional<bool> interruptible;
  std::optional<std::string> state;  // active | expiring; default "active"
};

struct EC2NodeClassStatus {
  std::vector<Subnet> subnets;
  std::vector<SecurityGroup> security_groups;
  std::vector<CapacityReservation> capacity_reservations;
  std::vector<AMI> amis;
  std::string instance_profile;
  std::vector<core::Condition> conditions;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct EC2NodeClass {
  std::string api_version;
  std::string kind;
  core::ObjectMeta metadata;
  EC2NodeClassSpec spec;
  EC2NodeClassStatus status;
  nlohmann::json unknown_fields = nlohmann::json::object();
  // Not part of the API: the hashed collections the decoded JSON held present but empty, which
  // upstream's drift hash tells from absent ones and typed fields cannot (hash::PresentEmpty of
  // hash::kEC2NodeClassCollections).
  std::vector<std::string> spec_empty_fields;
};

// Upstream's drift hash (karpenter.k8s.aws/ec2nodeclass-hash, version v5) of the class as it is
// now, with the cluster's CA bundle (base64; "" when unknown) and the present-but-empty fields
// its JSON had. Errors: InvalidArgument when a hashed field does not hash.
absl::StatusOr<std::string> DriftHash(const EC2NodeClass& node_class, std::string_view ca_bundle);

// Fills the CRD defaults listed in the file comment; leaves set fields alone. Idempotent.
void ApplyDefaults(EC2NodeClass& node_class);

// The family implied by an alias term ("al2023@latest" -> AL2023), if the spec has one.
std::optional<AMIFamily> AliasFamily(const EC2NodeClassSpec& spec);
// spec.amiFamily if set, else the alias family, else nullopt.
std::optional<AMIFamily> EffectiveAMIFamily(const EC2NodeClassSpec& spec);

// The block devices a node of the class is launched with: spec.blockDeviceMappings, or the
// family's defaults when it has none (upstream's): AL2/AL2023 /dev/xvda 20Gi gp3 encrypted;
// Bottlerocket /dev/xvda 4Gi + /dev/xvdb 20Gi gp3 encrypted; Windows /dev/sda1 50Gi gp3
// encrypted; Custom none.
std::vector<BlockDeviceMapping> BlockDeviceMappingsFor(AMIFamily family,
                                                       const EC2NodeClassSpec& spec);

// Codec hooks (apis/core/codec.h).
std::span<const std::string_view> EnumNames(AMIFamily);
std::span<const std::string_view> EnumNames(InstanceStorePolicy);
std::span<const std::string_view> EnumNames(NetworkInterfaceType);
std::span<const std::string_view> EnumNames(FeatureState);
std::span<const std::string_view> EnumNames(HttpTokens);
void DescribeFields(core::FieldCodec& c, SubnetSelectorTerm& v);
void DescribeFields(core::FieldCodec& c, SecurityGroupSelectorTerm& v);
void DescribeFields(core::FieldCodec& c, CapacityReservationSelectorTerm& v);
void DescribeFields(core::FieldCodec& c, PlacementGroupSelector& v);
void DescribeFields(core::FieldCodec& c, AMISelectorTerm& v);
void DescribeFields(core::FieldCodec& c, KubeletConfiguration& v);
void DescribeFields(core::FieldCodec& c, BlockDevice& v);
void DescribeFields(core::FieldCodec& c, BlockDeviceMapping& v);
void DescribeFields(core::FieldCodec& c, NetworkInterface& v);
void DescribeFields(core::FieldCodec& c, MetadataOptions& v);
void DescribeFields(core::FieldCodec& c, ConnectionTracking& v);
void DescribeFields(core::FieldCodec& c, CPUOptions& v);
void DescribeFields(core::FieldCodec& c, EC2NodeClassSpec& v);
void DescribeFields(core::FieldCodec& c, Subnet& v);
void DescribeFields(core::FieldCodec& c, SecurityGroup& v);
void DescribeFields(core::FieldCodec& c, AMI& v);
void DescribeFields(core::FieldCodec& c, CapacityReservation& v);
void DescribeFields(core::FieldCodec& c, EC2NodeClassStatus& v);
void DescribeFields(core::FieldCodec& c, EC2NodeClass& v);

}  // namespace dovetail::apis::aws::v1
