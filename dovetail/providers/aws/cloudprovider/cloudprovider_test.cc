#include <map>
#include <string>
#include <vector>

#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/errors.h"
#include "dovetail/common/clock.h"
#include "dovetail/providers/aws/cloudprovider/aws_cloud_provider.h"
#include "dovetail/providers/aws/cloudprovider/drift.h"
#include "dovetail/providers/aws/cloudprovider/fleet.h"
#include "dovetail/providers/aws/cloudprovider/launch_template.h"
#include "dovetail/providers/aws/cloudprovider/user_data.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::providers::aws {
namespace {

namespace awsv1 = apis::aws::v1;
namespace core = apis::core;
namespace v1 = apis::v1;
namespace cp = ::dovetail::cloudprovider;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

BootstrapInputs Inputs() {
  BootstrapInputs in;
  in.cluster_name = "demo";
  in.cluster_endpoint = "https://api.example:443";
  in.ca_bundle = "Q0E=";
  in.cluster_cidr = "10.100.0.0/16";
  in.cluster_dns_ip = "10.100.0.10";
  in.labels = {{"karpenter.sh/nodepool", "default"}, {"team", "a"}};
  in.taints = {{.key = "karpenter.sh/unregistered", .effect = core::TaintEffect::kNoExecute}};
  awsv1::KubeletConfiguration k;
  k.system_reserved = {{"cpu", "100m"}};
  k.eviction_hard = {{"memory.available", "5%"}};
  in.kubelet = k;
  in.max_pods = 58;
  return in;
}

// ---- MIME / AL2023 / AL2 ----

TEST(UserData, Al2023WithoutUserDataIsOneNodeConfigPart) {
  absl::StatusOr<std::string> ud = GenerateUserData(awsv1::AMIFamily::kAL2023, Inputs());
  ASSERT_TRUE(ud.ok()) << ud.status();
  EXPECT_THAT(*ud, HasSubstr("MIME-Version: 1.0"));
  auto parts = ParseMimeMultipart(*ud);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].content_type, "application/node.eks.aws");
  const std::string& nc = (*parts)[0].body;
  EXPECT_THAT(nc, HasSubstr("\"apiVersion\": \"node.eks.aws/v1alpha1\""));
  EXPECT_THAT(nc, HasSubstr("\"kind\": \"NodeConfig\""));
  EXPECT_THAT(nc, HasSubstr("\"name\": \"demo\""));
  EXPECT_THAT(nc, HasSubstr("\"apiServerEndpoint\": \"https://api.example:443\""));
  EXPECT_THAT(nc, HasSubstr("\"cidr\": \"10.100.0.0/16\""));
  EXPECT_THAT(nc, HasSubstr("\"maxPods\": 58"));
  EXPECT_THAT(nc, HasSubstr("- \"10.100.0.10\""));
  EXPECT_THAT(nc, HasSubstr("\"--node-labels=karpenter.sh/nodepool=default,team=a\""));
  EXPECT_THAT(nc, HasSubstr("\"registerWithTaints\":"));
  EXPECT_THAT(nc, HasSubstr("- \"effect\": \"NoExecute\""));
  EXPECT_THAT(nc, HasSubstr("\"memory.available\": \"5%\""));
}

TEST(UserData, Al2023KeepsUserNodeConfigFirst) {
  BootstrapInputs in = Inputs();
  in.user_data =
      "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n"
      "      shutdownGracePeriod: 30s\n";
  auto ud = GenerateUserData(awsv1::AMIFamily::kAL2023, in);
  ASSERT_TRUE(ud.ok()) << ud.status();
  auto parts = ParseMimeMultipart(*ud);
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].content_type, "application/node.eks.aws");
  EXPECT_EQ((*parts)[0].body, *in.user_data);
  EXPECT_THAT((*parts)[1].body, HasSubstr("\"maxPods\": 58"));
}

TEST(UserData, Al2023ShellAndJsonUserData) {
  BootstrapInputs in = Inputs();
  in.user_data = "#!/bin/bash\necho hello\n";
  auto parts = ParseMimeMultipart(*GenerateUserData(awsv1::AMIFamily::kAL2023, in));
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_THAT((*parts)[0].content_type, HasSubstr("text/x-shellscript"));
  EXPECT_EQ((*parts)[0].body, "#!/bin/bash\necho hello\n");

  in.user_data = R"({"apiVersion":"node.eks.aws/v1alpha1","kind":"NodeConfig","spec":{}})";
  parts = ParseMimeMultipart(*GenerateUserData(awsv1::AMIFamily::kAL2023, in));
  ASSERT_TRUE(parts.ok());
  EXPECT_EQ((*parts)[0].content_type, "application/node.eks.aws");
}

