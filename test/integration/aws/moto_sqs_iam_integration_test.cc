// SQS (JSON 1.0) and IAM (Query) against moto: the interruption queue round trip with
// EventBridge-shaped messages (including garbage that must be deleted after it fails to parse),
// and the managed instance profile's lifecycle.
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "dovetail/providers/aws/iam_client.h"
#include "dovetail/providers/aws/interruption_messages.h"
#include "dovetail/providers/aws/sqs_client.h"
#include "gtest/gtest.h"
#include "test/integration/aws/moto_env.h"

namespace dovetail::providers::aws {
namespace {

using testing::MotoConnection;

class MotoSqsIamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(testing::MotoEndpoint().empty()) << "DOVETAIL_MOTO_DIR/endpoint missing";
    sqs_client_ = aws_connection_.Client(kSqs);
    iam_client_ = aws_connection_.Client(kIam);
  }

  MotoConnection aws_connection_;
  std::unique_ptr<AwsClient> sqs_client_;
  std::unique_ptr<AwsClient> iam_client_;
};

std::string Event(const std::string& source, const std::string& detail_type,
                  const std::string& detail) {
  return R"({"version":"0","id":"6a7e8feb-b491-4cf7-a9f1-bf3703467718","detail-type":")" +
         detail_type + R"(","source":")" + source +
         R"(","account":"123456789012","time":"2026-11-30T10:00:00Z","region":"us-east-1",)"
         R"("resources":[],"detail":)" +
         detail + "}";
}

TEST_F(MotoSqsIamTest, InterruptionQueueRoundTripParsesAndDeletesEveryMessage) {
  SqsClient sqs(*sqs_client_);
  auto url = sqs.CreateQueue("dovetail-interruptions", {{"MessageRetentionPeriod", "300"}});
  ASSERT_TRUE(url.ok()) << url.status();
  auto found = sqs.GetQueueUrl("dovetail-interruptions");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, *url);
  EXPECT_TRUE(absl::EndsWith(*found, "/dovetail-interruptions")) << *found;

  const std::map<std::string, std::string> bodies = {
      {"spot", Event("aws.ec2", "EC2 Spot Instance Interruption Warning",
                     R"({"instance-id":"i-0000000000000spot","instance-action":"terminate"})")},
      {"rebalance", Event("aws.ec2", "EC2 Instance Rebalance Recommendation",
                          R"({"instance-id":"i-000000000rebalance"})")},
      {"stopped", Event("aws.ec2", "EC2 Instance State-change Notification",
                        R"({"instance-id":"i-00000000000000stop","state":"stopping"})")},
      {"scheduled", Event("aws.health", "AWS Health Event",
                          R"({"service":"EC2","eventTypeCategory":"scheduledChange",)"
                          R"("eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",)"
                          R"("affectedEntities":[{"entityValue":"i-0000000000000heal"}]})")},
      {"garbage", "this is not an EventBridge event {"},
      {"foreign", Event("aws.s3", "Object Created", R"({"bucket":{"name":"b"}})")},
  };
  std::map<std::string, std::string> label_by_id;
  for (const auto& [label, body] : bodies) {
    auto id = sqs.SendMessage(*url, body);
    ASSERT_TRUE(id.ok()) << label << ": " << id.status();
    label_by_id[*id] = label;
  }

  // What an interruption controller does: receive, parse, act, delete — every message, also the
  // ones that do not parse.
  std::map<std::string, InterruptionMessage> parsed;
  for (int round = 0; round < 10 && parsed.size() < bodies.size(); ++round) {
    auto messages = sqs.ReceiveMessage(
        *url, {.wait_time = absl::Seconds(1), .visibility_timeout = absl::Seconds(30)});
    ASSERT_TRUE(messages.ok()) << messages.status();
    for (const SqsMessage& m : *messages) {
      ASSERT_TRUE(label_by_id.contains(m.message_id)) << m.message_id;
      const std::string& label = label_by_id[m.message_id];
      EXPECT_EQ(m.body, bodies.at(label));
      EXPECT_NE(m.sent, absl::InfinitePast());
      parsed[label] = ParseInterruptionMessage(m.body);
      ASSERT_TRUE(sqs.DeleteMessage(*url, m.receipt_handle).ok()) << label;
    }
  }
  ASSERT_EQ(parsed.size(), bodies.size());
  EXPECT_EQ(parsed["spot"].kind, InterruptionKind::kSpotInterruption);
  EXPECT_EQ(parsed["spot"].instance_ids, std::vector<std::string>{"i-0000000000000spot"});
  EXPECT_EQ(parsed["rebalance"].kind, InterruptionKind::kRebalanceRecommendation);
  EXPECT_EQ(parsed["stopped"].kind, InterruptionKind::kInstanceStopped);
  EXPECT_EQ(parsed["scheduled"].kind, InterruptionKind::kScheduledChange);
  EXPECT_EQ(parsed["scheduled"].instance_ids, std::vector<std::string>{"i-0000000000000heal"});
  EXPECT_EQ(parsed["garbage"].kind, InterruptionKind::kInvalid);
  EXPECT_EQ(parsed["foreign"].kind, InterruptionKind::kUnknown);

  // Nothing is left, visible or in flight.
  auto attributes =
      sqs.Call("GetQueueAttributes", {{"QueueUrl", *url}, {"AttributeNames", {"All"}}});
  ASSERT_TRUE(attributes.ok()) << attributes.status();
  EXPECT_EQ((*attributes)["Attributes"]["ApproximateNumberOfMessages"], "0") << *attributes;
  EXPECT_EQ((*attributes)["Attributes"]["ApproximateNumberOfMessagesNotVisible"], "0");
  auto empty = sqs.ReceiveMessage(*url, {.wait_time = absl::ZeroDuration()});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->empty());
  EXPECT_GE(sqs_client_->Stats("ReceiveMessage").calls, 2);
  EXPECT_EQ(sqs_client_->Stats("DeleteMessage").calls, 6);
}

