// Launch template garbage collection for an EC2NodeClass (docs/aws-provider.md).
//
// The AwsCloudProvider creates content-addressed launch templates karpenter.k8s.aws/<hash>, tagged
// (launch_template.h LaunchTags) with eks:eks-cluster-name=<cluster>,
// kubernetes.io/cluster/<cluster>=owned, karpenter.k8s.aws/ec2nodeclass=<class> and
// karpenter.sh/nodepool=<pool>. This file finds them again and deletes them:
//   - every template of a class when the class is deleted (upstream's DeleteAll, run by the
//     EC2NodeClass finalizer);
//   - periodically, the templates the class can no longer produce: upstream deletes a template when
//     its 1-minute cache entry expires unused; Dovetail instead compares each template's latest
//     version with the class's resolved status: an image no longer in status.amis, a security
//     group set other than status.securityGroups, or an instance profile other than
//     status.instanceProfile means no launch will name that template again (its name hashes those
//     fields). A launch racing with the deletion sees LaunchTemplate NotFound, which the cloud
//     provider answers by creating the template again and retrying once.
// Only templates whose name starts with karpenter.k8s.aws/ and whose tags name both the cluster
// and the class are touched (the tags are checked again after the server-side filter).
//
// Free functions over an Ec2Client; thread-safe as it is.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/providers/aws/ec2_client.h"

namespace dovetail::providers::aws::nodeclass {

struct OwnedLaunchTemplate {
  std::string id;
  std::string name;
  std::map<std::string, std::string> tags;
};

// What of a template's latest version decides whether it is obsolete.
struct LaunchTemplateFacts {
  std::string image_id;
  std::vector<std::string> security_group_ids;  // top level or on the primary interface
  std::string instance_profile;                 // IamInstanceProfile.Name
};

// DescribeLaunchTemplates filtered on tag:eks:eks-cluster-name=<cluster> and
// tag:karpenter.k8s.aws/ec2nodeclass=<node_class>, following NextToken; sorted by name.
absl::StatusOr<std::vector<OwnedLaunchTemplate>> ListLaunchTemplates(Ec2Client& ec2,
                                                                     std::string_view cluster,
                                                                     std::string_view node_class);

// DeleteLaunchTemplate for each (by id); a template already gone counts as deleted. Tries every
// template; returns how many were deleted, or the first error.
absl::StatusOr<int> DeleteLaunchTemplates(Ec2Client& ec2,
                                          const std::vector<OwnedLaunchTemplate>& templates);

// DescribeLaunchTemplateVersions of $Latest.
absl::StatusOr<LaunchTemplateFacts> DescribeLatestVersion(Ec2Client& ec2,
                                                          const OwnedLaunchTemplate& lt);

// Pure: "" when `facts` still fit the class's status, else why the template is obsolete. Status
// that is not fully resolved (no AMIs, no security groups, no instance profile) never makes a
// template obsolete.
std::string ObsoleteReason(const LaunchTemplateFacts& facts,
                           const apis::aws::v1::EC2NodeClassStatus& status);

// ListLaunchTemplates, then DeleteLaunchTemplates of those ObsoleteReason names; a template whose
// version cannot be read is kept. Returns how many were deleted.
absl::StatusOr<int> CollectObsoleteLaunchTemplates(Ec2Client& ec2, std::string_view cluster,
                                                   const apis::aws::v1::EC2NodeClass& node_class);

}  // namespace dovetail::providers::aws::nodeclass