TEST(UserData, Al2023KeepsEveryPartOfUserMime) {
  BootstrapInputs in = Inputs();
  in.user_data =
      "MIME-Version: 1.0\r\n"
      "Content-Type: multipart/mixed; boundary=\"BOUNDARY\"\r\n"
      "\r\n"
      "--BOUNDARY\r\n"
      "Content-Type: text/x-shellscript; charset=\"us-ascii\"\r\n"
      "\r\n"
      "#!/bin/bash\r\n"
      "echo one\r\n"
      "--BOUNDARY\r\n"
      "Content-Type: application/node.eks.aws\r\n"
      "\r\n"
      "apiVersion: node.eks.aws/v1alpha1\r\n"
      "kind: NodeConfig\r\n"
      "--BOUNDARY--\r\n";
  auto ud = GenerateUserData(awsv1::AMIFamily::kAL2023, in);
  ASSERT_TRUE(ud.ok()) << ud.status();
  auto parts = ParseMimeMultipart(*ud);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 3u);
  EXPECT_EQ((*parts)[0].body, "#!/bin/bash\necho one\n");
  EXPECT_EQ((*parts)[1].content_type, "application/node.eks.aws");
  EXPECT_EQ((*parts)[1].body, "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n");
  EXPECT_THAT((*parts)[2].body, HasSubstr("NodeConfig"));
}

TEST(UserData, BoundaryNeverClashesWithAPart) {
  std::vector<MimePart> parts = {{"text/x-shellscript", "echo --//\n--//--\n"},
                                 {"application/node.eks.aws", "kind: NodeConfig\n"}};
  const std::string doc = WriteMimeMultipart(parts);
  EXPECT_THAT(doc, Not(HasSubstr("boundary=\"//\"")));
  auto back = ParseMimeMultipart(doc);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, parts);
}

// A folded header whose next line holds only blanks adds nothing, so a part's Content-Type reads
// the same before and after Dovetail writes the document again (found by
// test/fuzz/user_data_fuzzer: the value gained a trailing space that the second read trimmed).
TEST(UserData, FoldedHeadersReadTheSameAfterAWrite) {
  const std::string doc =
      "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n--B\n"
      "Content-Type: text/x-shellscript;\n \n\tcharset=\"us-ascii\"\n\necho hi\n--B--\n";
  auto parts = ParseMimeMultipart(doc);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].content_type, "text/x-shellscript; charset=\"us-ascii\"");
  auto again = ParseMimeMultipart(WriteMimeMultipart(*parts));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *parts);
}

// Carriage returns before a line feed are line-ending noise, however many (found by
// test/fuzz/user_data_fuzzer: "x\r\r\n" lost one CR on every write and read).
TEST(UserData, CarriageReturnsBeforeALineFeedAreDropped) {
  const std::string doc =
      "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"B\"\r\n\r\n--B\r\n"
      "Content-Type: text/x-shellscript\r\n\r\necho hi\r\r\r\n--B--\r\n";
  auto parts = ParseMimeMultipart(doc);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].body, "echo hi\n");
  auto again = ParseMimeMultipart(WriteMimeMultipart(*parts));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *parts);
}

TEST(UserData, MalformedMimeIsAnError) {
  BootstrapInputs in = Inputs();
  in.user_data = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"X\"\n\n--X\n\nhi\n";
  auto ud = GenerateUserData(awsv1::AMIFamily::kAL2023, in);
  EXPECT_EQ(ud.status().code(), absl::StatusCode::kInvalidArgument);
  in.user_data = "MIME-Version: 1.0\nContent-Type: multipart/mixed\n\nhi\n";
  EXPECT_FALSE(GenerateUserData(awsv1::AMIFamily::kAL2, in).ok());
}

TEST(UserData, Al2BootstrapAfterUserScript) {
  BootstrapInputs in = Inputs();
  in.user_data = "#!/bin/bash\necho pre\n";
  in.raid0 = true;
  auto ud = GenerateUserData(awsv1::AMIFamily::kAL2, in);
  ASSERT_TRUE(ud.ok());
  auto parts = ParseMimeMultipart(*ud);
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].body, "#!/bin/bash\necho pre\n");
  const std::string& s = (*parts)[1].body;
  EXPECT_THAT(s, HasSubstr("/etc/eks/bootstrap.sh 'demo' --apiserver-endpoint "
                           "'https://api.example:443' --b64-cluster-ca 'Q0E=' --dns-cluster-ip "
                           "'10.100.0.10' --use-max-pods false --local-disks raid0"));
  EXPECT_THAT(s, HasSubstr("--node-labels=karpenter.sh/nodepool=default,team=a"));
  EXPECT_THAT(s, HasSubstr("--register-with-taints=karpenter.sh/unregistered=:NoExecute"));
  EXPECT_THAT(s, HasSubstr("--max-pods=58"));
  EXPECT_THAT(s, HasSubstr("--system-reserved=cpu=100m"));
  EXPECT_THAT(s, HasSubstr("--eviction-hard=memory.available<5%"));
}

TEST(UserData, CustomIsVerbatim) {
  BootstrapInputs in = Inputs();
  in.user_data = "anything at all\n--//\n";
  EXPECT_EQ(*GenerateUserData(awsv1::AMIFamily::kCustom, in), *in.user_data);
  EXPECT_EQ(GenerateUserData(awsv1::AMIFamily::kWindows2022, in).status().code(),
            absl::StatusCode::kUnimplemented);
}

