#include "dovetail/providers/aws/sqs_client.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/providers/aws/json_member.h"
#include "dovetail/providers/aws/json_protocol.h"

namespace dovetail::providers::aws {
namespace {

int64_t Seconds(absl::Duration d) { return absl::ToInt64Seconds(d); }

}  // namespace

absl::StatusOr<nlohmann::json> SqsClient::Call(std::string_view action,
                                               const nlohmann::json& body) {
  ASSIGN_OR_RETURN(HttpResponse response, SendJson(client_, "1.0", "AmazonSQS", action, body));
  if (response.body.empty()) return nlohmann::json::object();
  nlohmann::json parsed = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::InternalError(Cat("sqs:", action, ": response is not JSON"));
  }
  return parsed;
}

absl::StatusOr<std::string> SqsClient::GetQueueUrl(std::string_view name) {
  ASSIGN_OR_RETURN(nlohmann::json response,
                   Call("GetQueueUrl", {{"QueueName", std::string(name)}}));
  std::string url = internal::StringMember(response, "QueueUrl");
  if (url.empty()) return absl::InternalError(Cat("sqs:GetQueueUrl ", name, ": no QueueUrl"));
  return url;
}

absl::StatusOr<std::string> SqsClient::CreateQueue(
    std::string_view name, const std::map<std::string, std::string>& attributes) {
  nlohmann::json body = {{"QueueName", std::string(name)}};
  if (!attributes.empty()) body["Attributes"] = attributes;
  ASSIGN_OR_RETURN(nlohmann::json response, Call("CreateQueue", body));
  std::string url = internal::StringMember(response, "QueueUrl");
  if (url.empty()) return absl::InternalError(Cat("sqs:CreateQueue ", name, ": no QueueUrl"));
  return url;
}

absl::StatusOr<std::vector<SqsMessage>> SqsClient::ReceiveMessage(
    std::string_view queue_url, const SqsReceiveOptions& options) {
  nlohmann::json body = {
      {"QueueUrl", std::string(queue_url)},
      {"MaxNumberOfMessages", std::clamp(options.max_messages, 1, 10)},
      {"WaitTimeSeconds", std::clamp<int64_t>(Seconds(options.wait_time), 0, 20)},
      {"MessageSystemAttributeNames", {"SentTimestamp"}},
  };
  if (options.visibility_timeout > absl::ZeroDuration()) {
    body["VisibilityTimeout"] = Seconds(options.visibility_timeout);
  }
  ASSIGN_OR_RETURN(nlohmann::json response, Call("ReceiveMessage", body));
  std::vector<SqsMessage> out;
  auto messages = response.find("Messages");
  if (messages == response.end() || !messages->is_array()) return out;
  for (const nlohmann::json& m : *messages) {
    SqsMessage msg;
    msg.message_id = internal::StringMember(m, "MessageId");
    msg.receipt_handle = internal::StringMember(m, "ReceiptHandle");
    msg.body = internal::StringMember(m, "Body");
    msg.md5_of_body = internal::StringMember(m, "MD5OfBody");
    if (msg.receipt_handle.empty()) {
      return absl::InternalError(
          Cat("sqs:ReceiveMessage: message ", msg.message_id, " has no ReceiptHandle"));
    }
    if (auto attrs = m.find("Attributes"); attrs != m.end() && attrs->is_object()) {
      for (const auto& [k, v] : attrs->items()) {
        if (v.is_string()) msg.attributes[k] = v.get<std::string>();
      }
    }
    if (auto it = msg.attributes.find("SentTimestamp"); it != msg.attributes.end()) {
      int64_t ms = 0;
      if (absl::SimpleAtoi(it->second, &ms)) msg.sent = absl::FromUnixMillis(ms);
    }
    out.push_back(std::move(msg));
  }
  return out;
}

absl::Status SqsClient::DeleteMessage(std::string_view queue_url, std::string_view receipt_handle) {
  return Call("DeleteMessage", {{"QueueUrl", std::string(queue_url)},
                                {"ReceiptHandle", std::string(receipt_handle)}})
      .status();
}

absl::StatusOr<std::string> SqsClient::SendMessage(std::string_view queue_url,
                                                   std::string_view body) {
  ASSIGN_OR_RETURN(nlohmann::json response,
                   Call("SendMessage", {{"QueueUrl", std::string(queue_url)},
                                        {"MessageBody", std::string(body)}}));
  return internal::StringMember(response, "MessageId");
}

}  // namespace dovetail::providers::aws
