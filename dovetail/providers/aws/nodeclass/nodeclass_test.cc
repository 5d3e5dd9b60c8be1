// Unit tests of the EC2NodeClass resolvers (on canned Describe* results), the alias parameter
// paths, the AMI choice, the conditions and the nodeclass hash.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/providers/aws/nodeclass/conditions.h"
#include "dovetail/providers/aws/nodeclass/instance_profile.h"
#include "dovetail/providers/aws/nodeclass/launch_templates.h"
#include "dovetail/providers/aws/nodeclass/resolvers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::providers::aws::nodeclass {
namespace {

namespace core = apis::core;
using ::testing::ElementsAre;

std::vector<std::pair<std::string, std::vector<std::string>>> Flat(const DescribeQuery& q) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const Filter& f : q.filters) out.push_back({f.name, f.values});
  return out;
}

using FilterPair = std::pair<std::string, std::vector<std::string>>;

TEST(SubnetQueriesTest, OneQueryPerTermWithTagsAndWildcardAndId) {
  std::vector<awsv1::SubnetSelectorTerm> terms = {
      {.tags = {{"karpenter.sh/discovery", "prod"}, {"tier", "*"}}},
      {.id = "subnet-0123"},
  };
  const std::vector<DescribeQuery> q = SubnetQueries(terms);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_THAT(Flat(q[0]), ElementsAre(FilterPair{"tag:karpenter.sh/discovery", {"prod"}},
                                      FilterPair{"tag-key", {"tier"}}));
  EXPECT_THAT(Flat(q[1]), ElementsAre(FilterPair{"subnet-id", {"subnet-0123"}}));
}

TEST(SecurityGroupQueriesTest, IdNameAndTags) {
  std::vector<awsv1::SecurityGroupSelectorTerm> terms = {
      {.id = "sg-1"}, {.name = "nodes"}, {.tags = {{"team", "a"}}}};
  const std::vector<DescribeQuery> q = SecurityGroupQueries(terms);
  ASSERT_EQ(q.size(), 3u);
  EXPECT_THAT(Flat(q[0]), ElementsAre(FilterPair{"group-id", {"sg-1"}}));
  EXPECT_THAT(Flat(q[1]), ElementsAre(FilterPair{"group-name", {"nodes"}}));
  EXPECT_THAT(Flat(q[2]), ElementsAre(FilterPair{"tag:team", {"a"}}));
}

TEST(ImageQueriesTest, NameDefaultsOwnersToSelfAndAmazonAndAliasesAreSkipped) {
  std::vector<awsv1::AMISelectorTerm> terms = {
      {.alias = "al2023@latest"}, {.name = "my-ami-*"}, {.name = "theirs", .owner = "123456789012"},
      {.tags = {{"ami", "*"}}},   {.id = "ami-1"},      {.ssm_parameter = "/my/param"},
  };
  const std::vector<DescribeQuery> q = ImageQueries(terms);
  ASSERT_EQ(q.size(), 4u);
  EXPECT_THAT(Flat(q[0]), ElementsAre(FilterPair{"name", {"my-ami-*"}}));
  EXPECT_THAT(q[0].owners, ElementsAre("self", "amazon"));
  EXPECT_THAT(q[1].owners, ElementsAre("123456789012"));
  EXPECT_THAT(Flat(q[2]), ElementsAre(FilterPair{"tag-key", {"ami"}}));
  EXPECT_TRUE(q[2].owners.empty());
  EXPECT_THAT(Flat(q[3]), ElementsAre(FilterPair{"image-id", {"ami-1"}}));
}

TEST(CapacityReservationQueriesTest, TermsFilterActiveReservations) {
  std::vector<awsv1::CapacityReservationSelectorTerm> terms = {
      {.id = "cr-1"},
      {.tags = {{"team", "a"}}, .owner_id = "123456789012", .instance_match_criteria = "targeted"},
  };
  const std::vector<DescribeQuery> q = CapacityReservationQueries(terms);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_THAT(Flat(q[0]), ElementsAre(FilterPair{"capacity-reservation-id", {"cr-1"}},
                                      FilterPair{"state", {"active"}}));
  EXPECT_THAT(Flat(q[1]),
              ElementsAre(FilterPair{"owner-id", {"123456789012"}},
                          FilterPair{"instance-match-criteria", {"targeted"}},
                          FilterPair{"tag:team", {"a"}}, FilterPair{"state", {"active"}}));
}

