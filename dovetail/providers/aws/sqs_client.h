// SqsClient: the SQS calls of the interruption queue, in the AWS JSON 1.0 protocol (POST /,
// Content-Type application/x-amz-json-1.0, X-Amz-Target: AmazonSQS.<Action>; the queue URL goes
// in the body). SQS moved from the Query protocol to JSON 1.0 in 2023; the pinned moto (5.2.5)
// and its botocore model speak JSON 1.0 only for SQS.
//
// ReceiveMessage long-polls: the HttpTransport timeout must exceed `wait_time` (the default 30 s
// does for the default 20 s). CreateQueue and SendMessage exist for tests and fixtures.
//
// The AwsClient must parse JSON errors (Options::parse_error = ParseJsonError); a missing queue
// is kNotFound (QueueDoesNotExist / AWS.SimpleQueueService.NonExistentQueue). Retries, token
// buckets and counters are AwsClient's. Thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dovetail/providers/aws/aws_client.h"
#include "nlohmann/json.hpp"

namespace dovetail::providers::aws {

struct SqsMessage {
  std::string message_id;
  std::string receipt_handle;
  std::string body;
  std::string md5_of_body;
  std::map<std::string, std::string> attributes;  // system attributes (SentTimestamp, ...)
  absl::Time sent = absl::InfinitePast();         // SentTimestamp; InfinitePast when absent
};

struct SqsReceiveOptions {
  int max_messages = 10;                                  // 1..10
  absl::Duration wait_time = absl::Seconds(20);           // long poll, 0..20 s
  absl::Duration visibility_timeout = absl::Seconds(20);  // <= 0: the queue's default
};

class SqsClient {
 public:
  explicit SqsClient(AwsClient& client) : client_(client) {}

  // One JSON call: `action` without the "AmazonSQS." prefix. Internal for a non-JSON response.
  absl::StatusOr<nlohmann::json> Call(std::string_view action, const nlohmann::json& body);

  // The URL of the queue named `name` (the interruption queue setting is a name).
  absl::StatusOr<std::string> GetQueueUrl(std::string_view name);
  // Creates the queue (idempotent for the same attributes); returns its URL.
  absl::StatusOr<std::string> CreateQueue(
      std::string_view name, const std::map<std::string, std::string>& attributes = {});
  // Up to max_messages messages; empty when the long poll ends with none.
  absl::StatusOr<std::vector<SqsMessage>> ReceiveMessage(std::string_view queue_url,
                                                         const SqsReceiveOptions& options = {});
  absl::Status DeleteMessage(std::string_view queue_url, std::string_view receipt_handle);
  // Returns the message id.
  absl::StatusOr<std::string> SendMessage(std::string_view queue_url, std::string_view body);

 private:
  AwsClient& client_;
};

}  // namespace dovetail::providers::aws
