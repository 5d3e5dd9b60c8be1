#include "dovetail/apis/aws/v1/ec2nodeclass.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "dovetail/apis/hash/drift_hash.h"

namespace dovetail::apis::aws::v1 {
namespace {

constexpr std::string_view kAMIFamilyNames[] = {
    "AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025"};
constexpr std::string_view kInstanceStorePolicyNames[] = {"RAID0"};
constexpr std::string_view kNetworkInterfaceTypeNames[] = {"interface", "efa-only"};
constexpr std::string_view kFeatureStateNames[] = {"enabled", "disabled"};
constexpr std::string_view kHttpTokensNames[] = {"required", "optional"};

}  // namespace

std::span<const std::string_view> EnumNames(AMIFamily) { return kAMIFamilyNames; }
std::span<const std::string_view> EnumNames(InstanceStorePolicy) {
  return kInstanceStorePolicyNames;
}
std::span<const std::string_view> EnumNames(NetworkInterfaceType) {
  return kNetworkInterfaceTypeNames;
}
std::span<const std::string_view> EnumNames(FeatureState) { return kFeatureStateNames; }
std::span<const std::string_view> EnumNames(HttpTokens) { return kHttpTokensNames; }

void ApplyDefaults(EC2NodeClass& node_class) {
  if (!node_class.spec.metadata_options.has_value()) node_class.spec.metadata_options.emplace();
  MetadataOptions& imds = *node_class.spec.metadata_options;
  if (!imds.http_endpoint.has_value()) imds.http_endpoint = FeatureState::kEnabled;
  if (!imds.http_protocol_ipv6.has_value()) imds.http_protocol_ipv6 = FeatureState::kDisabled;
  if (!imds.http_put_response_hop_limit.has_value()) imds.http_put_response_hop_limit = 1;
  if (!imds.http_tokens.has_value()) imds.http_tokens = HttpTokens::kRequired;
  for (CapacityReservation& reservation : node_class.status.capacity_reservations) {
    if (!reservation.reservation_type.has_value()) reservation.reservation_type = "default";
    if (!reservation.state.has_value()) reservation.state = "active";
  }
}

std::optional<AMIFamily> AliasFamily(const EC2NodeClassSpec& spec) {
  for (const AMISelectorTerm& term : spec.ami_selector_terms) {
    if (term.alias.empty()) continue;
    const std::string family = absl::AsciiStrToLower(term.alias.substr(0, term.alias.find('@')));
    if (family == "al2") return AMIFamily::kAL2;
    if (family == "al2023") return AMIFamily::kAL2023;
    if (family == "bottlerocket") return AMIFamily::kBottlerocket;
    if (family == "windows2019") return AMIFamily::kWindows2019;
    if (family == "windows2022") return AMIFamily::kWindows2022;
    if (family == "windows2025") return AMIFamily::kWindows2025;
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<AMIFamily> EffectiveAMIFamily(const EC2NodeClassSpec& spec) {
  if (spec.ami_family.has_value()) return spec.ami_family;
  return AliasFamily(spec);
}

namespace {

BlockDeviceMapping DefaultGp3(std::string device, std::string_view size, bool root) {
  BlockDeviceMapping m;
  m.device_name = std::move(device);
  m.root_volume = root;
  BlockDevice ebs;
  ebs.encrypted = true;
  ebs.volume_type = "gp3";
  ebs.volume_size = Quantity::Parse(size).value();
  m.ebs = std::move(ebs);
  return m;
}

}  // namespace

std::vector<BlockDeviceMapping> BlockDeviceMappingsFor(AMIFamily family,
                                                       const EC2NodeClassSpec& spec) {
  if (!spec.block_device_mappings.empty()) return spec.block_device_mappings;
  switch (family) {
    case AMIFamily::kAL2:
    case AMIFamily::kAL2023:
      return {DefaultGp3("/dev/xvda", "20Gi", true)};
    case AMIFamily::kBottlerocket:
      return {DefaultGp3("/dev/xvda", "4Gi", false), DefaultGp3("/dev/xvdb", "20Gi", true)};
    case AMIFamily::kWindows2019:
    case AMIFamily::kWindows2022:
    case AMIFamily::kWindows2025:
      return {DefaultGp3("/dev/sda1", "50Gi", true)};
    case AMIFamily::kCustom:
      return {};
  }
  return {};
}

void DescribeFields(core::FieldCodec& c, SubnetSelectorTerm& v) {
  c.Field("tags", v.tags);
  c.Field("id", v.id);
}

void DescribeFields(core::FieldCodec& c, SecurityGroupSelectorTerm& v) {
  c.Field("tags", v.tags);
  c.Field("id", v.id);
  c.Field("name", v.name);
}

void DescribeFields(core::FieldCodec& c, CapacityReservationSelectorTerm& v) {
  c.Field("tags", v.tags);
  c.Field("id", v.id);
  c.Field("ownerID", v.owner_id);
  c.Field("instanceMatchCriteria", v.instance_match_criteria);
}

void DescribeFields(core::FieldCodec& c, PlacementGroupSelector& v) {
  c.Field("name", v.name);
  c.Field("id", v.id);
}

void DescribeFields(core::FieldCodec& c, AMISelectorTerm& v) {
  c.Field("alias", v.alias);
  c.Field("tags", v.tags);
  c.Field("id", v.id);
  c.Field("name", v.name);
  c.Field("owner", v.owner);
  c.Field("ssmParameter", v.ssm_parameter);
}

void DescribeFields(core::FieldCodec& c, KubeletConfiguration& v) {
  c.Field("clusterDNS", v.cluster_dns);
  c.Field("maxPods", v.max_pods);
  c.Field("podsPerCore", v.pods_per_core);
  c.Field("systemReserved", v.system_reserved);
  c.Field("kubeReserved", v.kube_reserved);
  c.Field("evictionHard", v.eviction_hard);
  c.Field("evictionSoft", v.eviction_soft);
  c.Field("evictionSoftGracePeriod", v.eviction_soft_grace_period);
  c.Field("evictionMaxPodGracePeriod", v.eviction_max_pod_grace_period);
  c.Field("imageGCHighThresholdPercent", v.image_gc_high_threshold_percent);
  c.Field("imageGCLowThresholdPercent", v.image_gc_low_threshold_percent);
  c.Field("cpuCFSQuota", v.cpu_cfs_quota);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(core::FieldCodec& c, BlockDevice& v) {
  c.Field("deleteOnTermination", v.delete_on_termination);
  c.Field("encrypted", v.encrypted);
  c.Field("iops", v.iops);
  c.Field("kmsKeyID", v.kms_key_id);
  c.Field("snapshotID", v.snapshot_id);
  c.Field("throughput", v.throughput);
  c.Field("volumeInitializationRate", v.volume_initialization_rate);
  c.Field("volumeSize", v.volume_size);
  c.Field("volumeType", v.volume_type);
}

void DescribeFields(core::FieldCodec& c, BlockDeviceMapping& v) {
  c.Field("deviceName", v.device_name);
  c.Field("ebs", v.ebs);
  c.Field("rootVolume", v.root_volume);
}

void DescribeFields(core::FieldCodec& c, NetworkInterface& v) {
  c.Field("networkCardIndex", v.network_card_index, {.emit_empty = true});
  c.Field("deviceIndex", v.device_index, {.emit_empty = true});
  c.Field("interfaceType", v.interface_type);
}

void DescribeFields(core::FieldCodec& c, MetadataOptions& v) {
  c.Field("httpEndpoint", v.http_endpoint);
  c.Field("httpProtocolIPv6", v.http_protocol_ipv6);
  c.Field("httpPutResponseHopLimit", v.http_put_response_hop_limit);
  c.Field("httpTokens", v.http_tokens);
}

void DescribeFields(core::FieldCodec& c, ConnectionTracking& v) {
  c.Field("tcpEstablishedTimeout", v.tcp_established_timeout);
  c.Field("udpStreamTimeout", v.udp_stream_timeout);
  c.Field("udpTimeout", v.udp_timeout);
}

void DescribeFields(core::FieldCodec& c, CPUOptions& v) {
  c.Field("nestedVirtualization", v.nested_virtualization);
}

void DescribeFields(core::FieldCodec& c, EC2NodeClassSpec& v) {
  c.Field("subnetSelectorTerms", v.subnet_selector_terms, {.emit_empty = true});
  c.Field("securityGroupSelectorTerms", v.security_group_selector_terms, {.emit_empty = true});
  c.Field("capacityReservationSelectorTerms", v.capacity_reservation_selector_terms);
  c.Field("placementGroupSelector", v.placement_group_selector);
  c.Field("associatePublicIPAddress", v.associate_public_ip_address);
  c.Field("ipPrefixCount", v.ip_prefix_count);
  c.Field("amiSelectorTerms", v.ami_selector_terms, {.emit_empty = true});
  c.Field("amiFamily", v.ami_family);
  c.Field("userData", v.user_data);
  c.Field("role", v.role);
  c.Field("instanceProfile", v.instance_profile);
  c.Field("tags", v.tags);
  c.Field("kubelet", v.kubelet);
  c.Field("blockDeviceMappings", v.block_device_mappings);
  c.Field("instanceStorePolicy", v.instance_store_policy);
  c.Field("networkInterfaces", v.network_interfaces);
  c.Field("detailedMonitoring", v.detailed_monitoring);
  c.Field("metadataOptions", v.metadata_options);
  c.Field("connectionTracking", v.connection_tracking);
  c.Field("context", v.context);
  c.Field("cpuOptions", v.cpu_options);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(core::FieldCodec& c, Subnet& v) {
  c.Field("id", v.id, {.emit_empty = true});
  c.Field("zone", v.zone, {.emit_empty = true});
  c.Field("zoneID", v.zone_id);
}

void DescribeFields(core::FieldCodec& c, SecurityGroup& v) {
  c.Field("id", v.id, {.emit_empty = true});
  c.Field("name", v.name);
}

void DescribeFields(core::FieldCodec& c, AMI& v) {
  c.Field("id", v.id, {.emit_empty = true});
  c.Field("name", v.name);
  c.Field("deprecated", v.deprecated);
  c.Field("requirements", v.requirements, {.emit_empty = true});
}

void DescribeFields(core::FieldCodec& c, CapacityReservation& v) {
  c.Field("availabilityZone", v.availability_zone, {.emit_empty = true});
  c.Field("endTime", v.end_time);
  c.Field("id", v.id, {.emit_empty = true});
  c.Field("instanceMatchCriteria", v.instance_match_criteria, {.emit_empty = true});
  c.Field("instanceType", v.instance_type, {.emit_empty = true});
  c.Field("ownerID", v.owner_id, {.emit_empty = true});
  c.Field("reservationType", v.reservation_type);
  c.Field("interruptible", v.interruptible);
  c.Field("state", v.state);
}

void DescribeFields(core::FieldCodec& c, EC2NodeClassStatus& v) {
  c.Field("subnets", v.subnets);
  c.Field("securityGroups", v.security_groups);
  c.Field("capacityReservations", v.capacity_reservations);
  c.Field("amis", v.amis);
  c.Field("instanceProfile", v.instance_profile);
  c.Field("conditions", v.conditions);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(core::FieldCodec& c, EC2NodeClass& v) {
  core::DescribeObject(c, v, {.emit_empty = true});
  if (c.decoding() && c.input() != nullptr) {
    v.spec_empty_fields = hash::PresentEmpty(*c.input(), hash::kEC2NodeClassCollections);
  }
}

absl::StatusOr<std::string> DriftHash(const EC2NodeClass& node_class, std::string_view ca_bundle) {
  nlohmann::json json = core::EncodeJson(node_class);
  hash::RestorePresentEmpty(json, hash::kEC2NodeClassCollections, node_class.spec_empty_fields);
  return hash::EC2NodeClassHash(json, ca_bundle);
}

}  // namespace dovetail::apis::aws::v1
