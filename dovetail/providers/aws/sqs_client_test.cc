#include "dovetail/providers/aws/sqs_client.h"

#include "dovetail/providers/aws/served_client_test.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dovetail::providers::aws {
namespace {

using SqsClientTest = testing::ServedClientTest;

TEST_F(SqsClientTest, SpeaksJson10AndParsesReceivedMessages) {
  std::vector<nlohmann::json> requests;
  std::vector<std::string> targets;
  server_.server().Post("/", [&](const httplib::Request& req, httplib::Response& res) {
    EXPECT_EQ(req.get_header_value("Content-Type"), "application/x-amz-json-1.0");
    targets.push_back(req.get_header_value("X-Amz-Target"));
    requests.push_back(nlohmann::json::parse(req.body));
    if (targets.back() == "AmazonSQS.ReceiveMessage") {
      res.set_content(R"({"Messages":[{"MessageId":"m-1","ReceiptHandle":"rh-1","MD5OfBody":"x",
          "Body":"{\"a\":1}","Attributes":{"SentTimestamp":"1764498000123"}}]})",
                      "application/x-amz-json-1.0");
    } else if (targets.back() == "AmazonSQS.GetQueueUrl") {
      res.status = 400;
      res.set_header("x-amzn-query-error", "AWS.SimpleQueueService.NonExistentQueue;Sender");
      res.set_content(R"({"__type":"com.amazonaws.sqs#QueueDoesNotExist",
          "message":"The specified queue does not exist."})",
                      "application/x-amz-json-1.0");
    } else {
      res.set_content("{}", "application/x-amz-json-1.0");
    }
  });
  ASSERT_TRUE(server_.Start());
  AwsClient client(Dependencies(), {.service = kSqs,
                                    .region = "us-east-1",
                                    .endpoint = server_.url(),
                                    .parse_error = ParseJsonError,
                                    .max_attempts = 1});
  SqsClient sqs(client);
  const std::string url = "https://sqs.us-east-1.amazonaws.com/123456789012/interruptions";
  auto messages = sqs.ReceiveMessage(
      url, {.wait_time = absl::Seconds(20), .visibility_timeout = absl::Seconds(20)});
  ASSERT_TRUE(messages.ok()) << messages.status();
  ASSERT_EQ(messages->size(), 1u);
  EXPECT_EQ((*messages)[0].message_id, "m-1");
  EXPECT_EQ((*messages)[0].receipt_handle, "rh-1");
  EXPECT_EQ((*messages)[0].body, R"({"a":1})");
  EXPECT_EQ((*messages)[0].sent, absl::FromUnixMillis(1764498000123));
  EXPECT_EQ(requests[0]["QueueUrl"], url);
  EXPECT_EQ(requests[0]["MaxNumberOfMessages"], 10);
  EXPECT_EQ(requests[0]["WaitTimeSeconds"], 20);
  EXPECT_EQ(requests[0]["VisibilityTimeout"], 20);

  ASSERT_TRUE(sqs.DeleteMessage(url, "rh-1").ok());
  EXPECT_EQ(targets[1], "AmazonSQS.DeleteMessage");
  EXPECT_EQ(requests[1]["ReceiptHandle"], "rh-1");

  auto missing = sqs.GetQueueUrl("nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  EXPECT_EQ(AwsErrorCode(missing.status()), "QueueDoesNotExist");
  EXPECT_EQ(client.Stats("ReceiveMessage").calls, 1);
}

}  // namespace
}  // namespace dovetail::providers::aws
