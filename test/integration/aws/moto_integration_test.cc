// The AWS plumbing against a real moto server (test/integration/aws/moto_fixture.py): EC2 Query,
// SSM JSON and STS through signed (or, for web identity, unsigned) requests. moto starts empty;
// each test creates what it describes.
#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "dovetail/common/test_temp_dir.h"
#include "dovetail/providers/aws/api_catalog.h"
#include "dovetail/providers/aws/bootstrap.h"
#include "dovetail/providers/aws/ec2_client.h"
#include "dovetail/providers/aws/eks_client.h"
#include "dovetail/providers/aws/ssm_client.h"
#include "dovetail/providers/aws/web_identity_credentials.h"
#include "gtest/gtest.h"
#include "test/integration/aws/moto_env.h"

namespace dovetail::providers::aws {
namespace {

using testing::MotoClient;
using testing::MotoConnection;

class MotoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(testing::MotoEndpoint().empty()) << "DOVETAIL_MOTO_DIR/endpoint missing";
    ec2_client_ = aws_connection_.Client(kEc2);
    ssm_client_ = aws_connection_.Client(kSsm);
  }

  // Runs an EC2 action that must succeed and returns its response.
  std::unique_ptr<pugi::xml_document> Ec2(std::string_view action, const QueryParams& params) {
    auto doc = Ec2Client(*ec2_client_).Query(action, params);
    EXPECT_TRUE(doc.ok()) << action << ": " << doc.status();
    return doc.ok() ? std::move(*doc) : std::make_unique<pugi::xml_document>();
  }

  MotoConnection aws_connection_;
  std::unique_ptr<AwsClient> ec2_client_;
  std::unique_ptr<AwsClient> ssm_client_;
};