TEST(CapacityReservationsTest, ParsesItemsAndMarksCapacityBlocksExpiring) {
  constexpr char kXml[] = R"(<DescribeCapacityReservationsResponse>
  <capacityReservationSet>
    <item>
      <capacityReservationId>cr-b</capacityReservationId><ownerId>123456789012</ownerId>
      <instanceType>p5.48xlarge</instanceType><availabilityZone>us-east-1a</availabilityZone>
      <state>active</state><endDate>2026-11-30T12:30:00.000Z</endDate>
      <instanceMatchCriteria>targeted</instanceMatchCriteria>
      <reservationType>capacity-block</reservationType>
    </item>
    <item>
      <capacityReservationId>cr-a</capacityReservationId><ownerId>123456789012</ownerId>
      <instanceType>m5.large</instanceType><availabilityZone>us-east-1b</availabilityZone>
      <state>active</state><instanceMatchCriteria>open</instanceMatchCriteria>
      <interruptible>true</interruptible>
    </item>
    <item>
      <capacityReservationId>cr-c</capacityReservationId><state>expired</state>
    </item>
  </capacityReservationSet>
</DescribeCapacityReservationsResponse>)";
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_string(kXml));
  // 12:00: 30 minutes before the block's end, inside the 40 minute window.
  const absl::Time now = absl::FromUnixSeconds(1796040000);  // 2026-11-30T12:00:00Z
  auto found = ParseCapacityReservations(doc.document_element(), now);
  ASSERT_EQ(found.size(), 2u);
  found.push_back(found[0]);
  const auto status = CapacityReservationStatus(found);
  ASSERT_EQ(status.size(), 2u);
  EXPECT_EQ(status[0].id, "cr-a");
  EXPECT_EQ(status[0].reservation_type, "default");
  EXPECT_EQ(status[0].state, "active");
  EXPECT_EQ(status[0].interruptible, true);
  EXPECT_EQ(status[0].instance_match_criteria, "open");
  EXPECT_FALSE(status[0].end_time.has_value());
  EXPECT_EQ(status[1].id, "cr-b");
  EXPECT_EQ(status[1].reservation_type, "capacity-block");
  EXPECT_EQ(status[1].state, "expiring");
  EXPECT_EQ(status[1].instance_type, "p5.48xlarge");
  EXPECT_EQ(status[1].availability_zone, "us-east-1a");
  EXPECT_EQ(status[1].owner_id, "123456789012");
  EXPECT_EQ(status[1].end_time, now + absl::Minutes(30));
  // An hour earlier the block is still active.
  auto earlier = ParseCapacityReservations(doc.document_element(), now - absl::Hours(1));
  EXPECT_EQ(earlier[0].state, "active");
}

TEST(SubnetStatusTest, DeduplicatesAndSortsByAvailableAddresses) {
  std::vector<Ec2Subnet> found = {
      {.subnet_id = "subnet-b",
       .availability_zone = "us-east-1b",
       .availability_zone_id = "use1-az2",
       .available_ip_address_count = 10},
      {.subnet_id = "subnet-a",
       .availability_zone = "us-east-1a",
       .availability_zone_id = "use1-az1",
       .available_ip_address_count = 200},
      {.subnet_id = "subnet-b",
       .availability_zone = "us-east-1b",
       .availability_zone_id = "use1-az2",
       .available_ip_address_count = 10},
      {.subnet_id = "subnet-c",
       .availability_zone = "us-east-1c",
       .available_ip_address_count = 10},
  };
  const std::vector<awsv1::Subnet> status = SubnetStatus(found);
  ASSERT_EQ(status.size(), 3u);
  EXPECT_EQ(status[0].id, "subnet-a");
  EXPECT_EQ(status[0].zone, "us-east-1a");
  EXPECT_EQ(status[0].zone_id, "use1-az1");
  EXPECT_EQ(status[1].id, "subnet-b");
  EXPECT_EQ(status[2].id, "subnet-c");
}

TEST(SecurityGroupStatusTest, DeduplicatesById) {
  const auto status = SecurityGroupStatus({{.group_id = "sg-2", .group_name = "b"},
                                           {.group_id = "sg-1", .group_name = "a"},
                                           {.group_id = "sg-2", .group_name = "b"}});
  ASSERT_EQ(status.size(), 2u);
  EXPECT_EQ(status[0].id, "sg-1");
  EXPECT_EQ(status[0].name, "a");
  EXPECT_EQ(status[1].id, "sg-2");
}