// ---- TOML / Bottlerocket ----

TEST(Toml, ParsesTheSubsetAndRoundTrips) {
  auto doc = ParseToml(R"(# comment
[settings.kubernetes]
max-pods = 10   # trailing
"cluster-name" = 'lit'
[settings.kubernetes.node-labels]
"example.com/team" = "a"
[settings.host-containers.admin]
enabled = true
ratio = 0.5
list = ["a", "b",
  "c"]
inline = {x = 1, "y.z" = "w"}
[settings.empty]
a.b = "dotted"
)");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ((*doc)["settings"]["kubernetes"]["max-pods"], 10);
  EXPECT_EQ((*doc)["settings"]["kubernetes"]["cluster-name"], "lit");
  EXPECT_EQ((*doc)["settings"]["kubernetes"]["node-labels"]["example.com/team"], "a");
  EXPECT_EQ((*doc)["settings"]["host-containers"]["admin"]["enabled"], true);
  EXPECT_EQ((*doc)["settings"]["host-containers"]["admin"]["ratio"], 0.5);
  EXPECT_EQ((*doc)["settings"]["host-containers"]["admin"]["list"].size(), 3u);
  EXPECT_EQ((*doc)["settings"]["host-containers"]["admin"]["inline"]["y.z"], "w");
  EXPECT_EQ((*doc)["settings"]["empty"]["a"]["b"], "dotted");
  auto again = ParseToml(WriteToml(*doc));
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << WriteToml(*doc);
  EXPECT_EQ(*again, *doc);
}

// TOML's escapes, including the \u form Dovetail writes for control characters, read back as the
// same bytes; an escape naming no Unicode scalar value is an error. Found by
// test/fuzz/user_data_fuzzer (a control character written as \u0001 did not read back).
TEST(Toml, UnicodeEscapesAndControlCharactersRoundTrip) {
  auto doc = ParseToml(R"(a = "\u00e9\U0001F600\b\f\t"
"k\u0001" = "x\u007F"
)");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ((*doc)["a"], "\xC3\xA9\xF0\x9F\x98\x80\b\f\t");
  EXPECT_EQ((*doc)["k\x01"], "x\x7F");
  const std::string written = WriteToml(*doc);
  EXPECT_EQ(written.find('\x01'), std::string::npos) << written;
  auto again = ParseToml(written);
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << written;
  EXPECT_EQ(*again, *doc);
  EXPECT_FALSE(ParseToml(R"(a = "\uD800")").ok());
  EXPECT_FALSE(ParseToml(R"(a = "\U00110000")").ok());
  EXPECT_FALSE(ParseToml(R"(a = "\u12")").ok());
  EXPECT_FALSE(ParseToml(R"(a = "\u12G4")").ok());
}

// Numbers keep their value through the JSON tree and back to TOML: an integer beyond int64 and a
// float that overflows are refused instead of clamped or written as null (found by
// test/fuzz/user_data_fuzzer: "-0777777777E77777779" became "null").
TEST(Toml, NumbersOutOfRangeAreErrors) {
  EXPECT_FALSE(ParseToml("a = 99999999999999999999\n").ok());
  EXPECT_FALSE(ParseToml("a = -0777777777E77777779\n").ok());
  EXPECT_FALSE(ParseToml("a = inf\n").ok());
  auto doc = ParseToml("a = 9223372036854775807\nb = 1.5e300\nc = -7\n");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ((*doc)["a"], INT64_MAX);
  auto again = ParseToml(WriteToml(*doc));
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << WriteToml(*doc);
  EXPECT_EQ(*again, *doc);
}

TEST(Toml, Errors) {
  EXPECT_FALSE(ParseToml("[settings\n").ok());
  EXPECT_FALSE(ParseToml("a = \"unterminated\n").ok());
  EXPECT_FALSE(ParseToml("a = nope\n").ok());
  EXPECT_FALSE(ParseToml("[[arrays]]\n").ok());
  EXPECT_FALSE(ParseToml("a = 1 b = 2\n").ok());
}