TEST_F(MotoTest, DescribeInstanceTypesReturnsEveryTypeWithTheFieldsTheCatalogNeeds) {
  Ec2Client ec2(*ec2_client_);
  ec2.set_page_size(20);
  auto types = ec2.DescribeInstanceTypes();
  ASSERT_TRUE(types.ok()) << types.status();
  EXPECT_GT(types->size(), 500u);
  std::set<std::string> names;
  const Ec2InstanceTypeInfo* m5 = nullptr;
  for (const auto& t : *types) {
    EXPECT_TRUE(names.insert(t.instance_type).second) << "duplicate " << t.instance_type;
    if (t.instance_type == "m5.large") m5 = &t;
  }
  ASSERT_NE(m5, nullptr);
  EXPECT_EQ(m5->default_vcpus, 2);
  EXPECT_EQ(m5->memory_mib, 8192);
  EXPECT_EQ(m5->architectures, std::vector<std::string>{"x86_64"});
  EXPECT_EQ(m5->default_network_card_interfaces, 3);
  EXPECT_EQ(m5->ipv4_addresses_per_interface, 10);
  EXPECT_EQ(m5->hypervisor, "nitro");
  // Filtering by name through InstanceType.N.
  auto two = ec2.DescribeInstanceTypes({}, {"m5.large", "c6g.xlarge"});
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->size(), 2u);
  // An unknown type is a typed error with EC2's code.
  auto unknown = ec2.DescribeInstanceTypes({}, {"m5.nonexistent"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(AwsErrorCode(unknown.status()), "InvalidInstanceType");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(MotoTest, OfferingsAreListedPerAvailabilityZone) {
  Ec2Client ec2(*ec2_client_);
  auto zones = ec2.DescribeAvailabilityZones();
  ASSERT_TRUE(zones.ok()) << zones.status();
  ASSERT_GE(zones->size(), 2u);
  std::set<std::string> zone_names;
  for (const auto& z : *zones) {
    EXPECT_TRUE(absl::StartsWith(z.zone_name, "us-east-1")) << z.zone_name;
    EXPECT_FALSE(z.zone_id.empty());
    zone_names.insert(z.zone_name);
  }
  auto offerings =
      ec2.DescribeInstanceTypeOfferings("availability-zone", {{"instance-type", {"m5.large"}}});
  ASSERT_TRUE(offerings.ok()) << offerings.status();
  ASSERT_FALSE(offerings->empty());
  for (const auto& o : *offerings) {
    EXPECT_EQ(o.instance_type, "m5.large");
    EXPECT_EQ(o.location_type, "availability-zone");
    EXPECT_TRUE(zone_names.contains(o.location)) << o.location;
  }
  auto one_zone = ec2.DescribeInstanceTypeOfferings("availability-zone",
                                                    {{"location", {(*offerings)[0].location}}});
  ASSERT_TRUE(one_zone.ok());
  EXPECT_GT(one_zone->size(), offerings->size());
  for (const auto& o : *one_zone) EXPECT_EQ(o.location, (*offerings)[0].location);
}

TEST_F(MotoTest, SubnetsAndSecurityGroupsAreFoundByTagsIdsAndNames) {
  auto vpc = Ec2("CreateVpc", {{"CidrBlock", "10.42.0.0/16"}});
  const std::string vpc_id = Text(vpc->document_element().child("vpc"), "vpcId");
  ASSERT_TRUE(absl::StartsWith(vpc_id, "vpc-")) << vpc_id;
  auto subnet = [&](const std::string& cidr, const std::string& zone, bool tagged) {
    QueryParams p{{"VpcId", vpc_id}, {"CidrBlock", cidr}, {"AvailabilityZone", zone}};
    if (tagged) {
      p.insert(p.end(), {{"TagSpecification.1.ResourceType", "subnet"},
                         {"TagSpecification.1.Tag.1.Key", "karpenter.sh/discovery"},
                         {"TagSpecification.1.Tag.1.Value", "moto-cluster"}});
    }
    auto doc = Ec2("CreateSubnet", p);
    return Text(doc->document_element().child("subnet"), "subnetId");
  };
  const std::string a = subnet("10.42.1.0/24", "us-east-1a", true);
  const std::string b = subnet("10.42.2.0/24", "us-east-1b", true);
  const std::string untagged = subnet("10.42.3.0/24", "us-east-1a", false);

  Ec2Client ec2(*ec2_client_);
  auto tagged = ec2.DescribeSubnets({{"tag:karpenter.sh/discovery", {"moto-cluster"}}});
  ASSERT_TRUE(tagged.ok()) << tagged.status();
  ASSERT_EQ(tagged->size(), 2u);
  std::set<std::string> ids;
  for (const auto& s : *tagged) {
    ids.insert(s.subnet_id);
    EXPECT_EQ(s.vpc_id, vpc_id);
    EXPECT_EQ(s.available_ip_address_count, 251);  // a /24 less AWS's 5 reserved addresses
    EXPECT_EQ(s.tags.at("karpenter.sh/discovery"), "moto-cluster");
    EXPECT_FALSE(s.availability_zone_id.empty());
  }
  EXPECT_EQ(ids, (std::set<std::string>{a, b}));
  auto by_key =
      ec2.DescribeSubnets({{"tag-key", {"karpenter.sh/discovery"}}, {"vpc-id", {vpc_id}}});
  ASSERT_TRUE(by_key.ok());
  EXPECT_EQ(by_key->size(), 2u);
  auto by_id = ec2.DescribeSubnets({}, {untagged});
  ASSERT_TRUE(by_id.ok());
  ASSERT_EQ(by_id->size(), 1u);
  EXPECT_EQ((*by_id)[0].availability_zone, "us-east-1a");
  auto missing = ec2.DescribeSubnets({}, {"subnet-0000000000000000f"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(AwsErrorCode(missing.status()), "InvalidSubnetID.NotFound");

  auto sg =
      Ec2("CreateSecurityGroup",
          {{"GroupName", "dovetail-nodes"}, {"GroupDescription", "nodes"}, {"VpcId", vpc_id}});
  const std::string sg_id = Text(sg->document_element(), "groupId");
  ASSERT_TRUE(absl::StartsWith(sg_id, "sg-")) << sg_id;
  Ec2("CreateTags", {{"ResourceId.1", sg_id},
                     {"Tag.1.Key", "karpenter.sh/discovery"},
                     {"Tag.1.Value", "moto-cluster"}});
  auto groups = ec2.DescribeSecurityGroups({{"tag:karpenter.sh/discovery", {"moto-cluster"}}});
  ASSERT_TRUE(groups.ok()) << groups.status();
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].group_id, sg_id);
  EXPECT_EQ((*groups)[0].group_name, "dovetail-nodes");
  auto by_name = ec2.DescribeSecurityGroups({{"group-name", {"dovetail-nodes"}}});
  ASSERT_TRUE(by_name.ok());
  ASSERT_EQ(by_name->size(), 1u);
  EXPECT_EQ((*by_name)[0].vpc_id, vpc_id);
  auto by_sg_id = ec2.DescribeSecurityGroups({}, {sg_id});
  ASSERT_TRUE(by_sg_id.ok());
  EXPECT_EQ(by_sg_id->size(), 1u);
}

TEST_F(MotoTest, ImagesAreDescribedByOwnerAndId) {
  Ec2Client ec2(*ec2_client_);
  auto images = ec2.DescribeImages({{"architecture", {"x86_64"}}}, {}, {"amazon"});
  ASSERT_TRUE(images.ok()) << images.status();
  ASSERT_FALSE(images->empty());
  for (const auto& i : *images) {
    EXPECT_TRUE(absl::StartsWith(i.image_id, "ami-"));
    EXPECT_EQ(i.architecture, "x86_64");
  }
  auto one = ec2.DescribeImages({}, {(*images)[0].image_id});
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].name, (*images)[0].name);
}

