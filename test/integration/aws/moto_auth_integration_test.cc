// SigV4 against a verifier: a moto server started with INITIAL_NO_AUTH_ACTION_COUNT=3 checks the
// signature of every request after the first three (it recomputes it with botocore for the
// access key's secret) and rejects unknown keys. The first three requests create an IAM user with
// an allow-all policy and an access key; everything after is signed with that key.
#include "absl/strings/match.h"
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
  auto iam = MotoClient(kIam, transport_, &provider, clock_);
  const std::string trust =
      R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"sts:AssumeRole"}]})";
  auto role = CallQuery(*iam, "CreateRole", kIamVersion,
                        {{"RoleName", "dovetail-temp"}, {"AssumeRolePolicyDocument", trust}});
  ASSERT_TRUE(role.ok()) << role.status();
  ASSERT_TRUE(
      CallQuery(
          *iam, "PutRolePolicy", kIamVersion,
          {{"RoleName", "dovetail-temp"}, {"PolicyName", "all"}, {"PolicyDocument", kAllowAll}})
          .ok());
  const std::string arn =
      Text((*role)->document_element().child("CreateRoleResult").child("Role"), "Arn");
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

}  // namespace
}  // namespace dovetail::providers::aws