TEST(UserData, BottlerocketMergesOverUserSettings) {
  BootstrapInputs in = Inputs();
  in.user_data = R"([settings.kubernetes]
max-pods = 5
cluster-name = "wrong"
[settings.kubernetes.node-labels]
"user/label" = "kept"
[settings.host-containers.admin]
enabled = true
)";
  auto ud = GenerateUserData(awsv1::AMIFamily::kBottlerocket, in);
  ASSERT_TRUE(ud.ok()) << ud.status();
  auto doc = ParseToml(*ud);
  ASSERT_TRUE(doc.ok()) << doc.status() << "\n" << *ud;
  const json& k = (*doc)["settings"]["kubernetes"];
  EXPECT_EQ(k["max-pods"], 58);
  EXPECT_EQ(k["cluster-name"], "demo");
  EXPECT_EQ(k["api-server"], "https://api.example:443");
  EXPECT_EQ(k["cluster-certificate"], "Q0E=");
  EXPECT_EQ(k["cluster-dns-ip"], "10.100.0.10");
  EXPECT_EQ(k["node-labels"]["user/label"], "kept");
  EXPECT_EQ(k["node-labels"]["karpenter.sh/nodepool"], "default");
  EXPECT_EQ(k["node-taints"]["karpenter.sh/unregistered"], json::array({":NoExecute"}));
  EXPECT_EQ(k["system-reserved"]["cpu"], "100m");
  EXPECT_EQ((*doc)["settings"]["host-containers"]["admin"]["enabled"], true);

  in.user_data = "not toml at all";
  EXPECT_EQ(GenerateUserData(awsv1::AMIFamily::kBottlerocket, in).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- launch templates and tags ----

LaunchTemplateSpec Spec() {
  awsv1::EC2NodeClassSpec nc;
  LaunchTemplateSpec s;
  s.image_id = "ami-1";
  s.user_data = "#!/bin/bash\n";
  s.block_device_mappings = BlockDeviceMappingsFor(awsv1::AMIFamily::kAL2023, nc);
  s.metadata_options = MetadataOptionsFor(nc);
  s.security_group_ids = {"sg-1", "sg-2"};
  s.instance_profile = "profile";
  s.tags = {{"kubernetes.io/cluster/demo", "owned"}};
  return s;
}

TEST(LaunchTemplate, NameIsContentAddressed) {
  const std::string name = LaunchTemplateName(Spec());
  EXPECT_TRUE(name.starts_with("karpenter.k8s.aws/")) << name;
  EXPECT_EQ(name.size(), std::string("karpenter.k8s.aws/").size() + 16);
  EXPECT_EQ(name, LaunchTemplateName(Spec()));
  std::vector<LaunchTemplateSpec> variants(8, Spec());
  variants[0].image_id = "ami-2";
  variants[1].user_data = "#!/bin/sh\n";
  variants[2].block_device_mappings.clear();
  variants[3].metadata_options.http_put_response_hop_limit = 2;
  variants[4].security_group_ids = {"sg-1"};
  variants[5].instance_profile = "other";
  variants[6].tags["x"] = "y";
  variants[7].detailed_monitoring = true;
  std::set<std::string> names = {name};
  for (const auto& v : variants) names.insert(LaunchTemplateName(v));
  EXPECT_EQ(names.size(), 9u);
}

TEST(LaunchTemplate, DefaultsPerFamily) {
  awsv1::EC2NodeClassSpec nc;
  auto al2023 = BlockDeviceMappingsFor(awsv1::AMIFamily::kAL2023, nc);
  ASSERT_EQ(al2023.size(), 1u);
  EXPECT_EQ(*al2023[0].device_name, "/dev/xvda");
  EXPECT_EQ(al2023[0].ebs->volume_size->ToString(), "20Gi");
  EXPECT_EQ(*al2023[0].ebs->volume_type, "gp3");
  EXPECT_TRUE(*al2023[0].ebs->encrypted);
  auto br = BlockDeviceMappingsFor(awsv1::AMIFamily::kBottlerocket, nc);
  ASSERT_EQ(br.size(), 2u);
  EXPECT_EQ(br[0].ebs->volume_size->ToString(), "4Gi");
  EXPECT_EQ(*br[1].device_name, "/dev/xvdb");
  EXPECT_TRUE(BlockDeviceMappingsFor(awsv1::AMIFamily::kCustom, nc).empty());
  EXPECT_EQ(*BlockDeviceMappingsFor(awsv1::AMIFamily::kWindows2022, nc)[0].device_name,
            "/dev/sda1");
  nc.block_device_mappings.push_back({.device_name = "/dev/xvdz"});
  EXPECT_EQ(*BlockDeviceMappingsFor(awsv1::AMIFamily::kAL2023, nc)[0].device_name, "/dev/xvdz");

  const awsv1::MetadataOptions m = MetadataOptionsFor(nc);
  EXPECT_EQ(*m.http_tokens, awsv1::HttpTokens::kRequired);
  EXPECT_EQ(*m.http_put_response_hop_limit, 1);
  EXPECT_EQ(*m.http_endpoint, awsv1::FeatureState::kEnabled);
  EXPECT_EQ(*m.http_protocol_ipv6, awsv1::FeatureState::kDisabled);
}

TEST(LaunchTemplate, CreateParams) {
  const QueryParams p = CreateLaunchTemplateParams("karpenter.k8s.aws/x", Spec());
  std::map<std::string, std::string> m(p.begin(), p.end());
  EXPECT_EQ(m["LaunchTemplateName"], "karpenter.k8s.aws/x");
  EXPECT_EQ(m["LaunchTemplateData.ImageId"], "ami-1");
  EXPECT_EQ(m["LaunchTemplateData.UserData"], "IyEvYmluL2Jhc2gK");
  EXPECT_EQ(m["LaunchTemplateData.IamInstanceProfile.Name"], "profile");
  EXPECT_EQ(m["LaunchTemplateData.SecurityGroupId.2"], "sg-2");
  EXPECT_EQ(m["LaunchTemplateData.MetadataOptions.HttpTokens"], "required");
  EXPECT_EQ(m["LaunchTemplateData.MetadataOptions.HttpPutResponseHopLimit"], "1");
  EXPECT_EQ(m["LaunchTemplateData.MetadataOptions.InstanceMetadataTags"], "disabled");
  EXPECT_EQ(m["LaunchTemplateData.BlockDeviceMapping.1.DeviceName"], "/dev/xvda");
  EXPECT_EQ(m["LaunchTemplateData.BlockDeviceMapping.1.Ebs.VolumeSize"], "20");
  EXPECT_EQ(m["LaunchTemplateData.BlockDeviceMapping.1.Ebs.VolumeType"], "gp3");
  EXPECT_EQ(m["LaunchTemplateData.TagSpecification.1.ResourceType"], "instance");
  EXPECT_EQ(m["LaunchTemplateData.TagSpecification.1.Tag.1.Key"], "kubernetes.io/cluster/demo");
  EXPECT_EQ(m["TagSpecification.1.ResourceType"], "launch-template");

  LaunchTemplateSpec pub = Spec();
  pub.associate_public_ip_address = false;
  const QueryParams q = CreateLaunchTemplateParams("n", pub);
  std::map<std::string, std::string> n(q.begin(), q.end());
  EXPECT_EQ(n["LaunchTemplateData.NetworkInterface.1.AssociatePublicIpAddress"], "false");
  EXPECT_EQ(n["LaunchTemplateData.NetworkInterface.1.SecurityGroupId.1"], "sg-1");
  EXPECT_FALSE(n.contains("LaunchTemplateData.SecurityGroupId.1"));
}

TEST(Tags, OwnershipTagsWinAndNameDefaults) {
  auto tags = LaunchTags({{"team", "a"}, {"Name", "custom"}, {"dovetail.sh/nodeclaim-uid", "x"}},
                         "demo", "pool", "claim-1", "uid-1", "nc");
  EXPECT_EQ(tags["Name"], "custom");
  EXPECT_EQ(tags["team"], "a");
  EXPECT_EQ(tags["kubernetes.io/cluster/demo"], "owned");
  EXPECT_EQ(tags["eks:eks-cluster-name"], "demo");
  EXPECT_EQ(tags["karpenter.sh/nodepool"], "pool");
  EXPECT_EQ(tags["karpenter.sh/nodeclaim"], "claim-1");
  EXPECT_EQ(tags["karpenter.k8s.aws/ec2nodeclass"], "nc");
  EXPECT_EQ(tags["dovetail.sh/nodeclaim-uid"], "uid-1");
  EXPECT_EQ(LaunchTags({}, "demo", "pool", "claim-1", "uid-1", "nc")["Name"], "claim-1");
  // A launch template's tags: no NodeClaim, so neither its name nor its UID.
  const auto template_tags = LaunchTags({}, "demo", "pool", "", "", "nc");
  EXPECT_FALSE(template_tags.contains("karpenter.sh/nodeclaim"));
  EXPECT_FALSE(template_tags.contains("dovetail.sh/nodeclaim-uid"));
}

TEST(Tags, RestrictedKeysRejected) {
  EXPECT_TRUE(ValidateUserTags({{"team", "a"}, {"karpenter.sh/other", "b"}}).ok());
  for (const std::string key :
       {"kubernetes.io/cluster/demo", "kubernetes.io/cluster/other", "karpenter.sh/nodepool",
        "karpenter.sh/nodeclaim", "karpenter.k8s.aws/ec2nodeclass", "eks:eks-cluster-name",
        "dovetail.sh/nodeclaim-uid", ""}) {
    EXPECT_EQ(ValidateUserTags({{key, "x"}}).code(), absl::StatusCode::kInvalidArgument) << key;
  }
}

// ---- fleet ----

cp::InstanceTypePtr Type(const std::string& name, int cpu, std::vector<cp::Offering> offerings,
                         bool gpu = false) {
  scheduling::Requirements r;
  r.Add(scheduling::Requirement::In(std::string(v1::kLabelInstanceType), {name}));
  r.Add(scheduling::Requirement::In(std::string(v1::kLabelArch), {"amd64"}));
  if (gpu) r.Add(scheduling::Requirement::In(std::string(v1::kLabelInstanceGpuCount), {"1"}));
  ResourceList capacity = {{"cpu", Quantity::FromUnits(cpu)},
                           {"memory", Quantity::Parse("8Gi").value()},
                           {"pods", Quantity::FromUnits(110)}};
  return std::make_shared<const cp::InstanceType>(name, r, cp::Offerings(std::move(offerings)),
                                                  capacity, cp::InstanceTypeOverhead{});
}

cp::Offering Off(const std::string& ct, const std::string& zone, double price,
                 bool available = true) {
  return cp::Offering::Make(ct, zone, zone + "-id", price, available);
}

cp::Catalog TestCatalog() {
  return cp::Catalog::Create(
             {Type("m5.large", 2,
                   {Off("on-demand", "us-east-1a", 0.096), Off("on-demand", "us-east-1b", 0.096),
                    Off("spot", "us-east-1a", 0.04), Off("spot", "us-east-1b", 0.2)}),
              Type("m5.xlarge", 4,
                   {Off("on-demand", "us-east-1a", 0.192), Off("spot", "us-east-1a", 0.08),
                    Off("spot", "us-east-1c", 0.07)}),
              Type("p3.2xlarge", 8, {Off("spot", "us-east-1a", 0.9)}, /*gpu=*/true)})
      .value();
}

v1::NodeClaim Claim(std::vector<std::string> capacity_types) {
  v1::NodeClaim c;
  c.metadata.name = "claim-1";
  c.metadata.uid = "uid-1";
  c.spec.requirements.push_back({.key = std::string(v1::kCapacityTypeLabelKey),
                                 .op = core::SelectorOperator::kIn,
                                 .values = std::move(capacity_types)});
  c.spec.resources.requests = {{"cpu", Quantity::FromUnits(1)}};
  return c;
}

TEST(Fleet, PlanPrefersSpotAndDropsSpotPricierThanOnDemand) {
  FakeClock clock;
  UnavailableOfferings ice(clock);
  auto plan =
      PlanLaunch(TestCatalog(), Claim({"spot", "on-demand"}), {"us-east-1a", "us-east-1b"}, &ice);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->capacity_type, "spot");
  ASSERT_EQ(plan->candidates.size(), 2u);  // the GPU type is exotic and dropped
  EXPECT_EQ(plan->candidates[0].instance_type->name(), "m5.large");
  ASSERT_EQ(plan->candidates[0].offerings.size(), 1u);  // 1b spot (0.2) > cheapest OD (0.096)
  EXPECT_EQ(plan->candidates[0].offerings[0].zone, "us-east-1a");
  EXPECT_EQ(plan->candidates[1].instance_type->name(), "m5.xlarge");
  ASSERT_EQ(plan->candidates[1].offerings.size(), 1u);  // us-east-1c has no subnet
}