TEST(AmiAliasTest, ParsesFamiliesAndRejectsBadAliases) {
  auto al2023 = ParseAmiAlias("al2023@latest");
  ASSERT_TRUE(al2023.ok());
  EXPECT_EQ(al2023->family, awsv1::AMIFamily::kAL2023);
  EXPECT_EQ(al2023->version, "latest");
  auto pinned = ParseAmiAlias("bottlerocket@v1.20.3");
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ(pinned->family, awsv1::AMIFamily::kBottlerocket);
  EXPECT_EQ(ParseAmiAlias("ubuntu@latest").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseAmiAlias("al2023").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseAmiAlias("windows2022@v1").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ParseAmiAlias("windows2022@latest").ok());
}

std::vector<std::string> Paths(const std::vector<AliasParameter>& ps) {
  std::vector<std::string> out;
  for (const auto& p : ps) out.push_back(p.path);
  return out;
}

TEST(AliasParametersTest, Al2023LatestAndPinned) {
  auto latest = AliasParameters({awsv1::AMIFamily::kAL2023, "latest"}, "1.34");
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_THAT(
      Paths(*latest),
      ElementsAre(
          "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/"
          "image_id",
          "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/nvidia/recommended/"
          "image_id",
          "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/neuron/recommended/"
          "image_id",
          "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/standard/recommended/"
          "image_id",
          "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/nvidia/recommended/"
          "image_id"));
  EXPECT_EQ((*latest)[0].arch, "amd64");
  EXPECT_EQ((*latest)[3].arch, "arm64");
  EXPECT_THAT((*latest)[1].variants, ElementsAre(AmiVariant::kNvidia));
  auto pinned = AliasParameters({awsv1::AMIFamily::kAL2023, "v20240807"}, "1.30");
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ((*pinned)[0].path,
            "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/"
            "amazon-eks-node-al2023-x86_64-standard-1.30-v20240807/image_id");
}