TEST_F(MotoTest, SsmParameterResolvesAnAmiAlias) {
  SsmClient ssm(*ssm_client_);
  const std::string name =
      "/dovetail/test/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/"
      "image_id";
  ASSERT_TRUE(ssm.PutParameter(name, "ami-0123456789abcdef0").ok());
  auto p = ssm.GetParameter(name);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->value, "ami-0123456789abcdef0");
  EXPECT_EQ(p->name, name);
  EXPECT_EQ(p->type, "String");
  EXPECT_EQ(p->version, 1);
  auto missing = ssm.GetParameter("/dovetail/test/absent");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(AwsErrorCode(missing.status()), "ParameterNotFound");
  EXPECT_EQ(ssm_client_->Stats("GetParameter").calls, 2);
}

TEST_F(MotoTest, WebIdentityCredentialsComeFromStsAndSignEc2Calls) {
  const std::string dir = dovetail::testing::ProcessTempDir("moto_web_identity");
  const std::string token_file = dir + "/token";
  std::ofstream(token_file)
      << "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.sig\n";
  auto sts = MotoClient(kSts, aws_connection_.transport, nullptr, aws_connection_.clock);
  auto env = MapEnv({{"AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/dovetail-controller"},
                     {"AWS_WEB_IDENTITY_TOKEN_FILE", token_file},
                     {"AWS_ROLE_SESSION_NAME", "dovetail-it"}});
  std::vector<std::unique_ptr<CredentialsProvider>> chain;
  chain.push_back(std::make_unique<EnvironmentCredentialsProvider>(MapEnv({})));
  chain.push_back(std::make_unique<WebIdentityCredentialsProvider>(*sts, env));
  CachingCredentialsProvider provider(std::make_unique<ChainCredentialsProvider>(std::move(chain)),
                                      aws_connection_.clock);
  auto creds = provider.Get();
  ASSERT_TRUE(creds.ok()) << creds.status();
  EXPECT_FALSE(creds->access_key_id.empty());
  EXPECT_FALSE(creds->secret_access_key.empty());
  EXPECT_FALSE(creds->session_token.empty());
  ASSERT_TRUE(creds->expiration.has_value());
  EXPECT_GT(*creds->expiration, absl::Now());
  EXPECT_EQ(creds->source, "web-identity:arn:aws:iam::123456789012:role/dovetail-controller");
  // The STS call went out unsigned.
  EXPECT_EQ(sts->Stats("AssumeRoleWithWebIdentity").calls, 1);

  // Cached: a second Get does not call STS again; the credentials sign EC2 calls.
  auto ec2_client = MotoClient(kEc2, aws_connection_.transport, &provider, aws_connection_.clock);
  ASSERT_TRUE(Ec2Client(*ec2_client).DescribeAvailabilityZones().ok());
  ASSERT_TRUE(Ec2Client(*ec2_client).DescribeAvailabilityZones().ok());
  EXPECT_EQ(provider.fetches(), 1);
  EXPECT_EQ(sts->Stats("AssumeRoleWithWebIdentity").calls, 1);
}