TEST(Fleet, PlanHonoursIceCacheAndCapacityType) {
  FakeClock clock;
  UnavailableOfferings ice(clock);
  ice.MarkUnavailable("InsufficientInstanceCapacity", "spot", "m5.large", "us-east-1a");
  auto plan = PlanLaunch(TestCatalog(), Claim({"spot"}), {"us-east-1a", "us-east-1b"}, &ice);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->candidates[0].instance_type->name(), "m5.xlarge");

  auto od = PlanLaunch(TestCatalog(), Claim({"on-demand"}), {"us-east-1a"}, &ice);
  ASSERT_TRUE(od.ok());
  EXPECT_EQ(od->capacity_type, "on-demand");
  EXPECT_EQ(od->candidates[0].instance_type->name(), "m5.large");

  v1::NodeClaim big = Claim({"on-demand"});
  big.spec.resources.requests["cpu"] = Quantity::FromUnits(64);
  auto none = PlanLaunch(TestCatalog(), big, {"us-east-1a"}, &ice);
  EXPECT_TRUE(cp::IsInsufficientCapacity(none.status())) << none.status();
}

TEST(Fleet, SubnetPerZoneMostFreeIps) {
  std::vector<awsv1::Subnet> subnets = {{"subnet-a1", "us-east-1a", "use1-az1"},
                                        {"subnet-a2", "us-east-1a", "use1-az1"},
                                        {"subnet-b1", "us-east-1b", "use1-az2"},
                                        {"subnet-b2", "us-east-1b", "use1-az2"}};
  auto chosen = SubnetPerZone(subnets, {{"subnet-a1", 10}, {"subnet-a2", 200}});
  EXPECT_EQ(chosen["us-east-1a"], "subnet-a2");
  EXPECT_EQ(chosen["us-east-1b"], "subnet-b1");  // no counts: status order
}

