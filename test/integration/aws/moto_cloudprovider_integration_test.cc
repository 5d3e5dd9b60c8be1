// AwsCloudProvider against a real moto server: a VPC with subnets in two zones, a security group,
// an image moto ships, and an EC2NodeClass whose status is filled in here (the node class
// controller is not involved). Launches through CreateLaunchTemplate + CreateFleet (type instant),
// then Get / List / Delete by ownership tags.
//
// moto 5.2.5 implements CreateFleet type instant (on-demand and spot) but ignores ClientToken, so
// "Create twice with one NodeClaim UID launches one instance" exercises the provider's own
// lookup of an instance already tagged for the NodeClaim (on AWS the ClientToken also holds).
#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/aws_catalog.h"
#include "dovetail/cloudprovider/errors.h"
#include "dovetail/providers/aws/cloudprovider/aws_cloud_provider.h"
#include "dovetail/providers/aws/ec2_client.h"
#include "dovetail/providers/aws/nodeclass/launch_templates.h"
#include "gtest/gtest.h"
#include "test/integration/aws/moto_env.h"
#include "test/integration/aws/moto_provider.h"

namespace dovetail::providers::aws {
namespace {

namespace awsv1 = apis::aws::v1;
namespace core = apis::core;
namespace v1 = apis::v1;
namespace cp = ::dovetail::cloudprovider;
using testing::MotoConnection;

constexpr char kCluster[] = "moto-cluster";

// The value at `key`, or "<missing key>" (a readable failure instead of an exception).
template <typename Map>
std::string At(const Map& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? "<missing " + key + ">" : it->second;
}

class MotoCloudProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(testing::MotoEndpoint().empty()) << "DOVETAIL_MOTO_DIR/endpoint missing";
    client_ = aws_connection_.Client(kEc2);
    ec2_ = std::make_unique<Ec2Client>(*client_);

    const std::string vpc =
        Text(Ec2("CreateVpc", {{"CidrBlock", "10.50.0.0/16"}})->document_element().child("vpc"),
             "vpcId");
    auto subnet = [&](const std::string& cidr, const std::string& zone) {
      auto doc =
          Ec2("CreateSubnet", {{"VpcId", vpc}, {"CidrBlock", cidr}, {"AvailabilityZone", zone}});
      return Text(doc->document_element().child("subnet"), "subnetId");
    };
    subnet_a_ = subnet("10.50.1.0/24", "us-east-1a");
    subnet_b_ = subnet("10.50.2.0/24", "us-east-1b");
    sg_ = Text(Ec2("CreateSecurityGroup", {{"GroupName", "nodes-" + std::to_string(rand())},
                                           {"GroupDescription", "nodes"},
                                           {"VpcId", vpc}})
                   ->document_element(),
               "groupId");
    auto images = ec2_->DescribeImages({{"architecture", {"x86_64"}}}, {}, {"amazon"});
    ASSERT_TRUE(images.ok()) << images.status();
    ASSERT_FALSE(images->empty());
    image_ = (*images)[0].image_id;

    node_class_.metadata.name = "default";
    node_class_.metadata.generation = 1;
    node_class_.metadata.annotations = {{"karpenter.k8s.aws/ec2nodeclass-hash", "42"},
                                        {"karpenter.k8s.aws/ec2nodeclass-hash-version", "v5"}};
    node_class_.spec.ami_family = awsv1::AMIFamily::kAL2023;
    node_class_.spec.tags = {{"team", "platform"}};
    node_class_.spec.user_data = "#!/bin/bash\necho user\n";
    node_class_.status.subnets = {{subnet_a_, "us-east-1a", "use1-az1"},
                                  {subnet_b_, "us-east-1b", "use1-az2"}};
    node_class_.status.security_groups = {{sg_, "nodes"}};
    node_class_.status.amis = {{.id = image_,
                                .name = "moto",
                                .requirements = {{.key = "kubernetes.io/arch",
                                                  .op = core::SelectorOperator::kIn,
                                                  .values = {"amd64"}}}}};
    node_class_.status.conditions = {
        {.type = "Ready", .status = core::ConditionStatus::kTrue, .observed_generation = 1}};

    provider_ = testing::MotoCloudProvider(*ec2_, ice_, aws_connection_.clock, &node_class_,
                                           kCluster, DOVETAIL_AWS_DATA_DIR);
    ASSERT_NE(provider_, nullptr);
  }

