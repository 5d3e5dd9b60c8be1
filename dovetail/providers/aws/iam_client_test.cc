#include "dovetail/providers/aws/iam_client.h"

#include <memory>
#include <string>
#include <vector>

#include "dovetail/apis/hash/drift_hash.h"
#include "dovetail/providers/aws/served_client_test.h"
#include "gtest/gtest.h"

namespace dovetail::providers::aws {
namespace {

TEST(IamNamingTest, Fnv1MatchesTheReferenceHash) {
  // Values of Go's hash/fnv New64 (FNV-1), the hasher upstream's struct hash uses by default.
  EXPECT_EQ(apis::hash::Fnv1(""), 14695981039346656037ULL);
  EXPECT_EQ(apis::hash::Fnv1("us-west-2default"), 4067990795380418201ULL);
}

TEST(IamNamingTest, InstanceProfileNameIsClusterAndHashOfRegionNodeClassAndSuffix) {
  EXPECT_EQ(InstanceProfileName("my-cluster", "us-west-2", "default", ""),
            "my-cluster_4067990795380418201");
  EXPECT_EQ(
      InstanceProfileName("prod", "us-east-1", "default", "5a4c6a2e-3b1f-4d0c-9a8e-1f2b3c4d5e6f"),
      "prod_18272458236850212190");
  // Deterministic, and every input matters.
  EXPECT_EQ(InstanceProfileName("c", "r", "n", "u"), InstanceProfileName("c", "r", "n", "u"));
  EXPECT_NE(InstanceProfileName("c", "r", "n", "u"), InstanceProfileName("c", "r2", "n", "u"));
  EXPECT_NE(InstanceProfileName("c", "r", "n", "u"), InstanceProfileName("c", "r", "n2", "u"));
  EXPECT_NE(InstanceProfileName("c", "r", "n", "u"), InstanceProfileName("c", "r", "n", "u2"));
  // IAM's limit is 128 characters: a 100-character cluster name still fits.
  EXPECT_LE(InstanceProfileName(std::string(100, 'c'), "ap-southeast-5", "n", "u").size(), 128u);
}

TEST(IamNamingTest, PathTagsAndRoleName) {
  EXPECT_EQ(InstanceProfilePath("us-west-2", "my-cluster", "0f3c-uid"),
            "/karpenter/us-west-2/my-cluster/0f3c-uid/");
  IamTags tags = InstanceProfileTags("my-cluster", "us-west-2", "default",
                                     {{"team", "a"}, {"eks:eks-cluster-name", "spoofed"}});
  EXPECT_EQ(tags, (IamTags{{"eks:eks-cluster-name", "my-cluster"},
                           {"karpenter.k8s.aws/ec2nodeclass", "default"},
                           {"kubernetes.io/cluster/my-cluster", "owned"},
                           {"team", "a"},
                           {"topology.kubernetes.io/region", "us-west-2"}}));
  EXPECT_EQ(RoleNameWithoutPath("KarpenterNodeRole"), "KarpenterNodeRole");
  EXPECT_EQ(RoleNameWithoutPath("service/nodes/KarpenterNodeRole"), "KarpenterNodeRole");
}

class IamClientTest : public testing::ServedClientTest {
 protected:
  // An IamClient talking to server_, which the test has started.
  IamClient& Iam() {
    client_ = std::make_unique<AwsClient>(
        Dependencies(),
        AwsClient::Options{.service = kIam, .region = "eu-west-1", .endpoint = server_.url()});
    iam_ = std::make_unique<IamClient>(*client_);
    return *iam_;
  }

