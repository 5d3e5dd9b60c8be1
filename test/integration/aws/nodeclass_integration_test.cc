// The EC2NodeClass controller against moto (EC2, SSM, IAM) and a real kube-apiserver with the
// CRDs of charts/dovetail/crds: a VPC with tagged subnets and a security group, AMI alias
// parameters (under a test prefix: moto refuses to store parameters under /aws) pointing at moto's
// images, and an IAM role. Checks the resolved status and conditions, Ready=False with the reason
// for a selector matching nothing (and True once the spec is fixed), the managed instance profile
// in IAM (created with path and role, replaced and collected when the role changes, deleted with
// the class), that deletion waits for the class's NodeClaims, and launch template garbage
// collection (templates tagged as the cloud provider tags them: obsolete ones collected
// periodically, all of the class's deleted with it, other classes' and clusters' kept).
//
// The API server is shared with other integration tests: every assertion is about this test's
// objects; moto is this test's own.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/hash/drift_hash.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/event_recorder.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/kube/typed_client.h"
#include "dovetail/providers/aws/cloudprovider/launch_template.h"
#include "dovetail/providers/aws/ec2_client.h"
#include "dovetail/providers/aws/iam_client.h"
#include "dovetail/providers/aws/nodeclass/conditions.h"
#include "dovetail/providers/aws/nodeclass/launch_templates.h"
#include "dovetail/providers/aws/nodeclass/nodeclass_controller.h"
#include "dovetail/providers/aws/ssm_client.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/cluster_informers.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/aws/moto_env.h"
#include "test/integration/aws/no_cloud.h"
#include "test/integration/kube/crds.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::providers::aws::nodeclass {
namespace {

namespace core = apis::core;
using kube::testing::UniqueName;
using kube::testing::WaitFor;

constexpr char kCluster[] = "nc-it";
constexpr char kSsmPrefix[] = "/dovetail-it";
constexpr char kK8sVersion[] = "1.34";

using ::dovetail::testing::NoCloud;

const core::Condition* FindCondition(const awsv1::EC2NodeClass& c, std::string_view type) {
  for (const auto& cond : c.status.conditions) {
    if (cond.type == type) return &cond;
  }
  return nullptr;
}

bool ConditionIs(const awsv1::EC2NodeClass& c, std::string_view type, core::ConditionStatus s) {
  const core::Condition* cond = FindCondition(c, type);
  return cond != nullptr && cond->status == s;
}

class NodeClassIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(testing::MotoEndpoint().empty()) << "DOVETAIL_MOTO_DIR/endpoint missing";
    ec2_client_ = testing::MotoClient(kEc2, transport_, &credentials_, aws_clock_);
    ssm_client_ = testing::MotoClient(kSsm, transport_, &credentials_, aws_clock_);
    iam_client_ = testing::MotoClient(kIam, transport_, &credentials_, aws_clock_);
    ec2_ = std::make_unique<Ec2Client>(*ec2_client_);
    ssm_ = std::make_unique<SsmClient>(*ssm_client_);
    iam_ = std::make_unique<IamClient>(*iam_client_);
    // moto keeps its state across the tests of this binary: seed it once.
    if (subnet_a_.empty()) SeedAws();

