// Launch templates (docs/aws-provider.md): the resolved parameters of one launch — AMI,
// user data, block devices, IMDS options, security groups, instance profile, tags — and the
// content-addressed template name karpenter.k8s.aws/<hash> under which they are created once and
// reused. Also the tags every launched resource carries and the restricted-tag check.
//
// Pure functions and plain data; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/providers/aws/query_protocol.h"

namespace dovetail::providers::aws {

inline constexpr std::string_view kLaunchTemplateNamePrefix = "karpenter.k8s.aws/";

struct LaunchTemplateSpec {
  std::string image_id;
  std::string user_data;  // plain text; base64-encoded into the request
  std::vector<apis::aws::v1::BlockDeviceMapping> block_device_mappings;
  apis::aws::v1::MetadataOptions metadata_options;  // every field set (defaults applied)
  std::vector<std::string> security_group_ids;      // sorted
  std::string instance_profile;
  bool detailed_monitoring = false;
  std::optional<bool> associate_public_ip_address;
  std::map<std::string, std::string> tags;  // on the template and on instances/volumes/ENIs
};

// spec.metadataOptions with the defaults (httpEndpoint enabled, httpProtocolIPv6 disabled, hop
// limit 1, httpTokens required) for unset fields.
apis::aws::v1::MetadataOptions MetadataOptionsFor(const apis::aws::v1::EC2NodeClassSpec& spec);

// karpenter.k8s.aws/<16 hex digits>: FNV-1a 64 of a canonical encoding of every field of `spec`,
// so equal parameters share a template and any change names a new one.
std::string LaunchTemplateName(const LaunchTemplateSpec& spec);

// CreateLaunchTemplate parameters (LaunchTemplateName, LaunchTemplateData.*, TagSpecification for
// the template itself).
QueryParams CreateLaunchTemplateParams(std::string_view name, const LaunchTemplateSpec& spec);

// ---- tags ----

// Dovetail's own instance tag: the UID of the NodeClaim an instance was launched for, so that a
// NodeClaim deleted and created again under the same name never adopts, or shields from garbage
// collection, its predecessor's instance. Upstream Karpenter ignores it.
inline constexpr std::string_view kTagNodeClaimUid = "dovetail.sh/nodeclaim-uid";

// The tags of a launch: the node class's spec.tags, then Name=<nodeclaim> unless the user set
// Name, then the ownership tags kubernetes.io/cluster/<cluster>=owned, karpenter.sh/nodepool,
// karpenter.sh/nodeclaim, karpenter.k8s.aws/ec2nodeclass, eks:eks-cluster-name and, when
// `node_claim_uid` is set, dovetail.sh/nodeclaim-uid (these always win).
std::map<std::string, std::string> LaunchTags(const std::map<std::string, std::string>& user_tags,
                                              std::string_view cluster_name,
                                              std::string_view node_pool,
                                              std::string_view node_claim,
                                              std::string_view node_claim_uid,
                                              std::string_view node_class);

// InvalidArgument when a user tag key is empty or restricted: kubernetes.io/cluster/*,
// karpenter.sh/nodepool, karpenter.sh/nodeclaim, karpenter.k8s.aws/ec2nodeclass,
// eks:eks-cluster-name, dovetail.sh/nodeclaim-uid.
absl::Status ValidateUserTags(const std::map<std::string, std::string>& tags);

// TagSpecification.N.ResourceType / .Tag.M.Key / .Value for each resource type, under `prefix`
// ("TagSpecification" or "LaunchTemplateData.TagSpecification").
void AddTagSpecifications(QueryParams& params, std::string_view prefix,
                          const std::vector<std::string>& resource_types,
                          const std::map<std::string, std::string>& tags);

}  // namespace dovetail::providers::aws