TEST(Fleet, OverridesAndRequest) {
  FakeClock clock;
  UnavailableOfferings ice(clock);
  auto plan = PlanLaunch(TestCatalog(), Claim({"on-demand"}), {"us-east-1a", "us-east-1b"}, &ice);
  ASSERT_TRUE(plan.ok());
  auto overrides = BuildOverrides(plan->candidates, {{"us-east-1a", "subnet-a"}},
                                  {{"m5.large", "ami-1"}, {"m5.xlarge", "ami-1"}});
  ASSERT_EQ(overrides.size(), 2u);  // 1b has no subnet here
  EXPECT_EQ(overrides[0], (FleetOverride{"m5.large", "us-east-1a", "subnet-a", "ami-1", 0.096}));
  EXPECT_EQ(overrides[1].instance_type, "m5.xlarge");

  FleetRequest request{.client_token = "uid-1",
                       .capacity_type = "on-demand",
                       .configs = {{"karpenter.k8s.aws/abc", overrides}},
                       .tags = {{"karpenter.sh/nodepool", "default"}}};
  QueryParams p = CreateFleetParams(request);
  std::map<std::string, std::string> m(p.begin(), p.end());
  EXPECT_EQ(m["Type"], "instant");
  EXPECT_EQ(m["ClientToken"], "uid-1");
  EXPECT_EQ(m["TargetCapacitySpecification.TotalTargetCapacity"], "1");
  EXPECT_EQ(m["TargetCapacitySpecification.DefaultTargetCapacityType"], "on-demand");
  EXPECT_EQ(m["OnDemandOptions.AllocationStrategy"], "lowest-price");
  EXPECT_FALSE(m.contains("SpotOptions.AllocationStrategy"));
  EXPECT_EQ(m["LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName"],
            "karpenter.k8s.aws/abc");
  EXPECT_EQ(m["LaunchTemplateConfigs.1.Overrides.2.InstanceType"], "m5.xlarge");
  EXPECT_EQ(m["LaunchTemplateConfigs.1.Overrides.1.SubnetId"], "subnet-a");
  EXPECT_EQ(m["LaunchTemplateConfigs.1.Overrides.1.ImageId"], "ami-1");
  EXPECT_EQ(m["TagSpecification.1.ResourceType"], "instance");
  EXPECT_EQ(m["TagSpecification.3.ResourceType"], "fleet");
  request.capacity_type = "spot";
  p = CreateFleetParams(request);
  m = std::map<std::string, std::string>(p.begin(), p.end());
  EXPECT_EQ(m["SpotOptions.AllocationStrategy"], "price-capacity-optimized");

  // The token: the UID and a digest of everything else, whatever the old token was.
  const std::string token = FleetClientToken("uid-1", request);
  EXPECT_TRUE(token.starts_with("uid-1-")) << token;
  EXPECT_EQ(token.size(), 6u + 16u);
  request.client_token = token;
  EXPECT_EQ(FleetClientToken("uid-1", request), token);
  request.configs[0].overrides.pop_back();
  EXPECT_NE(FleetClientToken("uid-1", request), token) << "a changed plan keeps its token";
  EXPECT_LE(FleetClientToken("0b7f1c52-4f3a-4a8e-9c1d-2f6e8a9b0c1d", request).size(), 64u);
}