// EKS through the REST-JSON protocol, and node bootstrap discovered from it when the settings are
// empty: the endpoint, the CA (EKS's, as the controller's client has none here) and the service
// CIDR from DescribeCluster, the DNS IP from the kube-dns lookup.
TEST_F(MotoTest, BootstrapComesFromDescribeClusterWhenNotSet) {
  auto eks_client = aws_connection_.Client(kEks);
  EksClient eks(*eks_client);
  auto created =
      eks.CreateCluster("dovetail-bootstrap", "arn:aws:iam::123456789012:role/eks",
                        {"subnet-0123456789abcdef0", "subnet-0123456789abcdef1"}, "10.123.0.0/16");
  ASSERT_TRUE(created.ok()) << created.status();
  auto cluster = eks.DescribeCluster("dovetail-bootstrap");
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_EQ(cluster->name, "dovetail-bootstrap");
  EXPECT_TRUE(absl::StartsWith(cluster->endpoint, "https://")) << cluster->endpoint;
  EXPECT_FALSE(cluster->certificate_authority.empty());
  EXPECT_EQ(cluster->service_ipv4_cidr, "10.123.0.0/16");

  auto missing = eks.DescribeCluster("no-such-cluster");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  EXPECT_EQ(AwsErrorCode(missing.status()), "ResourceNotFoundException");

  auto boot = DiscoverBootstrap({.cluster_name = "dovetail-bootstrap"}, eks, /*kube_ca_pem=*/"",
                                [] { return absl::StatusOr<std::string>("10.123.0.10"); });
  ASSERT_TRUE(boot.ok()) << boot.status();
  EXPECT_EQ(boot->endpoint, cluster->endpoint);
  EXPECT_EQ(boot->ca_bundle, cluster->certificate_authority);
  EXPECT_EQ(boot->service_cidr, "10.123.0.0/16");
  EXPECT_EQ(boot->dns_ip, "10.123.0.10");
  EXPECT_EQ(eks_client->Stats("DescribeCluster").calls, 3);

  // A cluster EKS does not know and no CLUSTER_ENDPOINT: start-up fails, naming both.
  auto unknown = DiscoverBootstrap({.cluster_name = "no-such-cluster"}, eks, "", [] {
    return absl::StatusOr<std::string>(absl::NotFoundError("no kube-dns"));
  });
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(unknown.status().message(), "CLUSTER_ENDPOINT"));
  EXPECT_TRUE(absl::StrContains(unknown.status().message(), "ResourceNotFoundException"))
      << unknown.status();
}

TEST_F(MotoTest, CatalogFromTheApiMatchesUpstreamsFormulas) {
  Ec2Client ec2(*ec2_client_);
  absl::Status spot_error;
  auto inputs = FetchApiCatalogInputs(ec2, absl::Now(), &spot_error);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_TRUE(spot_error.ok()) << spot_error;
  ASSERT_TRUE(inputs->spot_prices.has_value());
  EXPECT_FALSE(inputs->spot_prices->empty());
  const std::string dir = DOVETAIL_AWS_DATA_DIR;
  auto files =
      cloudprovider::ReadCatalogFiles(dir + "/instance-types.csv", dir + "/on-demand-prices.csv");
  ASSERT_TRUE(files.ok()) << files.status();
  auto catalog = BuildApiCatalog(*inputs, {.region = "us-east-1", .static_files = *files});
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  EXPECT_GT(catalog->size(), 300u);

  const cloudprovider::InstanceType* m5 = catalog->Find("m5.large");
  ASSERT_NE(m5, nullptr);
  EXPECT_EQ(m5->capacity().at("pods").ToString(), "29");
  EXPECT_EQ(m5->Allocatable().at("cpu").ToString(), "1930m");
  EXPECT_EQ(m5->Allocatable().at("memory").ToString(), "6903Mi");
  std::set<std::string> offered_zones;
  for (const auto& o : m5->offerings()) {
    offered_zones.insert(o.zone);
    if (o.capacity_type == "on-demand") {
      EXPECT_DOUBLE_EQ(o.price, 0.096);
    }
    EXPECT_TRUE(o.available) << o.zone << " " << o.capacity_type;
  }
  std::set<std::string> expected_zones;
  for (const auto& o : inputs->zone_offerings) {
    if (o.instance_type == "m5.large") expected_zones.insert(o.location);
  }
  EXPECT_EQ(offered_zones, expected_zones);

  // Every type moto and upstream's table both know gets upstream's max pods and allocatable,
  // except where moto's ENI data differs from upstream's (counted, and expected to be rare).
  int compared = 0;
  int pods_differ = 0;
  for (const auto& row : files->instance_types) {
    const auto* type = catalog->Find(row.name);
    if (type == nullptr) continue;
    ++compared;
    if (type->capacity().at("pods").ToString() != std::to_string(row.max_pods)) ++pods_differ;
  }
  EXPECT_GT(compared, 300);
  EXPECT_LT(pods_differ * 20, compared)
      << pods_differ << " of " << compared << " differ in max pods";
}

}  // namespace
}  // namespace dovetail::providers::aws