    rest_ = kube::testing::NewRestClient(kube::testing::KubeconfigFromEnv());
    ASSERT_NE(rest_, nullptr);
    client_ = std::make_unique<kube::Client>(*rest_);
    kube::testing::InstallCrds(*client_, DOVETAIL_SOURCE_DIR, "dovetail-nodeclass-test");
    ASSERT_TRUE(WaitFor([&] { return client_->List(kube::resources::kEC2NodeClasses, "").ok(); }))
        << "EC2NodeClasses are not served";
    events_ = std::make_unique<kube::EventRecorder>(*client_, clock_, kube::EventRecorderOptions{});
    informers_ = std::make_unique<state::ClusterInformers>(*client_, cluster_);
    deps_ = std::make_unique<controllers::Dependencies>(
        controllers::Dependencies{*client_, cluster_, *informers_, cloud_, clock_, *events_});
    controller_ = std::make_unique<NodeClassController>(
        *deps_, *ec2_, *ssm_, *iam_,
        NodeClassOptions{.cluster_name = kCluster,
                         .region = "us-east-1",
                         .cluster_cidr = "10.100.0.0/16",
                         .kubernetes_version = kK8sVersion,
                         .ssm_path_prefix = kSsmPrefix,
                         .instance_profile_grace = absl::ZeroDuration(),
                         .deletion_poll = absl::Milliseconds(500)});
    // An EC2 endpoint nothing listens on (one attempt): the deletion failure path. Never started;
    // built before the informers start, as it registers a NodeClaim handler.
    dead_ec2_client_ = std::make_unique<AwsClient>(
        AwsClient::Dependencies{
            .transport = transport_, .credentials = &credentials_, .clock = aws_clock_},
        AwsClient::Options{.service = kEc2,
                           .region = "us-east-1",
                           .endpoint = "http://127.0.0.1:1",
                           .max_attempts = 1});
    dead_ec2_ = std::make_unique<Ec2Client>(*dead_ec2_client_);
    dead_controller_ =
        std::make_unique<NodeClassController>(*deps_, *dead_ec2_, *ssm_, *iam_,
                                              NodeClassOptions{.cluster_name = kCluster,
                                                               .region = "us-east-1",
                                                               .cluster_cidr = "10.100.0.0/16",
                                                               .kubernetes_version = kK8sVersion,
                                                               .ssm_path_prefix = kSsmPrefix});
    // The same, but the cluster's service CIDR was not found at start-up (bootstrap.h).
    no_cidr_controller_ =
        std::make_unique<NodeClassController>(*deps_, *ec2_, *ssm_, *iam_,
                                              NodeClassOptions{.cluster_name = kCluster,
                                                               .region = "us-east-1",
                                                               .kubernetes_version = kK8sVersion,
                                                               .ssm_path_prefix = kSsmPrefix});
    // In an isolated VPC (upstream's ISOLATED_VPC) with EKS_CONTROL_PLANE: no IAM deletions, and
    // the Kubernetes version from a source standing in for eks:DescribeCluster.
    isolated_controller_ = std::make_unique<NodeClassController>(
        *deps_, *ec2_, *ssm_, *iam_,
        NodeClassOptions{.cluster_name = kCluster,
                         .region = "us-east-1",
                         .cluster_cidr = "10.100.0.0/16",
                         .kubernetes_version_source = [this]() -> absl::StatusOr<std::string> {
                           ++version_asked_;
                           return std::string(kK8sVersion);
                         },
                         .ssm_path_prefix = kSsmPrefix,
                         .instance_profile_grace = absl::ZeroDuration(),
                         .delete_instance_profiles = false});
    informers_->Start();
    ASSERT_TRUE(informers_->WaitForSync(absl::Now() + absl::Seconds(60)));
    controller_->Start();
  }

  void TearDown() override {
    if (controller_ != nullptr) controller_->Stop();
    controller_.reset();
    if (informers_ != nullptr) informers_->Stop();
    dead_controller_.reset();
    no_cidr_controller_.reset();
    isolated_controller_.reset();
    if (client_ == nullptr) return;
    for (const std::string& name : claims_) {
      (void)client_->Delete(kube::resources::kNodeClaims, "", name);
    }
    for (const std::string& name : classes_) {
      // Without the controller nothing removes the finalizer.
      const nlohmann::json patch = {{"metadata", {{"finalizers", nullptr}}}};
      (void)client_->Patch(kube::resources::kEC2NodeClasses, "", name, kube::PatchType::kMerge,
                           patch.dump());
      (void)client_->Delete(kube::resources::kEC2NodeClasses, "", name);
    }
  }

  std::unique_ptr<pugi::xml_document> Ec2(std::string_view action, const QueryParams& params) {
    auto doc = ec2_->Query(action, params);
    EXPECT_TRUE(doc.ok()) << action << ": " << doc.status();
    return doc.ok() ? std::move(*doc) : std::make_unique<pugi::xml_document>();
  }

  void CreateRole(const std::string& name) {
    auto role = iam_->Query(
        "CreateRole", {{"RoleName", name},
                       {"AssumeRolePolicyDocument",
                        R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":)"
                        R"({"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]})"}});
    ASSERT_TRUE(role.ok()) << role.status();
  }

  void SeedAws() {
    auto vpc = Ec2("CreateVpc", {{"CidrBlock", "10.77.0.0/16"}});
    const std::string vpc_id = Text(vpc->document_element().child("vpc"), "vpcId");
    ASSERT_TRUE(absl::StartsWith(vpc_id, "vpc-")) << vpc_id;
    auto subnet = [&](const std::string& cidr, const std::string& zone, bool tagged) {
      QueryParams p{{"VpcId", vpc_id}, {"CidrBlock", cidr}, {"AvailabilityZone", zone}};
      if (tagged) {
        p.insert(p.end(), {{"TagSpecification.1.ResourceType", "subnet"},
                           {"TagSpecification.1.Tag.1.Key", "karpenter.sh/discovery"},
                           {"TagSpecification.1.Tag.1.Value", kCluster}});
      }
      auto doc = Ec2("CreateSubnet", p);
      return Text(doc->document_element().child("subnet"), "subnetId");
    };
    subnet_a_ = subnet("10.77.1.0/24", "us-east-1a", true);
    subnet_b_ = subnet("10.77.2.0/25", "us-east-1b", true);  // fewer addresses: listed second
    (void)subnet("10.77.3.0/24", "us-east-1c", false);
    auto sg = Ec2("CreateSecurityGroup",
                  {{"GroupName", "nc-it-nodes"}, {"GroupDescription", "nodes"}, {"VpcId", vpc_id}});
    sg_ = Text(sg->document_element(), "groupId");
    Ec2("CreateTags", {{"ResourceId.1", sg_},
                       {"Tag.1.Key", "karpenter.sh/discovery"},
                       {"Tag.1.Value", kCluster}});

    auto amd64 = ec2_->DescribeImages({{"architecture", {"x86_64"}}}, {}, {"amazon"});
    ASSERT_TRUE(amd64.ok()) << amd64.status();
    ASSERT_GE(amd64->size(), 2u);
    ami_standard_ = (*amd64)[0].image_id;
    ami_nvidia_ = (*amd64)[1].image_id;
    const std::string base = absl::StrCat(kSsmPrefix, "/aws/service/eks/optimized-ami/",
                                          kK8sVersion, "/amazon-linux-2023/x86_64/");
    ASSERT_TRUE(ssm_->PutParameter(base + "standard/recommended/image_id", ami_standard_).ok());
    ASSERT_TRUE(ssm_->PutParameter(base + "nvidia/recommended/image_id", ami_nvidia_).ok());
    CreateRole("NodeRole-it");
    CreateRole("NodeRole-it-2");
  }

  std::string CreateNodeClass(const std::string& discovery) {
    const std::string name = UniqueName("nc-it");
    const nlohmann::json body = {
        {"apiVersion", "karpenter.k8s.aws/v1"},
        {"kind", "EC2NodeClass"},
        {"metadata", {{"name", name}}},
        {"spec",
         {{"subnetSelectorTerms", {{{"tags", {{"karpenter.sh/discovery", discovery}}}}}},
          {"securityGroupSelectorTerms", {{{"tags", {{"karpenter.sh/discovery", "*"}}}}}},
          {"amiSelectorTerms", {{{"alias", "al2023@latest"}}}},
          {"role", "NodeRole-it"}}}};
    auto created = client_->Create(kube::resources::kEC2NodeClasses, "", body.dump());
    EXPECT_TRUE(created.ok()) << created.status();
    classes_.push_back(name);
    return name;
  }

  std::optional<awsv1::EC2NodeClass> Get(const std::string& name) {
    kube::TypedClient<awsv1::EC2NodeClass> classes(*client_, kube::resources::kEC2NodeClasses);
    auto c = classes.Get("", name);
    if (!c.ok()) return std::nullopt;
    return *c;
  }

  bool WaitForCondition(const std::string& name, std::string_view type, core::ConditionStatus s) {
    return WaitFor([&] {
      auto c = Get(name);
      return c.has_value() && ConditionIs(*c, type, s);
    });
  }

  bool WaitGone(const std::string& name) {
    return WaitFor([&] {
      auto got = client_->Get(kube::resources::kEC2NodeClasses, "", name);
      return !got.ok() && kube::IsNotFound(got.status());
    });
  }

  HttpTransport transport_;
  StaticCredentialsProvider credentials_{
      AwsCredentials{.access_key_id = "AKIDMOTOTEST", .secret_access_key = "moto-secret"}};
  RealClock aws_clock_;
  RealClock clock_;
  std::unique_ptr<AwsClient> ec2_client_, ssm_client_, iam_client_;
  std::unique_ptr<Ec2Client> ec2_;
  std::unique_ptr<SsmClient> ssm_;
  std::unique_ptr<IamClient> iam_;
  static inline std::string subnet_a_, subnet_b_, sg_, ami_standard_, ami_nvidia_;

  std::unique_ptr<kube::RestClient> rest_;
  std::unique_ptr<kube::Client> client_;
  state::Cluster cluster_{clock_};
  NoCloud cloud_;
  std::unique_ptr<kube::EventRecorder> events_;
  std::unique_ptr<state::ClusterInformers> informers_;
  std::unique_ptr<controllers::Dependencies> deps_;
  std::unique_ptr<NodeClassController> controller_;
  std::unique_ptr<AwsClient> dead_ec2_client_;
  std::unique_ptr<Ec2Client> dead_ec2_;
  std::unique_ptr<NodeClassController> dead_controller_;
  std::unique_ptr<NodeClassController> no_cidr_controller_;
  std::unique_ptr<NodeClassController> isolated_controller_;
  std::atomic<int> version_asked_{0};
  std::vector<std::string> classes_, claims_;
};

