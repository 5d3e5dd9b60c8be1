// IamClient: the IAM instance-profile calls of the EC2NodeClass `role` path
// (docs/aws-provider.md), in the Query protocol (API 2010-05-08; global endpoint
// iam.amazonaws.com, requests signed for us-east-1 — endpoints.h). Responses become plain structs;
// Query() is the untyped escape hatch (tests create roles through it).
//
// Also here, as pure functions: the managed instance profile's name, IAM path and tags as
// upstream derives them, so a profile Dovetail creates is the one Karpenter would have created
// and vice versa.
//
// Errors: those of AwsClient with IAM's code kept: NoSuchEntity => kNotFound,
// EntityAlreadyExists and LimitExceeded => kInvalidArgument (branch on AwsErrorCode()).
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/providers/aws/aws_client.h"
#include "dovetail/providers/aws/query_protocol.h"

namespace dovetail::providers::aws {

inline constexpr std::string_view kIamApiVersion = "2010-05-08";

using IamTags = std::map<std::string, std::string>;

struct IamRole {
  std::string role_name;
  std::string role_id;
  std::string arn;
  std::string path;
};

struct IamInstanceProfile {
  std::string name;
  std::string id;
  std::string arn;
  std::string path;
  std::string create_date;     // ISO 8601 as IAM gives it
  std::vector<IamRole> roles;  // at most one
  IamTags tags;
};

class IamClient {
 public:
  explicit IamClient(AwsClient& client) : client_(client) {}

  absl::StatusOr<std::unique_ptr<pugi::xml_document>> Query(std::string_view action,
                                                            const QueryParams& params);

  // `path` "/" when empty. Errors: EntityAlreadyExists when the name is taken.
  absl::StatusOr<IamInstanceProfile> CreateInstanceProfile(std::string_view name,
                                                           std::string_view path,
                                                           const IamTags& tags);
  absl::StatusOr<IamInstanceProfile> GetInstanceProfile(std::string_view name);
  // `role_name` without a path (RoleNameWithoutPath). Errors: LimitExceeded when the profile
  // already has a role; NoSuchEntity when the role or the profile is missing.
  absl::Status AddRoleToInstanceProfile(std::string_view profile_name, std::string_view role_name);
  absl::Status RemoveRoleFromInstanceProfile(std::string_view profile_name,
                                             std::string_view role_name);
  // Errors: DeleteConflict while a role is still attached.
  absl::Status DeleteInstanceProfile(std::string_view name);
  absl::Status TagInstanceProfile(std::string_view name, const IamTags& tags);
  // Following Marker to the last page.
  absl::StatusOr<std::vector<IamInstanceProfile>> ListInstanceProfilesForRole(
      std::string_view role_name);
  // Profiles whose path starts with `path_prefix` ("/karpenter/<region>/<cluster>/" lists a
  // cluster's managed profiles), checked again on the answer (a server may ignore PathPrefix).
  // Following Marker to the last page.
  absl::StatusOr<std::vector<IamInstanceProfile>> ListInstanceProfiles(
      std::string_view path_prefix);

 private:
  absl::Status Paginate(std::string_view action, const QueryParams& params,
                        std::vector<IamInstanceProfile>& out);

  AwsClient& client_;
};

// The <InstanceProfile> element of a response.
IamInstanceProfile ParseInstanceProfile(const pugi::xml_node& node);

// The managed instance profile's name: "<cluster>_<FNV-1 (apis::hash::Fnv1, what upstream's struct
// hash gives for a plain string) of region + nodeclass name + suffix, in
// decimal>". Upstream passes a fresh UUID as `suffix` so a role change yields a new profile; an
// empty suffix gives the name of Karpenter releases before that (needed to find and collect
// their profiles).
std::string InstanceProfileName(std::string_view cluster_name, std::string_view region,
                                std::string_view nodeclass_name, std::string_view suffix);
// "/karpenter/<region>/<cluster>/<nodeclass uid>/".
std::string InstanceProfilePath(std::string_view region, std::string_view cluster_name,
                                std::string_view nodeclass_uid);
// The nodeclass's spec.tags overlaid with kubernetes.io/cluster/<cluster>=owned,
// eks:eks-cluster-name, karpenter.k8s.aws/ec2nodeclass and topology.kubernetes.io/region (the
// tags the controller IAM policy conditions on).
IamTags InstanceProfileTags(std::string_view cluster_name, std::string_view region,
                            std::string_view nodeclass_name, const IamTags& spec_tags);
// "path/to/Role" => "Role": AddRoleToInstanceProfile takes a bare role name.
std::string_view RoleNameWithoutPath(std::string_view role);

}  // namespace dovetail::providers::aws
