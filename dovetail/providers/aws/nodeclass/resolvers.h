// The EC2NodeClass selector terms turned into EC2/SSM queries, and the answers turned into the
// class's status (docs/aws-provider.md, "EC2NodeClass controller"). Two layers:
//  - pure functions (no I/O, unit-tested on canned Describe* results): one DescribeQuery per term
//    (terms are ORed, the fields of one term ANDed; a tag value "*" becomes a `tag-key` filter),
//    the SSM parameter paths of an AMI alias per architecture and variant, the requirements of a
//    variant, and the choice of the best image per requirement set;
//  - NodeClassResolver, which runs those queries with Ec2Client and SsmClient.
// The controller (nodeclass_controller.h) is the caller. Pure functions are thread-compatible;
// NodeClassResolver is thread-safe (the clients are).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/providers/aws/ec2_client.h"
#include "dovetail/providers/aws/ssm_client.h"

namespace dovetail::providers::aws::nodeclass {

namespace awsv1 = apis::aws::v1;

// One Describe* call: filters plus the Owner.N list (DescribeImages only).
struct DescribeQuery {
  std::vector<Filter> filters;
  std::vector<std::string> owners;
};

// id => `subnet-id`; tags => `tag:<k>` (value) or `tag-key` (value "*").
std::vector<DescribeQuery> SubnetQueries(const std::vector<awsv1::SubnetSelectorTerm>& terms);
// id => `group-id`; name => `group-name`; tags as for subnets.
std::vector<DescribeQuery> SecurityGroupQueries(
    const std::vector<awsv1::SecurityGroupSelectorTerm>& terms);
// The non-alias AMI terms: id => `image-id`; name => `name` (wildcards as EC2 has them) with owners
// "self", "amazon" unless the term names an owner; owner => Owner.1; tags as for subnets.
// ssmParameter terms are resolved through SSM first (see NodeClassResolver) and are skipped here.
std::vector<DescribeQuery> ImageQueries(const std::vector<awsv1::AMISelectorTerm>& terms);

// Capacity reservations, as upstream queries them: id => `capacity-reservation-id`; ownerID =>
// `owner-id`; instanceMatchCriteria => `instance-match-criteria`; tags as for subnets; every query
// also filters `state` = active.
std::vector<DescribeQuery> CapacityReservationQueries(
    const std::vector<awsv1::CapacityReservationSelectorTerm>& terms);
// The items of a DescribeCapacityReservations response: reservationType "default" unless EC2
// says capacity-block; state "expiring" for a capacity block from 40 minutes before its end
// (EC2 reclaims it at -30 min), else "active"; only active reservations are kept.
std::vector<awsv1::CapacityReservation> ParseCapacityReservations(const pugi::xml_node& root,
                                                                  absl::Time now);
// Deduplicated, sorted by id.
std::vector<awsv1::CapacityReservation> CapacityReservationStatus(
    std::vector<awsv1::CapacityReservation> found);

// Deduplicated by id; most available IP addresses first (upstream's order), then by id.
std::vector<awsv1::Subnet> SubnetStatus(const std::vector<Ec2Subnet>& found);
// Deduplicated, sorted by id.
std::vector<awsv1::SecurityGroup> SecurityGroupStatus(const std::vector<Ec2SecurityGroup>& found);

enum class AmiVariant { kStandard, kNvidia, kNeuron };

// A parsed alias term: family (al2, al2023, bottlerocket, windows2019/2022/2025) and version
// ("latest" or a pinned release such as "v20240807").
struct AmiAlias {
  awsv1::AMIFamily family;
  std::string version;
};
// Errors: InvalidArgument for an unknown family, a missing '@', or a pinned Windows version.
absl::StatusOr<AmiAlias> ParseAmiAlias(std::string_view alias);

// One public SSM parameter of an alias: the image it names serves `arch` ("amd64" / "arm64") and
// each of `variants`.
struct AliasParameter {
  std::string path;
  std::string arch;
  std::vector<AmiVariant> variants;
};
// The parameters upstream reads for an alias on Kubernetes `k8s_version` ("1.34"):
//   al2023: /aws/service/eks/optimized-ami/<k8s>/amazon-linux-2023/<x86_64|arm64>/<variant>/
//           <recommended | amazon-eks-node-al2023-<arch>-<variant>-<k8s>-<version>>/image_id
//           (x86_64: standard, nvidia, neuron; arm64: standard, nvidia);
//   al2:    /aws/service/eks/optimized-ami/<k8s>/amazon-linux-2[-arm64|-gpu]/
//           <recommended | amazon-eks[-arm64|-gpu]-node-<k8s>-<version>>/image_id
//           (-gpu serves nvidia and neuron; refused from Kubernetes 1.33 on);
//   bottlerocket: /aws/service/bottlerocket/aws-k8s-<k8s>[-nvidia]/<x86_64|arm64>/
//           <latest | version without its leading v>/image_id (the plain variant also serves
//           neuron);
//   windowsNNNN: /aws/service/ami-windows-latest/Windows_Server-NNNN-English-Core-EKS_Optimized-
//           <k8s>/image_id (amd64, standard).
// Errors: InvalidArgument (see ParseAmiAlias; al2 on >= 1.33; an unparseable k8s version).
absl::StatusOr<std::vector<AliasParameter>> AliasParameters(const AmiAlias& alias,
                                                            std::string_view k8s_version);

// kubernetes.io/arch In [arch], and: standard => instance-gpu-count and
// instance-accelerator-count DoesNotExist; nvidia => instance-gpu-count Exists; neuron =>
// instance-accelerator-count Exists.
std::vector<apis::core::NodeSelectorRequirement> VariantRequirements(std::string_view arch,
                                                                     AmiVariant variant);
// EC2's architecture name as the kubernetes.io/arch value ("x86_64" => "amd64", "arm64" =>
// "arm64"); empty for anything else (i386, x86_64_mac: not launchable by Karpenter).
std::string ArchLabel(std::string_view ec2_architecture);

// An image found for a requirement set.
struct AmiCandidate {
  Ec2Image image;
  std::vector<apis::core::NodeSelectorRequirement> requirements;
};
// Whether the image's deprecation time has passed at `now`.
bool IsDeprecated(const Ec2Image& image, absl::Time now);
// The best image per requirement set: not deprecated before deprecated, then the newest
// CreationDate, then the smaller name, then the smaller id. Sorted newest first, then by id.
std::vector<awsv1::AMI> SelectAmis(const std::vector<AmiCandidate>& candidates, absl::Time now);

// "1.34" from a /version answer's major and minor ("1", "34+").
absl::StatusOr<std::string> KubernetesMinorVersion(std::string_view major, std::string_view minor);

// Runs the queries above. Each method returns the resolved status entries; an empty result is
// not an error (the controller turns it into a False condition). Errors: the AWS errors of the
// calls (errors.h); a missing SSM parameter is skipped, not an error.
class NodeClassResolver {
 public:
  struct Options {
    // Prepended to every public SSM path ("/aws/service/..."). Empty in production; tests against
    // moto, which refuses to store parameters under /aws, use a prefix of their own.
    std::string ssm_path_prefix;
  };
  NodeClassResolver(Ec2Client& ec2, SsmClient& ssm, Options options)
      : ec2_(ec2), ssm_(ssm), options_(std::move(options)) {}

  absl::StatusOr<std::vector<awsv1::Subnet>> Subnets(const awsv1::EC2NodeClassSpec& spec);
  absl::StatusOr<std::vector<awsv1::SecurityGroup>> SecurityGroups(
      const awsv1::EC2NodeClassSpec& spec);
  // DescribeCapacityReservations per term, following nextToken.
  absl::StatusOr<std::vector<awsv1::CapacityReservation>> CapacityReservations(
      const awsv1::EC2NodeClassSpec& spec, absl::Time now);
  // Errors also: InvalidArgument for a bad alias (the controller reports it as AMIsReady=False).
  absl::StatusOr<std::vector<awsv1::AMI>> Amis(const awsv1::EC2NodeClassSpec& spec,
                                               std::string_view k8s_version, absl::Time now);

 private:
  Ec2Client& ec2_;
  SsmClient& ssm_;
  const Options options_;
};

}  // namespace dovetail::providers::aws::nodeclass
