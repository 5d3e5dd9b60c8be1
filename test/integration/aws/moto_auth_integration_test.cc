// SigV4 against a verifier: a moto server started with INITIAL_NO_AUTH_ACTION_COUNT=3 checks the
// signature of every request after the first three (it recomputes it with botocore for the
// access key's secret) and rejects unknown keys. The first three requests create an IAM user with
// an allow-all policy and an access key; everything after is signed with that key.
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "dovetail/common/test_temp_dir.h"
#include "dovetail/providers/aws/credentials_chain.h"
#include "dovetail/providers/aws/ec2_client.h"
#include "dovetail/providers/aws/iam_client.h"
#include "dovetail/providers/aws/query_protocol.h"
#include "dovetail/providers/aws/sqs_client.h"
#include "dovetail/providers/aws/ssm_client.h"
#include "gtest/gtest.h"
#include "test/integration/aws/moto_env.h"

namespace dovetail::providers::aws {
namespace {

using testing::MotoClient;

constexpr std::string_view kIamVersion = "2010-05-08";
constexpr char kAllowAll[] =
    R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]})";

class MotoAuthTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_FALSE(testing::MotoEndpoint().empty());
    HttpTransport transport;
    RealClock clock;
    StaticCredentialsProvider bootstrap(
        AwsCredentials{.access_key_id = "AKIDBOOTSTRAP", .secret_access_key = "bootstrap"});
    auto iam = MotoClient(kIam, transport, &bootstrap, clock);
    ASSERT_TRUE(CallQuery(*iam, "CreateUser", kIamVersion, {{"UserName", "dovetail"}}).ok());
    ASSERT_TRUE(
        CallQuery(*iam, "PutUserPolicy", kIamVersion,
                  {{"UserName", "dovetail"}, {"PolicyName", "all"}, {"PolicyDocument", kAllowAll}})
            .ok());
    auto key = CallQuery(*iam, "CreateAccessKey", kIamVersion, {{"UserName", "dovetail"}});
    ASSERT_TRUE(key.ok()) << key.status();
    pugi::xml_node k = (*key)->document_element().child("CreateAccessKeyResult").child("AccessKey");
    user_ = new AwsCredentials{.access_key_id = Text(k, "AccessKeyId"),
                               .secret_access_key = Text(k, "SecretAccessKey")};
    ASSERT_FALSE(user_->access_key_id.empty());
  }

  absl::StatusOr<std::vector<Ec2AvailabilityZone>> ZonesWith(const AwsCredentials& creds) {
    StaticCredentialsProvider provider(creds);
    auto client = MotoClient(kEc2, transport_, &provider, clock_);
    return Ec2Client(*client).DescribeAvailabilityZones();
  }

  // An IAM role anyone may assume, allowed everything; returns its ARN (empty on failure).
  std::string CreateRole(const std::string& name) {
    StaticCredentialsProvider provider(*user_);
    auto iam = MotoClient(kIam, transport_, &provider, clock_);
    const std::string trust =
        R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"sts:AssumeRole"}]})";
    auto role = CallQuery(*iam, "CreateRole", kIamVersion,
                          {{"RoleName", name}, {"AssumeRolePolicyDocument", trust}});
    EXPECT_TRUE(role.ok()) << role.status();
    if (!role.ok()) return "";
    EXPECT_TRUE(
        CallQuery(*iam, "PutRolePolicy", kIamVersion,
                  {{"RoleName", name}, {"PolicyName", "all"}, {"PolicyDocument", kAllowAll}})
            .ok());
    return Text((*role)->document_element().child("CreateRoleResult").child("Role"), "Arn");
  }

  static AwsCredentials* user_;
  HttpTransport transport_;
  RealClock clock_;
};

AwsCredentials* MotoAuthTest::user_ = nullptr;

