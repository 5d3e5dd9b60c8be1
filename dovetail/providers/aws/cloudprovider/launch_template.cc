#include "dovetail/providers/aws/cloudprovider/launch_template.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::providers::aws {

namespace awsv1 = apis::aws::v1;
namespace v1 = apis::v1;

namespace {

std::string FeatureName(awsv1::FeatureState s) {
  return s == awsv1::FeatureState::kEnabled ? "enabled" : "disabled";
}

std::string TokensName(awsv1::HttpTokens t) {
  return t == awsv1::HttpTokens::kRequired ? "required" : "optional";
}

// Whole GiB of a volume size (EC2 takes GiB).
int64_t GiB(const Quantity& q) {
  const int64_t bytes = q.Value();
  constexpr int64_t kGiB = int64_t{1} << 30;
  return bytes / kGiB + (bytes % kGiB > 0 ? 1 : 0);
}

void Put(QueryParams& p, std::string key, std::string value) {
  p.emplace_back(std::move(key), std::move(value));
}

std::string Bool(bool b) { return b ? "true" : "false"; }

}  // namespace

awsv1::MetadataOptions MetadataOptionsFor(const awsv1::EC2NodeClassSpec& spec) {
  awsv1::MetadataOptions m = spec.metadata_options.value_or(awsv1::MetadataOptions{});
  if (!m.http_endpoint) m.http_endpoint = awsv1::FeatureState::kEnabled;
  if (!m.http_protocol_ipv6) m.http_protocol_ipv6 = awsv1::FeatureState::kDisabled;
  if (!m.http_put_response_hop_limit) m.http_put_response_hop_limit = 1;
  if (!m.http_tokens) m.http_tokens = awsv1::HttpTokens::kRequired;
  return m;
}

QueryParams CreateLaunchTemplateParams(std::string_view name, const LaunchTemplateSpec& spec) {
  QueryParams p;
  Put(p, "LaunchTemplateName", std::string(name));
  const std::string d = "LaunchTemplateData.";
  if (!spec.image_id.empty()) Put(p, d + "ImageId", spec.image_id);
  if (!spec.user_data.empty()) {
    Put(p, d + "UserData", absl::Base64Escape(AsAbsl(spec.user_data)));
  }
  if (!spec.instance_profile.empty()) Put(p, d + "IamInstanceProfile.Name", spec.instance_profile);
  if (spec.associate_public_ip_address.has_value()) {
    // Security groups move onto the primary interface when it is configured.
    Put(p, d + "NetworkInterface.1.DeviceIndex", "0");
    Put(p, d + "NetworkInterface.1.AssociatePublicIpAddress",
        Bool(*spec.associate_public_ip_address));
    for (size_t i = 0; i < spec.security_group_ids.size(); ++i) {
      Put(p, Cat(d, "NetworkInterface.1.SecurityGroupId.", i + 1), spec.security_group_ids[i]);
    }
  } else {
    for (size_t i = 0; i < spec.security_group_ids.size(); ++i) {
      Put(p, Cat(d, "SecurityGroupId.", i + 1), spec.security_group_ids[i]);
    }
  }
  const awsv1::MetadataOptions& m = spec.metadata_options;
  Put(p, d + "MetadataOptions.HttpEndpoint",
      FeatureName(m.http_endpoint.value_or(awsv1::FeatureState::kEnabled)));
  Put(p, d + "MetadataOptions.HttpProtocolIpv6",
      FeatureName(m.http_protocol_ipv6.value_or(awsv1::FeatureState::kDisabled)));
  Put(p, d + "MetadataOptions.HttpPutResponseHopLimit",
      Cat(m.http_put_response_hop_limit.value_or(1)));
  Put(p, d + "MetadataOptions.HttpTokens",
      TokensName(m.http_tokens.value_or(awsv1::HttpTokens::kRequired)));
  Put(p, d + "MetadataOptions.InstanceMetadataTags", "disabled");
  for (size_t i = 0; i < spec.block_device_mappings.size(); ++i) {
    const awsv1::BlockDeviceMapping& b = spec.block_device_mappings[i];
    const std::string bp = Cat(d, "BlockDeviceMapping.", i + 1, ".");
    if (b.device_name) Put(p, bp + "DeviceName", *b.device_name);
    if (!b.ebs) continue;
    const awsv1::BlockDevice& e = *b.ebs;
    if (e.delete_on_termination)
      Put(p, bp + "Ebs.DeleteOnTermination", Bool(*e.delete_on_termination));
    if (e.encrypted) Put(p, bp + "Ebs.Encrypted", Bool(*e.encrypted));
    if (e.iops) Put(p, bp + "Ebs.Iops", Cat(*e.iops));
    if (e.kms_key_id) Put(p, bp + "Ebs.KmsKeyId", *e.kms_key_id);
    if (e.snapshot_id) Put(p, bp + "Ebs.SnapshotId", *e.snapshot_id);
    if (e.throughput) Put(p, bp + "Ebs.Throughput", Cat(*e.throughput));
    if (e.volume_initialization_rate) {
      Put(p, bp + "Ebs.VolumeInitializationRate", Cat(*e.volume_initialization_rate));
    }
    if (e.volume_size) Put(p, bp + "Ebs.VolumeSize", Cat(GiB(*e.volume_size)));
    if (e.volume_type) Put(p, bp + "Ebs.VolumeType", *e.volume_type);
  }
  if (spec.detailed_monitoring) Put(p, d + "Monitoring.Enabled", "true");
  AddTagSpecifications(p, "LaunchTemplateData.TagSpecification",
                       {"instance", "volume", "network-interface"}, spec.tags);
  AddTagSpecifications(p, "TagSpecification", {"launch-template"}, spec.tags);
  return p;
}