  std::unique_ptr<pugi::xml_document> Ec2(std::string_view action, const QueryParams& params) {
    auto doc = Ec2Client(*client_).Query(action, params);
    EXPECT_TRUE(doc.ok()) << action << ": " << doc.status();
    return doc.ok() ? std::move(*doc) : std::make_unique<pugi::xml_document>();
  }

  // Instances (any state) tagged karpenter.sh/nodeclaim=<name>.
  std::vector<Ec2Instance> Tagged(const std::string& claim) {
    QueryParams p;
    AddFilters(p, {{"tag:karpenter.sh/nodeclaim", {claim}}});
    return ParseDescribeInstances(Ec2("DescribeInstances", p)->document_element());
  }

  std::unique_ptr<pugi::xml_document> LatestVersion(const std::string& name) {
    return Ec2("DescribeLaunchTemplateVersions",
               {{"LaunchTemplateName", name}, {"LaunchTemplateVersion.1", "$Latest"}});
  }

  // The cluster's launch templates made by this test (their security group is this test's).
  std::vector<std::string> OurTemplates() {
    QueryParams lt;
    AddFilters(lt, {{"tag:kubernetes.io/cluster/moto-cluster", {"owned"}}});
    const std::unique_ptr<pugi::xml_document> listed = Ec2("DescribeLaunchTemplates", lt);
    std::vector<std::string> names;
    for (pugi::xml_node item :
         listed->document_element().child("launchTemplates").children("item")) {
      const std::string name = Text(item, "launchTemplateName");
      const std::unique_ptr<pugi::xml_document> version = LatestVersion(name);
      const pugi::xml_node data = version->document_element()
                                      .child("launchTemplateVersionSet")
                                      .child("item")
                                      .child("launchTemplateData");
      if (Items(data, "securityGroupIdSet") == std::vector<std::string>{sg_}) {
        names.push_back(name);
      }
    }
    return names;
  }

  Ec2Instance Describe(const std::string& id) {
    QueryParams p;
    AddList(p, "InstanceId", {id});
    auto found = ParseDescribeInstances(Ec2("DescribeInstances", p)->document_element());
    EXPECT_EQ(found.size(), 1u);
    return found.empty() ? Ec2Instance{} : found[0];
  }

  v1::NodeClaim Claim(const std::string& name, const std::string& capacity_type) {
    v1::NodeClaim c;
    c.metadata.name = name;
    c.metadata.uid = "uid-" + name + "-" + std::to_string(rand());
    c.metadata.labels = {{"karpenter.sh/nodepool", "default"}};
    c.spec.node_class_ref = v1::NodeClassReference{"karpenter.k8s.aws", "EC2NodeClass", "default"};
    c.spec.requirements = {
        {.key = "node.kubernetes.io/instance-type",
         .op = core::SelectorOperator::kIn,
         .values = {"m5.large", "m5.xlarge"}},
        {.key = "karpenter.sh/capacity-type",
         .op = core::SelectorOperator::kIn,
         .values = {capacity_type}},
        {.key = "karpenter.sh/nodepool", .op = core::SelectorOperator::kIn, .values = {"default"}}};
    c.spec.resources.requests = {{"cpu", Quantity::FromUnits(1)}};
    return c;
  }

  MotoConnection aws_connection_;
  std::unique_ptr<AwsClient> client_;
  std::unique_ptr<Ec2Client> ec2_;
  UnavailableOfferings ice_{aws_connection_.clock};
  std::string subnet_a_, subnet_b_, sg_, image_;
  awsv1::EC2NodeClass node_class_;
  std::unique_ptr<AwsCloudProvider> provider_;
};

