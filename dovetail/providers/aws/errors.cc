#include "dovetail/providers/aws/errors.h"

#include <array>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dovetail/common/absl_compat.h"
#include "nlohmann/json.hpp"
#include "pugixml.hpp"

namespace dovetail::providers::aws {
namespace {

constexpr char kCodePayload[] = "type.dovetail.dev/aws-error-code";

bool OneOf(std::string_view code, std::initializer_list<std::string_view> list) {
  for (std::string_view c : list) {
    if (code == c) return true;
  }
  return false;
}

absl::StatusCode ClassOf(int http_status, std::string_view code) {
  if (IsThrottlingCode(code) || IsTransientCode(code) || http_status >= 500 || http_status == 429) {
    return absl::StatusCode::kUnavailable;
  }
  if (IsUnfulfillableCapacityCode(code)) return absl::StatusCode::kResourceExhausted;
  if (code.ends_with("NotFound") || code.ends_with(".NotFound") ||
      code.ends_with("NotFoundException") ||
      OneOf(code, {"NoSuchEntity", "ParameterNotFound", "ParameterVersionNotFound",
                   "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"})) {
    return absl::StatusCode::kNotFound;
  }
  if (code.starts_with("AccessDenied") || code.starts_with("ExpiredToken") ||
      OneOf(code, {"AuthFailure", "UnauthorizedOperation", "SignatureDoesNotMatch",
                   "InvalidClientTokenId", "InvalidAccessKeyId", "IncompleteSignature",
                   "MissingAuthenticationToken", "UnrecognizedClientException",
                   "InvalidIdentityToken"}) ||
      http_status == 401 || http_status == 403) {
    return absl::StatusCode::kPermissionDenied;
  }
  if (code == "DryRunOperation") return absl::StatusCode::kAborted;
  return absl::StatusCode::kInvalidArgument;
}

}  // namespace

AwsErrorDetail ParseXmlError(const HttpResponse& response) {
  AwsErrorDetail detail;
  pugi::xml_document doc;
  if (!doc.load_buffer(response.body.data(), response.body.size())) return detail;
  pugi::xpath_node error = doc.select_node("//Error");
  if (error) {
    detail.code = error.node().child_value("Code");
    detail.message = error.node().child_value("Message");
  }
  pugi::xpath_node request_id = doc.select_node("//RequestID | //RequestId");
  if (request_id) detail.request_id = request_id.node().child_value();
  return detail;
}

AwsErrorDetail ParseJsonError(const HttpResponse& response) {
  AwsErrorDetail detail;
  detail.request_id = response.Header("x-amzn-RequestId");
  std::string type = response.Header("X-Amzn-ErrorType");
  nlohmann::json body = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_object()) {
    if (type.empty() && body.contains("__type") && body["__type"].is_string()) {
      type = body["__type"].get<std::string>();
    }
    for (const char* key : {"message", "Message"}) {
      if (body.contains(key) && body[key].is_string())
        detail.message = body[key].get<std::string>();
    }
  }
  if (auto hash = type.rfind('#'); hash != std::string::npos) type = type.substr(hash + 1);
  if (auto colon = type.find(':'); colon != std::string::npos) type = type.substr(0, colon);
  detail.code = type;
  return detail;
}

absl::Status AwsErrorStatus(std::string_view api, int http_status, const AwsErrorDetail& detail) {
  std::string code = detail.code.empty() ? absl::StrCat("HTTP", http_status) : detail.code;
  std::string message = Cat(api, ": ", code);
  if (!detail.message.empty()) CatTo(&message, ": ", detail.message);
  CatTo(&message, " (HTTP ", http_status);
  if (!detail.request_id.empty()) CatTo(&message, ", request id ", detail.request_id);
  message += ")";
  absl::Status status(ClassOf(http_status, code), message);
  status.SetPayload(kCodePayload, absl::Cord(code));
  return status;
}

std::string AwsErrorCode(const absl::Status& status) {
  auto payload = status.GetPayload(kCodePayload);
  return payload ? std::string(*payload) : std::string();
}

bool IsThrottlingCode(std::string_view code) {
  return OneOf(
      code, {"Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
             "TooManyRequestsException", "ProvisionedThroughputExceededException",
             "TransactionInProgressException", "RequestLimitExceeded", "BandwidthLimitExceeded",
             "LimitExceededException", "RequestThrottled", "SlowDown", "PriorRequestNotComplete",
             "EC2ThrottledException"});
}

bool IsTransientCode(std::string_view code) {
  return OneOf(code,
               {"RequestTimeout", "RequestTimeoutException", "InternalError", "InternalFailure",
                "ServiceUnavailable", "Unavailable", "IDPCommunicationError"});
}

bool IsUnfulfillableCapacityCode(std::string_view code) {
  return OneOf(
      code, {"InsufficientInstanceCapacity", "MaxSpotInstanceCountExceeded", "VcpuLimitExceeded",
             "UnfulfillableCapacity", "Unsupported", "InsufficientFreeAddressesInSubnet",
             "MaxFleetCountExceeded", "ReservationCapacityExceeded", "InsufficientCapacityOnHost"});
}

}  // namespace dovetail::providers::aws