TEST(Fleet, ResponseErrorsMarkTheIceCache) {
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_string(R"(<CreateFleetResponse>
  <fleetId>fleet-1</fleetId>
  <errorSet>
    <item><launchTemplateAndOverrides><overrides><instanceType>m5.large</instanceType>
      <availabilityZone>us-east-1a</availabilityZone><subnetId>subnet-a</subnetId></overrides>
      </launchTemplateAndOverrides><lifecycle>spot</lifecycle>
      <errorCode>InsufficientInstanceCapacity</errorCode><errorMessage>none</errorMessage></item>
    <item><launchTemplateAndOverrides><overrides><instanceType>m5.xlarge</instanceType>
      <availabilityZone>us-east-1b</availabilityZone></overrides></launchTemplateAndOverrides>
      <errorCode>InsufficientFreeAddressesInSubnet</errorCode></item>
  </errorSet>
  <fleetInstanceSet/>
</CreateFleetResponse>)"));
  FleetResult r = ParseCreateFleetResponse(doc.document_element());
  EXPECT_EQ(r.fleet_id, "fleet-1");
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_TRUE(r.instances.empty());
  FakeClock clock;
  UnavailableOfferings ice(clock);
  EXPECT_EQ(MarkFleetErrors(r.errors, "spot", ice), 1);
  EXPECT_TRUE(ice.IsUnavailable("spot", "m5.large", "us-east-1a"));
  EXPECT_FALSE(ice.IsUnavailable("spot", "m5.xlarge", "us-east-1b"));
  EXPECT_TRUE(cp::IsInsufficientCapacity(NoInstanceError(r.errors)));
  EXPECT_TRUE(cp::IsInsufficientCapacity(NoInstanceError({})));

  std::vector<FleetError> other = {{.code = "InvalidParameterValue", .message = "bad"}};
  absl::Status s = NoInstanceError(other);
  ASSERT_TRUE(cp::IsCreateError(s)) << s;
  EXPECT_EQ(cp::GetCreateError(s)->reason, "InvalidParameterValue");

  std::vector<FleetError> slr = {{.code = "AuthFailure.ServiceLinkedRoleCreationNotPermitted"}};
  MarkFleetErrors(slr, "spot", ice);
  EXPECT_TRUE(ice.IsCapacityTypeUnavailable("spot"));

  pugi::xml_document ok;
  ASSERT_TRUE(ok.load_string(R"(<CreateFleetResponse><fleetId>fleet-2</fleetId>
  <fleetInstanceSet><item><launchTemplateAndOverrides><overrides>
    <instanceType>m5.large</instanceType><availabilityZone>us-east-1a</availabilityZone>
    <subnetId>subnet-a</subnetId></overrides></launchTemplateAndOverrides>
    <lifecycle>on-demand</lifecycle><instanceIds><item>i-0123</item></instanceIds>
    <instanceType>m5.large</instanceType></item></fleetInstanceSet></CreateFleetResponse>)"));
  FleetResult r2 = ParseCreateFleetResponse(ok.document_element());
  ASSERT_EQ(r2.instances.size(), 1u);
  EXPECT_EQ(r2.instances[0].instance_id, "i-0123");
  EXPECT_EQ(r2.instances[0].zone, "us-east-1a");
  EXPECT_EQ(r2.instances[0].subnet_id, "subnet-a");
  EXPECT_EQ(r2.instances[0].lifecycle, "on-demand");
}

TEST(ProviderId, Parse) {
  EXPECT_EQ(*InstanceIdFromProviderId("aws:///us-east-1a/i-0abc"), "i-0abc");
  EXPECT_FALSE(InstanceIdFromProviderId("kwok://x").ok());
  EXPECT_FALSE(InstanceIdFromProviderId("aws:///us-east-1a/").ok());
}

// ---- drift ----

awsv1::EC2NodeClass DriftClass() {
  awsv1::EC2NodeClass nc;
  nc.metadata.name = "default";
  nc.metadata.annotations = {{"karpenter.k8s.aws/ec2nodeclass-hash", "111"},
                             {"karpenter.k8s.aws/ec2nodeclass-hash-version", "v5"}};
  nc.status.amis = {
      {.id = "ami-amd",
       .requirements = {{.key = "kubernetes.io/arch",
                         .op = core::SelectorOperator::kIn,
                         .values = {"amd64"}}}},
      {.id = "ami-arm",
       .requirements = {
           {.key = "kubernetes.io/arch", .op = core::SelectorOperator::kIn, .values = {"arm64"}}}}};
  nc.status.subnets = {{"subnet-a", "us-east-1a", ""}};
  nc.status.security_groups = {{"sg-1", "a"}, {"sg-2", "b"}};
  return nc;
}

TEST(Drift, Reasons) {
  const awsv1::EC2NodeClass nc = DriftClass();
  v1::NodeClaim claim;
  claim.metadata.labels = {{"kubernetes.io/arch", "amd64"}};
  claim.metadata.annotations = nc.metadata.annotations;
  claim.status.image_id = "ami-amd";
  InstanceFacts facts{"ami-amd", "subnet-a", {"sg-2", "sg-1"}};
  EXPECT_EQ(*DriftReason(nc, claim, facts, nullptr), "");

  v1::NodeClaim hash = claim;
  hash.metadata.annotations["karpenter.k8s.aws/ec2nodeclass-hash"] = "222";
  EXPECT_EQ(*DriftReason(nc, hash, facts, nullptr), "NodeClassDrift");
  hash.metadata.annotations["karpenter.k8s.aws/ec2nodeclass-hash-version"] = "v4";
  EXPECT_EQ(*DriftReason(nc, hash, facts, nullptr), "");  // other version: re-stamped, no drift

  v1::NodeClaim ami = claim;
  ami.status.image_id = "ami-arm";  // not the AMI for amd64
  EXPECT_EQ(*DriftReason(nc, ami, facts, nullptr), "AMIDrift");

  InstanceFacts sg = facts;
  sg.security_group_ids = {"sg-1"};
  EXPECT_EQ(*DriftReason(nc, claim, sg, nullptr), "SecurityGroupDrift");

  InstanceFacts subnet = facts;
  subnet.subnet_id = "subnet-z";
  EXPECT_EQ(*DriftReason(nc, claim, subnet, nullptr), "SubnetDrift");

  // Capacity reservations: the NodeClaim's label, or the instance's reservation when described.
  awsv1::EC2NodeClass reserved = nc;
  reserved.status.capacity_reservations = {{.id = "cr-live"}};
  v1::NodeClaim in_live = claim;
  in_live.metadata.labels["karpenter.k8s.aws/capacity-reservation-id"] = "cr-live";
  EXPECT_EQ(*DriftReason(reserved, in_live, facts, nullptr), "");
  v1::NodeClaim in_gone = claim;
  in_gone.metadata.labels["karpenter.k8s.aws/capacity-reservation-id"] = "cr-gone";
  EXPECT_EQ(*DriftReason(reserved, in_gone, facts, nullptr), "CapacityReservationDrift");
  EXPECT_EQ(*DriftReason(nc, in_gone, facts, nullptr), "CapacityReservationDrift");
  InstanceFacts left = facts;
  left.capacity_reservation_id = "";  // described: no longer in a reservation
  EXPECT_EQ(*DriftReason(reserved, in_gone, left, nullptr), "");
  InstanceFacts moved = facts;
  moved.capacity_reservation_id = "cr-gone";
  EXPECT_EQ(*DriftReason(reserved, in_live, moved, nullptr), "CapacityReservationDrift");
  EXPECT_EQ(*DriftReason(reserved, claim, facts, nullptr), "");  // not reserved
  InstanceFacts both = subnet;                                   // subnet drift is reported first
  EXPECT_EQ(*DriftReason(reserved, in_gone, both, nullptr), "SubnetDrift");

  awsv1::EC2NodeClass empty = nc;
  empty.status.amis.clear();
  EXPECT_EQ(DriftReason(empty, claim, facts, nullptr).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace dovetail::providers::aws