  std::unique_ptr<AwsClient> client_;
  std::unique_ptr<IamClient> iam_;
};

TEST_F(IamClientTest, ParsesProfilesAndFollowsMarker) {
  std::vector<std::string> bodies;
  server_.server().Post("/", [&bodies](const httplib::Request& req, httplib::Response& res) {
    bodies.push_back(req.body);
    const bool second = req.body.find("Marker=m1") != std::string::npos;
    std::string profiles =
        second ? "<member><InstanceProfileName>p2</InstanceProfileName><Path>/karpenter/</Path>"
                 "<Roles/></member>"
               : "<member><InstanceProfileName>p1</InstanceProfileName><InstanceProfileId>AIPA1"
                 "</InstanceProfileId><Arn>arn:aws:iam::123456789012:instance-profile/karpenter/p1"
                 "</Arn><Path>/karpenter/</Path><CreateDate>2026-11-30T10:00:00Z</CreateDate>"
                 "<Roles><member><RoleName>NodeRole</RoleName><RoleId>AROA1</RoleId><Path>/</Path>"
                 "<Arn>arn:aws:iam::123456789012:role/NodeRole</Arn></member></Roles>"
                 "<Tags><member><Key>k</Key><Value>v</Value></member></Tags></member>";
    res.set_content(
        "<ListInstanceProfilesResponse xmlns=\"https://iam.amazonaws.com/doc/2010-05-08/\">"
        "<ListInstanceProfilesResult><InstanceProfiles>" +
            profiles + "</InstanceProfiles><IsTruncated>" + (second ? "false" : "true") +
            "</IsTruncated>" + (second ? "" : "<Marker>m1</Marker>") +
            "</ListInstanceProfilesResult></ListInstanceProfilesResponse>",
        "text/xml");
  });
  ASSERT_TRUE(server_.Start());
  IamClient& iam = Iam();
  auto profiles = iam.ListInstanceProfiles("/karpenter/");
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  ASSERT_EQ(profiles->size(), 2u);
  const IamInstanceProfile& p1 = (*profiles)[0];
  EXPECT_EQ(p1.name, "p1");
  EXPECT_EQ(p1.id, "AIPA1");
  EXPECT_EQ(p1.path, "/karpenter/");
  ASSERT_EQ(p1.roles.size(), 1u);
  EXPECT_EQ(p1.roles[0].role_name, "NodeRole");
  EXPECT_EQ(p1.tags, (IamTags{{"k", "v"}}));
  EXPECT_EQ((*profiles)[1].name, "p2");
  EXPECT_TRUE((*profiles)[1].roles.empty());
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_NE(bodies[0].find("Action=ListInstanceProfiles&Version=2010-05-08"), std::string::npos);
  EXPECT_NE(bodies[0].find("PathPrefix=%2Fkarpenter%2F"), std::string::npos) << bodies[0];
}

// A server that ignores PathPrefix (moto does): the answer is filtered again, so a class's
// deletion never sees, and deletes, another class's profiles.
TEST_F(IamClientTest, ProfilesOutsideThePathPrefixAreLeftOut) {
  server_.server().Post("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        "<ListInstanceProfilesResponse><ListInstanceProfilesResult><InstanceProfiles>"
        "<member><InstanceProfileName>mine</InstanceProfileName>"
        "<Path>/karpenter/eu-west-1/demo/uid-1/</Path><Roles/></member>"
        "<member><InstanceProfileName>other-class</InstanceProfileName>"
        "<Path>/karpenter/eu-west-1/demo/uid-2/</Path><Roles/></member>"
        "<member><InstanceProfileName>unmanaged</InstanceProfileName><Path>/</Path><Roles/>"
        "</member></InstanceProfiles><IsTruncated>false</IsTruncated>"
        "</ListInstanceProfilesResult></ListInstanceProfilesResponse>",
        "text/xml");
  });
  ASSERT_TRUE(server_.Start());
  IamClient& iam = Iam();
  auto profiles = iam.ListInstanceProfiles("/karpenter/eu-west-1/demo/uid-1/");
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  ASSERT_EQ(profiles->size(), 1u);
  EXPECT_EQ((*profiles)[0].name, "mine");
  EXPECT_EQ(iam.ListInstanceProfiles("")->size(), 3u);
}

}  // namespace
}  // namespace dovetail::providers::aws