TEST_F(MotoAuthTest, CorrectlySignedEc2AndSsmRequestsAreAccepted) {
  auto zones = ZonesWith(*user_);
  ASSERT_TRUE(zones.ok()) << zones.status();
  EXPECT_FALSE(zones->empty());
  // A body with characters that need percent-encoding, and the JSON protocol.
  StaticCredentialsProvider provider(*user_);
  auto ec2 = MotoClient(kEc2, transport_, &provider, clock_);
  auto subnets = Ec2Client(*ec2).DescribeSubnets({{"tag:team name/x", {"a b+c=d&e"}}});
  ASSERT_TRUE(subnets.ok()) << subnets.status();
  auto ssm_client = MotoClient(kSsm, transport_, &provider, clock_);
  SsmClient ssm(*ssm_client);
  ASSERT_TRUE(ssm.PutParameter("/dovetail/auth/param", "v 1/2").ok());
  auto p = ssm.GetParameter("/dovetail/auth/param");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->value, "v 1/2");
}

TEST_F(MotoAuthTest, CorrectlySignedSqsAndIamRequestsAreAccepted) {
  StaticCredentialsProvider provider(*user_);
  auto sqs_client = MotoClient(kSqs, transport_, &provider, clock_);
  SqsClient sqs(*sqs_client);
  auto url = sqs.CreateQueue("dovetail-auth");
  ASSERT_TRUE(url.ok()) << url.status();
  const std::string body = R"({"detail":"a b+c=d&e/\u00e9"})";
  ASSERT_TRUE(sqs.SendMessage(*url, body).ok());
  auto messages = sqs.ReceiveMessage(*url, {.wait_time = absl::Seconds(1)});
  ASSERT_TRUE(messages.ok()) << messages.status();
  ASSERT_EQ(messages->size(), 1u);
  EXPECT_EQ((*messages)[0].body, body);
  ASSERT_TRUE(sqs.DeleteMessage(*url, (*messages)[0].receipt_handle).ok());
  // IAM: the global endpoint signed for us-east-1, tags with characters that need encoding.
  auto iam_client = MotoClient(kIam, transport_, &provider, clock_);
  IamClient iam(*iam_client);
  auto profile = iam.CreateInstanceProfile("dovetail-auth", "/karpenter/us-east-1/c/u/",
                                           {{"kubernetes.io/cluster/c", "owned"}, {"a b", "c=d"}});
  ASSERT_TRUE(profile.ok()) << profile.status();
  ASSERT_TRUE(iam.DeleteInstanceProfile("dovetail-auth").ok());

  StaticCredentialsProvider wrong(
      AwsCredentials{.access_key_id = user_->access_key_id, .secret_access_key = "not-it"});
  auto wrong_client = MotoClient(kSqs, transport_, &wrong, clock_);
  auto rejected = SqsClient(*wrong_client).GetQueueUrl("dovetail-auth");
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.status().code(), absl::StatusCode::kPermissionDenied) << rejected.status();
}

TEST_F(MotoAuthTest, AWrongSecretIsRejected) {
  AwsCredentials wrong = *user_;
  wrong.secret_access_key += "x";
  auto zones = ZonesWith(wrong);
  ASSERT_FALSE(zones.ok());
  EXPECT_EQ(zones.status().code(), absl::StatusCode::kPermissionDenied) << zones.status();
  // EC2 reports a signature mismatch as AuthFailure; the JSON services as SignatureDoesNotMatch.
  EXPECT_EQ(AwsErrorCode(zones.status()), "AuthFailure") << zones.status();
  StaticCredentialsProvider provider(wrong);
  auto ssm_client = MotoClient(kSsm, transport_, &provider, clock_);
  auto p = SsmClient(*ssm_client).GetParameter("/dovetail/auth/absent");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kPermissionDenied) << p.status();
}

TEST_F(MotoAuthTest, AnUnknownAccessKeyIsRejected) {
  auto zones = ZonesWith({.access_key_id = "AKIDUNKNOWN000000000", .secret_access_key = "s"});
  ASSERT_FALSE(zones.ok());
  EXPECT_EQ(zones.status().code(), absl::StatusCode::kPermissionDenied) << zones.status();
}