TEST_F(MotoSqsIamTest, MissingQueueIsNotFound) {
  SqsClient sqs(*sqs_client_);
  auto url = sqs.GetQueueUrl("no-such-queue");
  ASSERT_FALSE(url.ok());
  EXPECT_EQ(url.status().code(), absl::StatusCode::kNotFound) << url.status();
}

TEST_F(MotoSqsIamTest, ManagedInstanceProfileLifecycle) {
  IamClient iam(*iam_client_);
  auto role = iam.Query("CreateRole",
                        {{"RoleName", "KarpenterNodeRole-moto"},
                         {"Path", "/nodes/"},
                         {"AssumeRolePolicyDocument",
                          R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":)"
                          R"({"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]})"}});
  ASSERT_TRUE(role.ok()) << role.status();

  const std::string name = InstanceProfileName("moto-cluster", "us-east-1", "default",
                                               "0b5f3a55-6a4e-4c1c-8d52-1c4f3e2a9b10");
  const std::string path = InstanceProfilePath("us-east-1", "moto-cluster", "uid-1234");
  const IamTags tags = InstanceProfileTags("moto-cluster", "us-east-1", "default", {});
  auto created = iam.CreateInstanceProfile(name, path, tags);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->name, name);
  EXPECT_EQ(created->path, path);
  EXPECT_TRUE(absl::StrContains(created->arn, ":instance-profile/karpenter/us-east-1/"))
      << created->arn;
  EXPECT_TRUE(created->roles.empty());

  auto again = iam.CreateInstanceProfile(name, path, tags);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(AwsErrorCode(again.status()), "EntityAlreadyExists") << again.status();

  // The role is given with its path, as EC2NodeClass.spec.role may be; the path is stripped.
  ASSERT_TRUE(iam.AddRoleToInstanceProfile(name, "nodes/KarpenterNodeRole-moto").ok());
  auto got = iam.GetInstanceProfile(name);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->roles.size(), 1u);
  EXPECT_EQ(got->roles[0].role_name, "KarpenterNodeRole-moto");
  EXPECT_EQ(got->roles[0].path, "/nodes/");
  EXPECT_EQ(got->tags.at("karpenter.k8s.aws/ec2nodeclass"), "default");
  EXPECT_EQ(got->tags.at("kubernetes.io/cluster/moto-cluster"), "owned");

  auto for_role = iam.ListInstanceProfilesForRole("KarpenterNodeRole-moto");
  ASSERT_TRUE(for_role.ok()) << for_role.status();
  ASSERT_EQ(for_role->size(), 1u);
  EXPECT_EQ((*for_role)[0].name, name);
  auto listed = iam.ListInstanceProfiles("/karpenter/us-east-1/moto-cluster/");
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::set<std::string> names;
  for (const auto& p : *listed) names.insert(p.name);
  EXPECT_TRUE(names.contains(name));

  ASSERT_TRUE(iam.TagInstanceProfile(name, {{"team", "platform"}}).ok());
  got = iam.GetInstanceProfile(name);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->tags.at("team"), "platform");

  // A profile with a role cannot be deleted; remove the role first, as upstream does.
  auto conflict = iam.DeleteInstanceProfile(name);
  EXPECT_EQ(AwsErrorCode(conflict), "DeleteConflict") << conflict;
  ASSERT_TRUE(iam.RemoveRoleFromInstanceProfile(name, "KarpenterNodeRole-moto").ok());
  ASSERT_TRUE(iam.DeleteInstanceProfile(name).ok());
  auto gone = iam.GetInstanceProfile(name);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound) << gone.status();
  EXPECT_EQ(AwsErrorCode(gone.status()), "NoSuchEntity");
  EXPECT_EQ(iam_client_->Stats("GetInstanceProfile").errors, 1);
}

}  // namespace
}  // namespace dovetail::providers::aws