TEST(AliasParametersTest, Al2GpuServesNvidiaAndNeuronAndIsRefusedFrom133) {
  auto al2 = AliasParameters({awsv1::AMIFamily::kAL2, "latest"}, "1.32");
  ASSERT_TRUE(al2.ok()) << al2.status();
  EXPECT_THAT(Paths(*al2),
              ElementsAre("/aws/service/eks/optimized-ami/1.32/amazon-linux-2/recommended/image_id",
                          "/aws/service/eks/optimized-ami/1.32/amazon-linux-2-arm64/recommended/"
                          "image_id",
                          "/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/recommended/"
                          "image_id"));
  EXPECT_THAT((*al2)[2].variants, ElementsAre(AmiVariant::kNvidia, AmiVariant::kNeuron));
  auto pinned = AliasParameters({awsv1::AMIFamily::kAL2, "v20240807"}, "1.30");
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ((*pinned)[1].path,
            "/aws/service/eks/optimized-ami/1.30/amazon-linux-2-arm64/"
            "amazon-eks-arm64-node-1.30-v20240807/image_id");
  EXPECT_EQ(AliasParameters({awsv1::AMIFamily::kAL2, "latest"}, "1.33").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AliasParametersTest, BottlerocketAndWindows) {
  auto br = AliasParameters({awsv1::AMIFamily::kBottlerocket, "v1.20.3"}, "1.31");
  ASSERT_TRUE(br.ok());
  EXPECT_THAT(Paths(*br),
              ElementsAre("/aws/service/bottlerocket/aws-k8s-1.31/x86_64/1.20.3/image_id",
                          "/aws/service/bottlerocket/aws-k8s-1.31-nvidia/x86_64/1.20.3/image_id",
                          "/aws/service/bottlerocket/aws-k8s-1.31/arm64/1.20.3/image_id",
                          "/aws/service/bottlerocket/aws-k8s-1.31-nvidia/arm64/1.20.3/image_id"));
  auto br_latest = AliasParameters({awsv1::AMIFamily::kBottlerocket, "latest"}, "1.31");
  ASSERT_TRUE(br_latest.ok());
  EXPECT_EQ((*br_latest)[0].path, "/aws/service/bottlerocket/aws-k8s-1.31/x86_64/latest/image_id");
  auto win = AliasParameters({awsv1::AMIFamily::kWindows2022, "latest"}, "1.31");
  ASSERT_TRUE(win.ok());
  EXPECT_THAT(Paths(*win), ElementsAre("/aws/service/ami-windows-latest/"
                                       "Windows_Server-2022-English-Core-EKS_Optimized-1.31/"
                                       "image_id"));
  EXPECT_EQ((*win)[0].arch, "amd64");
  EXPECT_EQ(AliasParameters({awsv1::AMIFamily::kAL2023, "latest"}, "latest").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(VariantRequirementsTest, StandardExcludesAcceleratorsNvidiaAndNeuronNeedThem) {
  const auto standard = VariantRequirements("amd64", AmiVariant::kStandard);
  ASSERT_EQ(standard.size(), 3u);
  EXPECT_EQ(standard[0].key, apis::v1::kLabelArch);
  EXPECT_EQ(standard[0].op, core::SelectorOperator::kIn);
  EXPECT_THAT(standard[0].values, ElementsAre("amd64"));
  EXPECT_EQ(standard[1].key, apis::v1::kLabelInstanceGpuCount);
  EXPECT_EQ(standard[1].op, core::SelectorOperator::kDoesNotExist);
  EXPECT_EQ(standard[2].key, apis::v1::kLabelInstanceAcceleratorCount);
  EXPECT_EQ(standard[2].op, core::SelectorOperator::kDoesNotExist);
  const auto nvidia = VariantRequirements("arm64", AmiVariant::kNvidia);
  ASSERT_EQ(nvidia.size(), 2u);
  EXPECT_EQ(nvidia[1].key, apis::v1::kLabelInstanceGpuCount);
  EXPECT_EQ(nvidia[1].op, core::SelectorOperator::kExists);
  const auto neuron = VariantRequirements("amd64", AmiVariant::kNeuron);
  ASSERT_EQ(neuron.size(), 2u);
  EXPECT_EQ(neuron[1].key, apis::v1::kLabelInstanceAcceleratorCount);
  EXPECT_EQ(neuron[1].op, core::SelectorOperator::kExists);
}

Ec2Image Image(std::string id, std::string name, std::string created, std::string deprecated = "") {
  return {.image_id = std::move(id),
          .name = std::move(name),
          .architecture = "x86_64",
          .creation_date = std::move(created),
          .deprecation_time = std::move(deprecated)};
}

TEST(SelectAmisTest, NewestNonDeprecatedPerRequirementSet) {
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);  // 2027-01-15
  const auto amd64 = VariantRequirements("amd64", AmiVariant::kStandard);
  const auto arm64 = VariantRequirements("arm64", AmiVariant::kStandard);
  const auto gpu = VariantRequirements("amd64", AmiVariant::kNvidia);
  std::vector<AmiCandidate> candidates = {
      {Image("ami-old", "old", "2024-01-01T00:00:00.000Z"), amd64},
      // Newest, but deprecated already.
      {Image("ami-newest-deprecated", "n", "2026-06-01T00:00:00.000Z", "2026-12-01T00:00:00Z"),
       amd64},
      {Image("ami-mid", "mid", "2025-01-01T00:00:00.000Z"), amd64},
      // Deprecation in the future: not deprecated yet.
      {Image("ami-arm", "arm", "2025-02-01T00:00:00.000Z", "2030-01-01T00:00:00Z"), arm64},
      // Only deprecated images: the newest deprecated one is kept, flagged.
      {Image("ami-gpu-1", "g1", "2023-01-01T00:00:00.000Z", "2024-01-01T00:00:00Z"), gpu},
      {Image("ami-gpu-2", "g2", "2023-06-01T00:00:00.000Z", "2024-01-01T00:00:00Z"), gpu},
      // Same creation date: the smaller name wins.
      {Image("ami-z", "b-name", "2025-01-01T00:00:00.000Z"),
       VariantRequirements("arm64", AmiVariant::kNeuron)},
      {Image("ami-y", "a-name", "2025-01-01T00:00:00.000Z"),
       VariantRequirements("arm64", AmiVariant::kNeuron)},
  };
  const std::vector<awsv1::AMI> amis = SelectAmis(candidates, now);
  ASSERT_EQ(amis.size(), 4u);
  std::set<std::string> ids;
  for (const auto& a : amis) ids.insert(a.id);
  EXPECT_EQ(ids, (std::set<std::string>{"ami-mid", "ami-arm", "ami-gpu-2", "ami-y"}));
  EXPECT_EQ(amis[0].id, "ami-arm");  // newest first
  for (const auto& a : amis) {
    EXPECT_EQ(a.deprecated, a.id == "ami-gpu-2") << a.id;
    if (a.id == "ami-mid") {
      EXPECT_EQ(a.name, "mid");
      EXPECT_EQ(a.requirements, amd64);
    }
  }
}

TEST(KubernetesMinorVersionTest, StripsSuffixes) {
  EXPECT_EQ(*KubernetesMinorVersion("1", "34"), "1.34");
  EXPECT_EQ(*KubernetesMinorVersion("1", "30+"), "1.30");
  EXPECT_FALSE(KubernetesMinorVersion("", "30").ok());
}

TEST(NodeClassConditionsTest, ReadyFollowsDependents) {
  std::vector<core::Condition> conditions;
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  NodeClassConditions c(conditions, 2, t0);
  c.SetTrue(kConditionSubnetsReady);
  const core::Condition* ready = c.Get(kConditionReady);
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->status, core::ConditionStatus::kUnknown);
  EXPECT_EQ(ready->reason, kReasonReconcilingDependents);
  c.SetFalse(kConditionSecurityGroupsReady, kReasonSecurityGroupsNotFound, "none");
  ready = c.Get(kConditionReady);
  EXPECT_EQ(ready->status, core::ConditionStatus::kFalse);
  EXPECT_EQ(ready->reason, kReasonUnhealthyDependents);
  EXPECT_TRUE(absl::StrContains(ready->message, "SecurityGroupsReady=False")) << ready->message;
  for (std::string_view type : kDependents) c.SetTrue(type);
  ready = c.Get(kConditionReady);
  EXPECT_EQ(ready->status, core::ConditionStatus::kTrue);
  EXPECT_EQ(ready->reason, "Ready");
  EXPECT_EQ(ready->observed_generation, 2);
  EXPECT_EQ(c.Get(kConditionSubnetsReady)->last_transition_time, t0);

  // A later generation: the old True conditions no longer count until set again.
  NodeClassConditions next(conditions, 3, t0 + absl::Seconds(5));
  EXPECT_FALSE(next.IsTrue(kConditionSubnetsReady));
  next.SetTrue(kConditionSubnetsReady);
  // Status unchanged: the transition time stays.
  EXPECT_EQ(next.Get(kConditionSubnetsReady)->last_transition_time, t0);
  EXPECT_EQ(next.Get(kConditionReady)->status, core::ConditionStatus::kUnknown);
}

TEST(NewUuidTest, IsVersion4AndUnique) {
  const std::string a = NewUuid(), b = NewUuid();
  EXPECT_NE(a, b);
  ASSERT_EQ(a.size(), 36u);
  EXPECT_EQ(a[8], '-');
  EXPECT_EQ(a[14], '4');
  EXPECT_TRUE(a[19] == '8' || a[19] == '9' || a[19] == 'a' || a[19] == 'b') << a;
}

TEST(LaunchTemplateGc, ObsoleteWhenTheStatusNoLongerProducesTheTemplate) {
  awsv1::EC2NodeClassStatus status;
  status.amis = {{.id = "ami-new"}, {.id = "ami-gpu"}};
  status.security_groups = {{.id = "sg-b"}, {.id = "sg-a"}};
  status.instance_profile = "profile";
  LaunchTemplateFacts facts{
      .image_id = "ami-gpu", .security_group_ids = {"sg-a", "sg-b"}, .instance_profile = "profile"};
  EXPECT_EQ(ObsoleteReason(facts, status), "");
  LaunchTemplateFacts old_image = facts;
  old_image.image_id = "ami-old";
  EXPECT_THAT(ObsoleteReason(old_image, status), ::testing::HasSubstr("ami-old"));
  LaunchTemplateFacts groups = facts;
  groups.security_group_ids = {"sg-a"};
  EXPECT_THAT(ObsoleteReason(groups, status), ::testing::HasSubstr("security groups"));
  LaunchTemplateFacts profile = facts;
  profile.instance_profile = "old-profile";
  EXPECT_THAT(ObsoleteReason(profile, status), ::testing::HasSubstr("instance profile"));
  // Unresolved status never condemns a template.
  EXPECT_EQ(ObsoleteReason(old_image, awsv1::EC2NodeClassStatus{}), "");
}

}  // namespace
}  // namespace dovetail::providers::aws::nodeclass