// The resolvers alone against moto: terms by id, name, tags (incl. "*"), owner, SSM parameter.
TEST_F(NodeClassIntegrationTest, ResolverFindsSubnetsGroupsAndImagesByEveryTermKind) {
  NodeClassResolver resolver(*ec2_, *ssm_, {.ssm_path_prefix = kSsmPrefix});
  awsv1::EC2NodeClassSpec spec;
  spec.subnet_selector_terms = {{.id = subnet_b_}, {.tags = {{"karpenter.sh/discovery", "*"}}}};
  auto subnets = resolver.Subnets(spec);
  ASSERT_TRUE(subnets.ok()) << subnets.status();
  std::set<std::string> subnet_ids;
  for (const auto& s : *subnets) subnet_ids.insert(s.id);
  EXPECT_TRUE(subnet_ids.contains(subnet_a_) && subnet_ids.contains(subnet_b_));
  spec.subnet_selector_terms = {{.id = subnet_b_}};
  subnets = resolver.Subnets(spec);
  ASSERT_TRUE(subnets.ok());
  ASSERT_EQ(subnets->size(), 1u);
  EXPECT_EQ((*subnets)[0].zone, "us-east-1b");

  spec.security_group_selector_terms = {{.name = "nc-it-nodes"}};
  auto by_name = resolver.SecurityGroups(spec);
  ASSERT_TRUE(by_name.ok()) << by_name.status();
  ASSERT_EQ(by_name->size(), 1u);
  EXPECT_EQ((*by_name)[0].id, sg_);
  spec.security_group_selector_terms = {{.id = sg_}, {.name = "nc-it-nodes"}};
  auto by_id = resolver.SecurityGroups(spec);
  ASSERT_TRUE(by_id.ok());
  EXPECT_EQ(by_id->size(), 1u);  // deduplicated
  spec.security_group_selector_terms = {{.tags = {{"karpenter.sh/discovery", "nobody"}}}};
  auto none = resolver.SecurityGroups(spec);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  // An image of our own (tagged) and a public one by name with the default owners.
  auto amazon = ec2_->DescribeImages({{"image-id", {ami_standard_}}});
  ASSERT_TRUE(amazon.ok() && amazon->size() == 1u);
  auto copied = Ec2("CopyImage", {{"SourceImageId", ami_standard_},
                                  {"SourceRegion", "us-east-1"},
                                  {"Name", "nc-it-own-image"}});
  const std::string own = Text(copied->document_element(), "imageId");
  ASSERT_TRUE(absl::StartsWith(own, "ami-")) << own;
  Ec2("CreateTags", {{"ResourceId.1", own}, {"Tag.1.Key", "nc-it"}, {"Tag.1.Value", "yes"}});
  spec.ami_selector_terms = {{.tags = {{"nc-it", "*"}}}};
  auto tagged = resolver.Amis(spec, kK8sVersion, absl::Now());
  ASSERT_TRUE(tagged.ok()) << tagged.status();
  ASSERT_EQ(tagged->size(), 1u);
  EXPECT_EQ((*tagged)[0].id, own);
  EXPECT_EQ((*tagged)[0].name, "nc-it-own-image");
  ASSERT_EQ((*tagged)[0].requirements.size(), 1u);
  EXPECT_EQ((*tagged)[0].requirements[0].values, std::vector<std::string>{"amd64"});
  spec.ami_selector_terms = {{.name = (*amazon)[0].name}};
  auto named = resolver.Amis(spec, kK8sVersion, absl::Now());
  ASSERT_TRUE(named.ok()) << named.status();
  ASSERT_EQ(named->size(), 1u);
  EXPECT_EQ((*named)[0].id, ami_standard_);
  spec.ami_selector_terms = {{.name = (*amazon)[0].name, .owner = "999999999999"}};
  auto other_owner = resolver.Amis(spec, kK8sVersion, absl::Now());
  ASSERT_TRUE(other_owner.ok()) << other_owner.status();
  EXPECT_TRUE(other_owner->empty());
  // An SSM parameter naming an image.
  const std::string param = absl::StrCat(kSsmPrefix, "/custom/image");
  ASSERT_TRUE(ssm_->PutParameter(param, own).ok());
  spec.ami_selector_terms = {{.ssm_parameter = param}};
  auto from_ssm = resolver.Amis(spec, kK8sVersion, absl::Now());
  ASSERT_TRUE(from_ssm.ok()) << from_ssm.status();
  ASSERT_EQ(from_ssm->size(), 1u);
  EXPECT_EQ((*from_ssm)[0].id, own);
  // A pinned alias whose parameter does not exist: nothing, not an error.
  spec.ami_selector_terms = {{.alias = "al2023@v20990101"}};
  auto missing = resolver.Amis(spec, kK8sVersion, absl::Now());
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_TRUE(missing->empty());
}