TEST_F(MotoAuthTest, TemporaryCredentialsSignWithTheirSessionToken) {
  StaticCredentialsProvider provider(*user_);
  const std::string arn = CreateRole("dovetail-temp");
  ASSERT_FALSE(arn.empty());
  auto sts = MotoClient(kSts, transport_, &provider, clock_);
  auto assumed =
      CallQuery(*sts, "AssumeRole", "2011-06-15", {{"RoleArn", arn}, {"RoleSessionName", "it"}});
  ASSERT_TRUE(assumed.ok()) << assumed.status();
  pugi::xml_node c = (*assumed)->document_element().child("AssumeRoleResult").child("Credentials");
  AwsCredentials temp{.access_key_id = Text(c, "AccessKeyId"),
                      .secret_access_key = Text(c, "SecretAccessKey"),
                      .session_token = Text(c, "SessionToken")};
  ASSERT_FALSE(temp.session_token.empty());
  auto zones = ZonesWith(temp);
  ASSERT_TRUE(zones.ok()) << zones.status();
  AwsCredentials tampered = temp;
  tampered.secret_access_key = user_->secret_access_key;
  EXPECT_FALSE(ZonesWith(tampered).ok());
}

// The default chain resolving shared-config profiles against moto's STS, every request checked by
// moto's signature verifier: a role assumed with a source profile's keys, a role assumed with
// another role's credentials, and credential_process. The assumed credentials are fetched again
// before they expire.
TEST_F(MotoAuthTest, SharedConfigProfilesAssumeRolesAndRunCredentialProcesses) {
  const std::string deploy = CreateRole("dovetail-deploy");
  const std::string chained = CreateRole("dovetail-chained");
  ASSERT_FALSE(deploy.empty());
  ASSERT_FALSE(chained.empty());
  const std::string dir = dovetail::testing::ProcessTempDir("moto_profiles");
  const std::string credentials_file = dir + "/credentials";
  const std::string config_file = dir + "/config";
  std::ofstream(credentials_file) << "[base]\naws_access_key_id = " << user_->access_key_id
                                  << "\naws_secret_access_key = " << user_->secret_access_key
                                  << "\n";
  std::ofstream(config_file)
      << "[profile deploy]\nrole_arn = " << deploy
      << "\nsource_profile = base\nrole_session_name = dovetail-it\nexternal_id = ext-1\n"
      << "duration_seconds = 900\n"
      << "[profile chained]\nrole_arn = " << chained << "\nsource_profile = deploy\n"
      << "[profile proc]\ncredential_process = printf '{\"Version\": 1, \"AccessKeyId\": \""
      << user_->access_key_id << "\", \"SecretAccessKey\": \"" << user_->secret_access_key
      << "\"}'\n";
  auto sts = MotoClient(kSts, transport_, nullptr, clock_);  // unsigned, as the controller's
  FakeClock clock(absl::Now());
  auto chain_for = [&](const std::string& profile) {
    return DefaultCredentialsChain(*sts, clock,
                                   MapEnv({{"AWS_PROFILE", profile},
                                           {"AWS_SHARED_CREDENTIALS_FILE", credentials_file},
                                           {"AWS_CONFIG_FILE", config_file},
                                           {"AWS_EC2_METADATA_DISABLED", "true"}}));
  };

  auto deploy_chain = chain_for("deploy");
  auto first = deploy_chain->Get();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->source, "assume-role:" + deploy + " from profile:base");
  EXPECT_FALSE(first->session_token.empty());
  ASSERT_TRUE(first->expiration.has_value());
  ASSERT_TRUE(ZonesWith(*first).ok());
  EXPECT_EQ(sts->Stats("AssumeRole").calls, 1);
  // duration_seconds = 900: after 11 minutes the chain assumes the role again.
  clock.Advance(absl::Minutes(9));
  EXPECT_EQ(deploy_chain->Get()->access_key_id, first->access_key_id);
  clock.Advance(absl::Minutes(2));
  auto second = deploy_chain->Get();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(second->access_key_id, first->access_key_id);
  EXPECT_EQ(sts->Stats("AssumeRole").calls, 2);
  ASSERT_TRUE(ZonesWith(*second).ok());

  auto via_role = chain_for("chained")->Get();
  ASSERT_TRUE(via_role.ok()) << via_role.status();
  EXPECT_EQ(via_role->source,
            "assume-role:" + chained + " from assume-role:" + deploy + " from profile:base");
  auto zones = ZonesWith(*via_role);
  ASSERT_TRUE(zones.ok()) << zones.status();

  auto processed = chain_for("proc")->Get();
  ASSERT_TRUE(processed.ok()) << processed.status();
  EXPECT_EQ(processed->source, "profile:proc");
  ASSERT_TRUE(ZonesWith(*processed).ok());
}

}  // namespace
}  // namespace dovetail::providers::aws