TEST_F(MotoCloudProviderTest, OnDemandLaunchIsTaggedUsesTheTemplateAndIsIdempotent) {
  const v1::NodeClaim claim = Claim("od-1", "on-demand");
  auto launched = provider_->Create(claim);
  ASSERT_TRUE(launched.ok()) << launched.status();
  const std::string& pid = launched->status.provider_id;
  ASSERT_TRUE(absl::StartsWith(pid, "aws:///us-east-1")) << pid;
  const std::string id = *InstanceIdFromProviderId(pid);
  const auto& labels = launched->metadata.labels;
  EXPECT_EQ(At(labels, "karpenter.sh/capacity-type"), "on-demand");
  EXPECT_TRUE(At(labels, "node.kubernetes.io/instance-type") == "m5.large" ||
              labels.at("node.kubernetes.io/instance-type") == "m5.xlarge");
  EXPECT_TRUE(At(labels, "topology.kubernetes.io/zone") == "us-east-1a" ||
              labels.at("topology.kubernetes.io/zone") == "us-east-1b");
  EXPECT_TRUE(labels.contains("topology.k8s.aws/zone-id"));
  EXPECT_EQ(At(labels, "kubernetes.io/arch"), "amd64");
  EXPECT_EQ(launched->status.image_id, image_);
  EXPECT_FALSE(launched->status.capacity.empty());
  EXPECT_FALSE(launched->status.allocatable.empty());
  EXPECT_EQ(At(launched->metadata.annotations, "karpenter.k8s.aws/ec2nodeclass-hash"), "42");

  const Ec2Instance inst = Describe(id);
  EXPECT_EQ(inst.image_id, image_);
  EXPECT_TRUE(inst.subnet_id == subnet_a_ || inst.subnet_id == subnet_b_) << inst.subnet_id;
  EXPECT_EQ(At(inst.tags, "kubernetes.io/cluster/moto-cluster"), "owned");
  EXPECT_EQ(At(inst.tags, "karpenter.sh/nodepool"), "default");
  EXPECT_EQ(At(inst.tags, "karpenter.sh/nodeclaim"), "od-1");
  EXPECT_EQ(At(inst.tags, "karpenter.k8s.aws/ec2nodeclass"), "default");
  EXPECT_EQ(At(inst.tags, "eks:eks-cluster-name"), "moto-cluster");
  EXPECT_EQ(At(inst.tags, "Name"), "od-1");
  EXPECT_EQ(At(inst.tags, "team"), "platform");
  // moto's CreateFleet does not apply the launch template's SecurityGroupIds to the instance
  // (it reads a "GroupSet" key the template data never has), so the groups are checked on the
  // template below and attached here by hand for the drift checks.
  if (inst.security_group_ids.empty()) {
    Ec2("ModifyInstanceAttribute", {{"InstanceId", id}, {"GroupId.1", sg_}});
  }
  EXPECT_EQ(Describe(id).security_group_ids, std::vector<std::string>{sg_});

  // The launch template exists under its content-addressed name and carries our settings.
  const std::vector<std::string> names = OurTemplates();
  ASSERT_EQ(names.size(), 1u);
  EXPECT_TRUE(absl::StartsWith(names[0], "karpenter.k8s.aws/")) << names[0];
  auto versions = LatestVersion(names[0]);
  const pugi::xml_node data = versions->document_element()
                                  .child("launchTemplateVersionSet")
                                  .child("item")
                                  .child("launchTemplateData");
  EXPECT_EQ(Text(data, "imageId"), image_);
  EXPECT_EQ(Text(data.child("metadataOptions"), "httpTokens"), "required");
  EXPECT_EQ(Text(data.child("metadataOptions"), "httpPutResponseHopLimit"), "1");
  EXPECT_FALSE(Text(data, "userData").empty());
  EXPECT_EQ(Items(data, "securityGroupIdSet"), std::vector<std::string>{sg_});

  // Same NodeClaim again: no second instance, the same machine comes back.
  auto again = provider_->Create(claim);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->status.provider_id, pid);
  EXPECT_EQ(Tagged("od-1").size(), 1u);

  // Get and List see it.
  auto got = provider_->Get(pid);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->metadata.name, "od-1");
  EXPECT_EQ(At(got->metadata.labels, "karpenter.sh/capacity-type"), "on-demand");
  EXPECT_EQ(got->status.image_id, image_);
  auto listed = provider_->List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::set<std::string> pids;
  for (const auto& c : *listed) pids.insert(c.status.provider_id);
  EXPECT_TRUE(pids.contains(pid));

  // Not drifted; then the security groups change.
  v1::NodeClaim as_launched = *launched;
  auto drift = provider_->IsDrifted(as_launched);
  ASSERT_TRUE(drift.ok()) << drift.status();
  EXPECT_EQ(*drift, "");
  node_class_.status.security_groups.push_back({"sg-00000000", "other"});
  EXPECT_EQ(*provider_->IsDrifted(as_launched), "SecurityGroupDrift");
  node_class_.metadata.annotations["karpenter.k8s.aws/ec2nodeclass-hash"] = "43";
  EXPECT_EQ(*provider_->IsDrifted(as_launched), "NodeClassDrift");

  // Delete terminates; a second Delete is NotFound, and so are Get and List.
  ASSERT_TRUE(provider_->Delete(*launched).ok());
  const std::string state = Describe(id).state;
  EXPECT_TRUE(state == "shutting-down" || state == "terminated") << state;
  EXPECT_TRUE(cp::IsNodeClaimNotFound(provider_->Delete(*launched)));
  EXPECT_TRUE(cp::IsNodeClaimNotFound(provider_->Get(pid).status()));
  listed = provider_->List();
  ASSERT_TRUE(listed.ok());
  for (const auto& c : *listed) EXPECT_NE(c.status.provider_id, pid);
}