TEST_F(NodeClassIntegrationTest, ResolvesStatusManagesTheInstanceProfileAndCleansUpOnDelete) {
  const std::string name = CreateNodeClass(kCluster);
  ASSERT_TRUE(WaitForCondition(name, kConditionReady, core::ConditionStatus::kTrue))
      << core::EncodeJson(Get(name).value_or(awsv1::EC2NodeClass{})).dump(2);
  awsv1::EC2NodeClass c = *Get(name);

  ASSERT_EQ(c.status.subnets.size(), 2u);
  EXPECT_EQ(c.status.subnets[0].id, subnet_a_);
  EXPECT_EQ(c.status.subnets[0].zone, "us-east-1a");
  EXPECT_FALSE(c.status.subnets[0].zone_id.empty());
  EXPECT_EQ(c.status.subnets[1].id, subnet_b_);
  bool found_sg = false;
  for (const auto& g : c.status.security_groups) {
    if (g.id == sg_) {
      found_sg = true;
      EXPECT_EQ(g.name, "nc-it-nodes");
    }
  }
  EXPECT_TRUE(found_sg);
  ASSERT_EQ(c.status.amis.size(), 2u);
  std::set<std::string> ami_ids;
  for (const auto& ami : c.status.amis) {
    ami_ids.insert(ami.id);
    EXPECT_FALSE(ami.name.empty());
    EXPECT_FALSE(ami.deprecated);
    ASSERT_FALSE(ami.requirements.empty());
    EXPECT_EQ(ami.requirements[0].key, apis::v1::kLabelArch);
    EXPECT_EQ(ami.requirements[0].values, std::vector<std::string>{"amd64"});
    EXPECT_EQ(ami.requirements.size(), ami.id == ami_standard_ ? 3u : 2u) << ami.id;
  }
  EXPECT_EQ(ami_ids, (std::set<std::string>{ami_standard_, ami_nvidia_}));
  for (std::string_view type : kDependents) {
    EXPECT_TRUE(ConditionIs(c, type, core::ConditionStatus::kTrue)) << type;
  }
  EXPECT_NE(std::find(c.metadata.finalizers.begin(), c.metadata.finalizers.end(),
                      apis::v1::kAwsTerminationFinalizer),
            c.metadata.finalizers.end());
  EXPECT_EQ(c.metadata.annotations[std::string(apis::v1::kEC2NodeClassHashAnnotationKey)],
            *apis::aws::v1::DriftHash(c, ""));
  EXPECT_EQ(c.metadata.annotations[std::string(apis::v1::kEC2NodeClassHashVersionAnnotationKey)],
            "v5");

  // The managed profile: upstream's name, path with the class UID, the role.
  const std::string profile = c.status.instance_profile;
  EXPECT_TRUE(absl::StartsWith(profile, absl::StrCat(kCluster, "_"))) << profile;
  auto got = iam_->GetInstanceProfile(profile);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->path, InstanceProfilePath("us-east-1", kCluster, c.metadata.uid));
  ASSERT_EQ(got->roles.size(), 1u);
  EXPECT_EQ(got->roles[0].role_name, "NodeRole-it");

  // A role change: a new profile with the new role; the old one is collected (grace zero here).
  const nlohmann::json role = {{"spec", {{"role", "NodeRole-it-2"}}}};
  ASSERT_TRUE(
      client_
          ->Patch(kube::resources::kEC2NodeClasses, "", name, kube::PatchType::kMerge, role.dump())
          .ok());
  ASSERT_TRUE(WaitFor([&] {
    auto now = Get(name);
    return now.has_value() && !now->status.instance_profile.empty() &&
           now->status.instance_profile != profile &&
           ConditionIs(*now, kConditionReady, core::ConditionStatus::kTrue);
  }));
  const std::string second = Get(name)->status.instance_profile;
  auto replaced = iam_->GetInstanceProfile(second);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  ASSERT_EQ(replaced->roles.size(), 1u);
  EXPECT_EQ(replaced->roles[0].role_name, "NodeRole-it-2");
  EXPECT_TRUE(WaitFor([&] {
    return iam_->GetInstanceProfile(profile).status().code() == absl::StatusCode::kNotFound;
  })) << "the superseded profile was not collected";

  // Deletion: the profile goes, then the finalizer.
  ASSERT_TRUE(client_->Delete(kube::resources::kEC2NodeClasses, "", name).ok());
  EXPECT_TRUE(WaitGone(name));
  EXPECT_EQ(iam_->GetInstanceProfile(second).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(NodeClassIntegrationTest, SelectorMatchingNothingIsNotReadyUntilTheSpecIsFixed) {
  const std::string name = CreateNodeClass("no-such-cluster");
  ASSERT_TRUE(WaitForCondition(name, kConditionReady, core::ConditionStatus::kFalse));
  awsv1::EC2NodeClass c = *Get(name);
  const core::Condition* subnets = FindCondition(c, kConditionSubnetsReady);
  ASSERT_NE(subnets, nullptr);
  EXPECT_EQ(subnets->status, core::ConditionStatus::kFalse);
  EXPECT_EQ(subnets->reason, kReasonSubnetsNotFound);
  EXPECT_EQ(subnets->message, "SubnetSelector did not match any Subnets");
  EXPECT_TRUE(c.status.subnets.empty());
  const core::Condition* ready = FindCondition(c, kConditionReady);
  EXPECT_EQ(ready->reason, kReasonUnhealthyDependents);
  EXPECT_TRUE(absl::StrContains(ready->message, "SubnetsReady=False")) << ready->message;
  EXPECT_TRUE(ConditionIs(c, kConditionSecurityGroupsReady, core::ConditionStatus::kTrue));
  EXPECT_TRUE(ConditionIs(c, kConditionAMIsReady, core::ConditionStatus::kTrue));

  const nlohmann::json fix = {
      {"spec", {{"subnetSelectorTerms", {{{"tags", {{"karpenter.sh/discovery", kCluster}}}}}}}}};
  ASSERT_TRUE(
      client_
          ->Patch(kube::resources::kEC2NodeClasses, "", name, kube::PatchType::kMerge, fix.dump())
          .ok());
  ASSERT_TRUE(WaitForCondition(name, kConditionReady, core::ConditionStatus::kTrue));
  EXPECT_EQ(Get(name)->status.subnets.size(), 2u);

  // An alias family that does not exist.
  const nlohmann::json bad_ami = {
      {"spec",
       {{"amiSelectorTerms", {{{"id", "ami-00000000000000000"}}}}, {"amiFamily", "AL2023"}}}};
  ASSERT_TRUE(client_
                  ->Patch(kube::resources::kEC2NodeClasses, "", name, kube::PatchType::kMerge,
                          bad_ami.dump())
                  .ok());
  ASSERT_TRUE(WaitForCondition(name, kConditionAMIsReady, core::ConditionStatus::kFalse));
  EXPECT_EQ(FindCondition(*Get(name), kConditionAMIsReady)->reason, kReasonAMINotFound);
  EXPECT_TRUE(ConditionIs(*Get(name), kConditionReady, core::ConditionStatus::kFalse));
}

TEST_F(NodeClassIntegrationTest, AnAl2023ClassIsNotReadyWhileTheServiceCidrIsUnknown) {
  const std::string name = CreateNodeClass(kCluster);  // alias al2023@latest
  ASSERT_TRUE(WaitForCondition(name, kConditionReady, core::ConditionStatus::kTrue));
  controller_->Stop();  // only the reconciles below act on the class

  auto unknown = no_cidr_controller_->Reconcile(name);
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  ASSERT_TRUE(WaitForCondition(name, kConditionValidationSucceeded, core::ConditionStatus::kFalse));
  awsv1::EC2NodeClass c = *Get(name);
  const core::Condition* validation = FindCondition(c, kConditionValidationSucceeded);
  ASSERT_NE(validation, nullptr);
  EXPECT_EQ(validation->reason, kReasonClusterCIDRUnknown);
  EXPECT_TRUE(absl::StrContains(validation->message, "DOVETAIL_CLUSTER_CIDR"))
      << validation->message;
  EXPECT_TRUE(ConditionIs(c, kConditionReady, core::ConditionStatus::kFalse));

  // Known again (the controller restarted with it): Ready.
  auto known = controller_->Reconcile(name);
  ASSERT_TRUE(known.ok()) << known.status();
  ASSERT_TRUE(WaitForCondition(name, kConditionReady, core::ConditionStatus::kTrue));
}

// ISOLATED_VPC: IAM has no VPC endpoint, so managed instance profiles are neither collected when
// superseded nor deleted with the class (as upstream); EKS_CONTROL_PLANE: the version comes from
// EKS, not from the API server's /version.
TEST_F(NodeClassIntegrationTest, InAnIsolatedVpcInstanceProfilesAreLeftInPlace) {
  const std::string name = CreateNodeClass(kCluster);
  ASSERT_TRUE(WaitForCondition(name, kConditionReady, core::ConditionStatus::kTrue));
  controller_->Stop();  // only the isolated controller acts on the class from here
  const std::string first = Get(name)->status.instance_profile;

  const nlohmann::json role = {{"spec", {{"role", "NodeRole-it-2"}}}};
  ASSERT_TRUE(
      client_
          ->Patch(kube::resources::kEC2NodeClasses, "", name, kube::PatchType::kMerge, role.dump())
          .ok());
  std::string second;
  ASSERT_TRUE(WaitFor([&] {
    if (!isolated_controller_->Reconcile(name).ok()) return false;
    auto now = Get(name);
    if (!now.has_value() || now->status.instance_profile == first) return false;
    second = now->status.instance_profile;
    return ConditionIs(*now, kConditionReady, core::ConditionStatus::kTrue);
  }));
  EXPECT_GT(version_asked_.load(), 0);
  EXPECT_TRUE(iam_->GetInstanceProfile(first).ok()) << "collected in an isolated VPC";

  ASSERT_TRUE(client_->Delete(kube::resources::kEC2NodeClasses, "", name).ok());
  ASSERT_TRUE(WaitFor([&] {
    (void)isolated_controller_->Reconcile(name);
    return !Get(name).has_value();
  }));
  for (const std::string& profile : {first, second}) {
    auto kept = iam_->GetInstanceProfile(profile);
    ASSERT_TRUE(kept.ok()) << profile << " was deleted in an isolated VPC";
    for (const auto& r : kept->roles) {
      ASSERT_TRUE(iam_->RemoveRoleFromInstanceProfile(profile, r.role_name).ok());
    }
    ASSERT_TRUE(iam_->DeleteInstanceProfile(profile).ok());
  }
}

TEST_F(NodeClassIntegrationTest, DeletionWaitsForNodeClaimsOfTheClass) {
  const std::string name = CreateNodeClass(kCluster);
  ASSERT_TRUE(WaitForCondition(name, kConditionReady, core::ConditionStatus::kTrue));
  const std::string profile = Get(name)->status.instance_profile;
  const std::string claim = UniqueName("nc-it-claim");
  const nlohmann::json body = {
      {"apiVersion", "karpenter.sh/v1"},
      {"kind", "NodeClaim"},
      {"metadata", {{"name", claim}}},
      {"spec",
       {{"requirements",
         {{{"key", "kubernetes.io/arch"}, {"operator", "In"}, {"values", {"amd64"}}}}},
        {"nodeClassRef",
         {{"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", name}}}}}};
  auto created = client_->Create(kube::resources::kNodeClaims, "", body.dump());
  ASSERT_TRUE(created.ok()) << created.status();
  claims_.push_back(claim);
  ASSERT_TRUE(WaitFor([&] { return informers_->node_claims().store().Get(claim) != nullptr; }));

  ASSERT_TRUE(client_->Delete(kube::resources::kEC2NodeClasses, "", name).ok());
  absl::SleepFor(absl::Seconds(2));
  auto waiting = Get(name);
  ASSERT_TRUE(waiting.has_value()) << "deleted while a NodeClaim references it";
  EXPECT_TRUE(waiting->metadata.deletion_timestamp.has_value());
  EXPECT_TRUE(iam_->GetInstanceProfile(profile).ok());

  ASSERT_TRUE(client_->Delete(kube::resources::kNodeClaims, "", claim).ok());
  EXPECT_TRUE(WaitGone(name));
  EXPECT_EQ(iam_->GetInstanceProfile(profile).status().code(), absl::StatusCode::kNotFound);
}

// NodeClaims stamped under another hash version (Dovetail's own dovetail-v1, an older upstream's
// v4) are re-stamped with the class's v5 hash rather than drifted; a Drifted one keeps its hash.
TEST_F(NodeClassIntegrationTest, EarlierHashVersionsAreRestamped) {
  const std::string name = CreateNodeClass(kCluster);
  ASSERT_TRUE(WaitForCondition(name, kConditionReady, core::ConditionStatus::kTrue));
  auto claim_body = [&](const std::string& claim, const std::string& version) {
    return nlohmann::json{
        {"apiVersion", "karpenter.sh/v1"},
        {"kind", "NodeClaim"},
        {"metadata",
         {{"name", claim},
          {"annotations",
           {{"karpenter.k8s.aws/ec2nodeclass-hash", "12345"},
            {"karpenter.k8s.aws/ec2nodeclass-hash-version", version}}}}},
        {"spec",
         {{"requirements",
           {{{"key", "kubernetes.io/arch"}, {"operator", "In"}, {"values", {"amd64"}}}}},
          {"nodeClassRef",
           {{"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", name}}}}}};
  };
  const std::string own = UniqueName("nc-it-own"), older = UniqueName("nc-it-v4"),
                    drifted = UniqueName("nc-it-drifted");
  // The drifted one is created unstamped: a status cannot be written with the create, and in
  // between any reconcile of the class (each NodeClaim added triggers one) would re-stamp it.
  for (const auto& [claim, version] :
       {std::pair{own, "dovetail-v1"}, std::pair{older, "v4"}, std::pair{drifted, ""}}) {
    nlohmann::json body = claim_body(claim, version);
    if (std::string_view(version).empty()) body["metadata"].erase("annotations");
    ASSERT_TRUE(client_->Create(kube::resources::kNodeClaims, "", body.dump()).ok());
    claims_.push_back(claim);
  }
  const nlohmann::json status = {{"status",
                                  {{"conditions",
                                    {{{"type", "Drifted"},
                                      {"status", "True"},
                                      {"reason", "NodeClassDrift"},
                                      {"message", ""},
                                      {"lastTransitionTime", "2026-01-01T00:00:00Z"}}}}}}};
  ASSERT_TRUE(client_
                  ->Patch(kube::resources::kNodeClaims, "", drifted, kube::PatchType::kMerge,
                          status.dump(), {}, "status")
                  .ok());
  ASSERT_TRUE(WaitFor([&] {
    auto c = informers_->node_claims().store().Get(drifted);
    return c != nullptr && !c->status.conditions.empty();
  }));
  // Drifted now: stamped under v4 afterwards, as a NodeClaim upstream found drifted would be.
  const nlohmann::json stamp = {{"metadata",
                                 {{"annotations",
                                   {{"karpenter.k8s.aws/ec2nodeclass-hash", "12345"},
                                    {"karpenter.k8s.aws/ec2nodeclass-hash-version", "v4"}}}}}};
  ASSERT_TRUE(
      client_
          ->Patch(kube::resources::kNodeClaims, "", drifted, kube::PatchType::kMerge, stamp.dump())
          .ok());
  // Any reconcile of the class re-stamps (an annotation change triggers one).
  ASSERT_TRUE(client_
                  ->Patch(kube::resources::kEC2NodeClasses, "", name, kube::PatchType::kMerge,
                          R"({"metadata":{"annotations":{"example.com/touch":"1"}}})")
                  .ok());
  auto annotations = [&](const std::string& claim) {
    kube::TypedClient<apis::v1::NodeClaim> claims(*client_, kube::resources::kNodeClaims);
    auto got = claims.Get("", claim);
    return got.ok() ? got->metadata.annotations : core::StringMap{};
  };
  std::string class_hash;
  ASSERT_TRUE(WaitFor([&] {
    std::optional<apis::aws::v1::EC2NodeClass> c = Get(name);
    if (!c.has_value()) return false;
    const std::string want = *apis::aws::v1::DriftHash(*c, "");
    class_hash = c->metadata.annotations["karpenter.k8s.aws/ec2nodeclass-hash"];
    return class_hash == want && annotations(own)["karpenter.k8s.aws/ec2nodeclass-hash"] == want &&
           annotations(older)["karpenter.k8s.aws/ec2nodeclass-hash"] == want &&
           annotations(drifted)["karpenter.k8s.aws/ec2nodeclass-hash-version"] == "v5";
  }));
  for (const std::string& claim : {own, older, drifted}) {
    EXPECT_EQ(annotations(claim)["karpenter.k8s.aws/ec2nodeclass-hash-version"], "v5") << claim;
  }
  EXPECT_EQ(annotations(drifted)["karpenter.k8s.aws/ec2nodeclass-hash"], "12345");
}

// Launch templates created as the AwsCloudProvider creates them (launch_template.h): the one the
// class's status still produces is kept by the periodic reconcile, one with a superseded image is
// deleted; deleting the class deletes the rest; another class's and another cluster's stay.
TEST_F(NodeClassIntegrationTest, LaunchTemplatesAreCollectedAndDeletedWithTheClass) {
  const std::string name = CreateNodeClass(kCluster);
  ASSERT_TRUE(WaitForCondition(name, kConditionReady, core::ConditionStatus::kTrue));
  const awsv1::EC2NodeClass c = *Get(name);
  ASSERT_FALSE(c.status.amis.empty());
  auto create = [&](const std::string& image, const std::string& cluster,
                    const std::string& node_class) {
    LaunchTemplateSpec spec;
    spec.image_id = image;
    spec.user_data = "#!/bin/bash\necho lt-gc\n";
    spec.metadata_options = MetadataOptionsFor(c.spec);
    for (const auto& g : c.status.security_groups) spec.security_group_ids.push_back(g.id);
    std::sort(spec.security_group_ids.begin(), spec.security_group_ids.end());
    spec.instance_profile = c.status.instance_profile;
    spec.tags = LaunchTags({{"team", "it"}}, cluster, "default", "", "", node_class);
    const std::string lt = LaunchTemplateName(spec);
    Ec2("CreateLaunchTemplate", CreateLaunchTemplateParams(lt, spec));
    return lt;
  };
  const std::string current = create(c.status.amis[0].id, kCluster, name);
  const std::string obsolete = create("ami-0123456789abcdef0", kCluster, name);
  const std::string other_class = create("ami-0123456789abcdef0", kCluster, name + "-other");
  const std::string other_cluster = create("ami-0123456789abcdef0", "another-cluster", name);
  auto names = [&](const std::string& cluster, const std::string& node_class) {
    std::set<std::string> out;
    auto listed = ListLaunchTemplates(*ec2_, cluster, node_class);
    EXPECT_TRUE(listed.ok()) << listed.status();
    if (listed.ok()) {
      for (const auto& lt : *listed) out.insert(lt.name);
    }
    return out;
  };
  // A reconcile still running in the background may already have collected the obsolete one.
  const std::set<std::string> before = names(kCluster, name);
  EXPECT_TRUE(before.contains(current));
  EXPECT_TRUE(before.size() == 1 || before == (std::set<std::string>{current, obsolete}));

  // The periodic reconcile (run here directly): the superseded image's template goes.
  auto reconciled = controller_->Reconcile(name);
  ASSERT_TRUE(reconciled.ok()) << reconciled.status();
  EXPECT_EQ(names(kCluster, name), std::set<std::string>{current});

  // Deletion: every template of the class, then the finalizer.
  ASSERT_TRUE(client_->Delete(kube::resources::kEC2NodeClasses, "", name).ok());
  EXPECT_TRUE(WaitGone(name));
  EXPECT_TRUE(names(kCluster, name).empty());
  EXPECT_EQ(names(kCluster, name + "-other"), std::set<std::string>{other_class});
  EXPECT_EQ(names("another-cluster", name), std::set<std::string>{other_cluster});
  auto rest = ListLaunchTemplates(*ec2_, kCluster, name + "-other");
  ASSERT_TRUE(rest.ok());
  auto more = ListLaunchTemplates(*ec2_, "another-cluster", name);
  ASSERT_TRUE(more.ok());
  rest->insert(rest->end(), more->begin(), more->end());
  auto deleted = DeleteLaunchTemplates(*ec2_, *rest);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 2);
}