std::string LaunchTemplateName(const LaunchTemplateSpec& spec) {
  // The parameters are already a canonical, ordered encoding of every field.
  const QueryParams params = CreateLaunchTemplateParams("", spec);
  uint64_t h = 14695981039346656037ull;
  auto mix = [&](std::string_view s) {
    for (const char c : s) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ull;
    }
    h ^= 0xff;  // separator
    h *= 1099511628211ull;
  };
  for (const auto& [k, v] : params) {
    mix(k);
    mix(v);
  }
  return Cat(kLaunchTemplateNamePrefix, absl::StrFormat("%016x", h));
}

std::map<std::string, std::string> LaunchTags(const std::map<std::string, std::string>& user_tags,
                                              std::string_view cluster_name,
                                              std::string_view node_pool,
                                              std::string_view node_claim,
                                              std::string_view node_claim_uid,
                                              std::string_view node_class) {
  std::map<std::string, std::string> tags;
  if (!node_claim.empty()) tags["Name"] = std::string(node_claim);
  for (const auto& [k, v] : user_tags) tags[k] = v;
  tags[Cat(v1::kTagClusterPrefix, cluster_name)] = "owned";
  tags[std::string(v1::kTagEksClusterName)] = std::string(cluster_name);
  tags[std::string(v1::kTagNodePool)] = std::string(node_pool);
  tags[std::string(v1::kTagNodeClass)] = std::string(node_class);
  if (!node_claim.empty()) tags[std::string(v1::kTagNodeClaim)] = std::string(node_claim);
  if (!node_claim_uid.empty()) tags[std::string(kTagNodeClaimUid)] = std::string(node_claim_uid);
  return tags;
}

absl::Status ValidateUserTags(const std::map<std::string, std::string>& tags) {
  for (const auto& [k, v] : tags) {
    if (k.empty()) return absl::InvalidArgumentError("tag keys must not be empty");
    if (k.starts_with(v1::kTagClusterPrefix) || k == v1::kTagNodePool || k == v1::kTagNodeClaim ||
        k == v1::kTagNodeClass || k == v1::kTagEksClusterName || k == kTagNodeClaimUid) {
      return absl::InvalidArgumentError(Cat("tag key \"", k, "\" is restricted"));
    }
  }
  return absl::OkStatus();
}

void AddTagSpecifications(QueryParams& params, std::string_view prefix,
                          const std::vector<std::string>& resource_types,
                          const std::map<std::string, std::string>& tags) {
  if (tags.empty()) return;
  for (size_t i = 0; i < resource_types.size(); ++i) {
    const std::string sp = Cat(prefix, ".", i + 1, ".");
    params.emplace_back(sp + "ResourceType", resource_types[i]);
    size_t j = 1;
    for (const auto& [k, v] : tags) {
      params.emplace_back(Cat(sp, "Tag.", j, ".Key"), k);
      params.emplace_back(Cat(sp, "Tag.", j, ".Value"), v);
      ++j;
    }
  }
}

}  // namespace dovetail::providers::aws