TEST_F(MotoCloudProviderTest, SpotLaunch) {
  auto launched = provider_->Create(Claim("spot-1", "spot"));
  ASSERT_TRUE(launched.ok()) << launched.status();
  EXPECT_EQ(At(launched->metadata.labels, "karpenter.sh/capacity-type"), "spot");
  const std::string id = *InstanceIdFromProviderId(launched->status.provider_id);
  const Ec2Instance inst = Describe(id);
  EXPECT_EQ(inst.lifecycle, "spot");
  EXPECT_EQ(At(inst.tags, "karpenter.sh/nodeclaim"), "spot-1");
  auto got = provider_->Get(launched->status.provider_id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(At(got->metadata.labels, "karpenter.sh/capacity-type"), "spot");
  EXPECT_TRUE(provider_->Delete(*launched).ok());
  EXPECT_TRUE(cp::IsNodeClaimNotFound(provider_->Delete(*launched)));
}

TEST_F(MotoCloudProviderTest, LaunchTemplateDeletedBehindOurBackIsCreatedAgain) {
  auto first = provider_->Create(Claim("lt-1", "on-demand"));
  ASSERT_TRUE(first.ok()) << first.status();
  const std::vector<std::string> before = OurTemplates();
  ASSERT_EQ(before.size(), 1u);
  for (const std::string& name : before)
    Ec2("DeleteLaunchTemplate", {{"LaunchTemplateName", name}});
  ASSERT_TRUE(OurTemplates().empty());
  // The provider still believes the template exists; CreateFleet fails, it re-creates, retries.
  auto second = provider_->Create(Claim("lt-2", "on-demand"));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(OurTemplates(), before);
  EXPECT_TRUE(provider_->Delete(*first).ok());
  EXPECT_TRUE(provider_->Delete(*second).ok());
}

// Launch template garbage collection (nodeclass/launch_templates.h) finds the provider's own
// templates by their tags, keeps the one the class still produces, deletes it once the class's
// AMI changed (the next launch makes the new one), and deletes all of them with the class.
TEST_F(MotoCloudProviderTest, LaunchTemplatesAreFoundByTagsAndCollected) {
  auto first = provider_->Create(Claim("gc-1", "on-demand"));
  ASSERT_TRUE(first.ok()) << first.status();
  const std::vector<std::string> ours = OurTemplates();
  ASSERT_EQ(ours.size(), 1u);
  auto listed = nodeclass::ListLaunchTemplates(*ec2_, kCluster, "default");
  ASSERT_TRUE(listed.ok()) << listed.status();
  auto has = [](const std::vector<nodeclass::OwnedLaunchTemplate>& lts, const std::string& name) {
    return std::any_of(lts.begin(), lts.end(), [&](const auto& lt) { return lt.name == name; });
  };
  EXPECT_TRUE(has(*listed, ours[0]));
  EXPECT_TRUE(nodeclass::ListLaunchTemplates(*ec2_, "other-cluster", "default")->empty());
  EXPECT_TRUE(nodeclass::ListLaunchTemplates(*ec2_, kCluster, "other-class")->empty());

  auto kept = nodeclass::CollectObsoleteLaunchTemplates(*ec2_, kCluster, node_class_);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(OurTemplates(), ours);

  auto images = ec2_->DescribeImages({{"architecture", {"x86_64"}}}, {}, {"amazon"});
  ASSERT_TRUE(images.ok() && images->size() >= 2);
  const std::string next =
      (*images)[0].image_id == image_ ? (*images)[1].image_id : (*images)[0].image_id;
  node_class_.status.amis[0].id = next;
  auto collected = nodeclass::CollectObsoleteLaunchTemplates(*ec2_, kCluster, node_class_);
  ASSERT_TRUE(collected.ok()) << collected.status();
  EXPECT_GE(*collected, 1);
  EXPECT_TRUE(OurTemplates().empty());

  auto second = provider_->Create(Claim("gc-2", "on-demand"));
  ASSERT_TRUE(second.ok()) << second.status();
  const std::vector<std::string> now = OurTemplates();
  ASSERT_EQ(now.size(), 1u);
  EXPECT_NE(now[0], ours[0]);

  listed = nodeclass::ListLaunchTemplates(*ec2_, kCluster, "default");
  ASSERT_TRUE(listed.ok()) << listed.status();
  auto deleted = nodeclass::DeleteLaunchTemplates(*ec2_, *listed);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_TRUE(nodeclass::ListLaunchTemplates(*ec2_, kCluster, "default")->empty());
  EXPECT_TRUE(provider_->Delete(*first).ok());
  EXPECT_TRUE(provider_->Delete(*second).ok());
}

TEST_F(MotoCloudProviderTest, InstancesWithoutOurTagsAreNeverListedOrDeleted) {
  auto run = [&](const std::vector<std::pair<std::string, std::string>>& tags) {
    QueryParams p{{"ImageId", image_},
                  {"MinCount", "1"},
                  {"MaxCount", "1"},
                  {"InstanceType", "m5.large"},
                  {"SubnetId", subnet_a_}};
    if (!tags.empty()) p.emplace_back("TagSpecification.1.ResourceType", "instance");
    for (size_t i = 0; i < tags.size(); ++i) {
      p.emplace_back("TagSpecification.1.Tag." + std::to_string(i + 1) + ".Key", tags[i].first);
      p.emplace_back("TagSpecification.1.Tag." + std::to_string(i + 1) + ".Value", tags[i].second);
    }
    auto doc = Ec2("RunInstances", p);
    return Text(doc->document_element().child("instancesSet").child("item"), "instanceId");
  };
  // No tags; the cluster tag without a nodepool; a nodepool of another cluster.
  const std::vector<std::string> foreign = {
      run({}), run({{"kubernetes.io/cluster/moto-cluster", "owned"}}),
      run({{"kubernetes.io/cluster/other", "owned"}, {"karpenter.sh/nodepool", "default"}})};
  auto listed = provider_->List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  for (const auto& c : *listed) {
    for (const std::string& id : foreign) EXPECT_FALSE(absl::EndsWith(c.status.provider_id, id));
  }
  for (const std::string& id : foreign) {
    v1::NodeClaim c;
    c.status.provider_id = "aws:///us-east-1a/" + id;
    EXPECT_TRUE(cp::IsNodeClaimNotFound(provider_->Get(c.status.provider_id).status()));
    EXPECT_TRUE(cp::IsNodeClaimNotFound(provider_->Delete(c)));
    EXPECT_EQ(Describe(id).state, "running") << id;
  }
}

TEST_F(MotoCloudProviderTest, NodeClassNotReadyAndInstanceTypes) {
  node_class_.status.conditions[0].status = core::ConditionStatus::kFalse;
  EXPECT_TRUE(cp::IsNodeClassNotReady(provider_->Create(Claim("nr-1", "on-demand")).status()));
  v1::NodePool pool;
  pool.metadata.name = "default";
  pool.spec.template_.spec.node_class_ref =
      v1::NodeClassReference{"karpenter.k8s.aws", "EC2NodeClass", "default"};
  EXPECT_TRUE(cp::IsNodeClassNotReady(provider_->GetInstanceTypes(pool).status()));
  EXPECT_TRUE(Tagged("nr-1").empty());

  node_class_.status.conditions[0].status = core::ConditionStatus::kTrue;
  auto catalog = provider_->GetInstanceTypes(pool);
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  EXPECT_GT(catalog->size(), 100u);
  const cp::InstanceType* m5 = catalog->Find("m5.large");
  ASSERT_NE(m5, nullptr);
  bool available_in_subnet_zone = false;
  for (const cp::Offering& o : m5->offerings()) {
    if (o.zone != "us-east-1a" && o.zone != "us-east-1b") {
      EXPECT_FALSE(o.available) << o.zone;  // no subnet there
    } else if (o.available) {
      available_in_subnet_zone = true;
    }
  }
  EXPECT_TRUE(available_in_subnet_zone);

  // ICE-cached offerings are unavailable.
  ice_.MarkUnavailable("InsufficientInstanceCapacity", "on-demand", "m5.large", "us-east-1a");
  catalog = provider_->GetInstanceTypes(pool);
  ASSERT_TRUE(catalog.ok());
  for (const cp::Offering& o : catalog->Find("m5.large")->offerings()) {
    if (o.zone == "us-east-1a" && o.capacity_type == "on-demand") {
      EXPECT_FALSE(o.available);
    }
  }
  EXPECT_EQ(provider_->Name(), "aws");
  EXPECT_EQ(provider_->RepairPolicies().size(), 7u);
}

}  // namespace
}  // namespace dovetail::providers::aws