// A launch template deletion that fails keeps the finalizer, says so (Warning event
// LaunchTemplateDeletionFailed, an error for the retry), and the next reconcile that reaches EC2
// finishes the deletion.
TEST_F(NodeClassIntegrationTest, FailedLaunchTemplateDeletionKeepsTheFinalizerAndIsRetried) {
  const std::string name = CreateNodeClass(kCluster);
  ASSERT_TRUE(WaitForCondition(name, kConditionReady, core::ConditionStatus::kTrue));
  controller_->Stop();  // only the reconciles below act on the class
  ASSERT_TRUE(client_->Delete(kube::resources::kEC2NodeClasses, "", name).ok());

  auto failed = dead_controller_->Reconcile(name);
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(absl::StrContains(failed.status().ToString(), "DescribeLaunchTemplates"))
      << failed.status();
  auto held = Get(name);
  ASSERT_TRUE(held.has_value()) << "the finalizer was removed although EC2 failed";
  EXPECT_TRUE(held->metadata.deletion_timestamp.has_value());
  EXPECT_TRUE(WaitFor([&] {
    auto list = client_->List(kube::resources::kEvents, "default");
    if (!list.ok()) return false;
    const nlohmann::json body = nlohmann::json::parse(list->body);
    for (const auto& item : body["items"]) {
      if (item["regarding"].value("name", "") == name &&
          item.value("reason", "") == "LaunchTemplateDeletionFailed" &&
          item.value("type", "") == "Warning") {
        return true;
      }
    }
    return false;
  })) << "no LaunchTemplateDeletionFailed event";

  auto done = controller_->Reconcile(name);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(WaitGone(name));
}

}  // namespace
}  // namespace dovetail::providers::aws::nodeclass
