#include "dovetail/kube/errors.h"

#include <string>
#include <string_view>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "dovetail/common/absl_compat.h"
#include "nlohmann/json.hpp"

namespace dovetail::kube {
namespace {

constexpr char kPayloadUrl[] = "type.dovetail.dev/kube.http";

absl::StatusCode CodeFor(int http_code, std::string_view reason) {
  switch (http_code) {
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 405:
      return absl::StatusCode::kUnimplemented;
    case 409:
      return reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists
                                       : absl::StatusCode::kAborted;
    case 410:  // Gone
    case 412:  // Precondition Failed
      return absl::StatusCode::kFailedPrecondition;
    case 415:  // Unsupported Media Type
    case 422:  // Unprocessable Entity
      return absl::StatusCode::kInvalidArgument;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      break;
  }
  if (http_code >= 500) return absl::StatusCode::kUnavailable;
  return absl::StatusCode::kUnknown;
}

}  // namespace

absl::Status StatusFromHttp(int http_code, std::string_view body) {
  std::string reason;
  std::string message;
  const nlohmann::json json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  // Fields of the wrong type read as absent: a proxy's body must not throw out of here.
  const auto kind = json.is_object() ? json.find("kind") : json.end();
  if (json.is_object() && kind != json.end() && kind->is_string() && *kind == "Status") {
    if (auto it = json.find("reason"); it != json.end() && it->is_string()) reason = *it;
    if (auto it = json.find("message"); it != json.end() && it->is_string()) message = *it;
  } else {
    message = std::string(body.substr(0, 200));
  }
  absl::Status status(
      CodeFor(http_code, reason),
      absl::StrCat("HTTP ", http_code, reason.empty() ? "" : " ", reason, ": ", message));
  status.SetPayload(kPayloadUrl, absl::Cord(absl::StrCat(http_code, " ", reason)));
  return status;
}

absl::Status TransportError(std::string_view what, bool timed_out) {
  return absl::Status(
      timed_out ? absl::StatusCode::kDeadlineExceeded : absl::StatusCode::kUnavailable,
      AsAbsl(what));
}

int HttpCodeOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kPayloadUrl);
  if (!payload.has_value()) return 0;
  const std::string text(*payload);
  int code = 0;
  const std::vector<std::string> parts = absl::StrSplit(text, absl::MaxSplits(' ', 1));
  if (parts.empty() || !absl::SimpleAtoi(parts[0], &code)) return 0;
  return code;
}

std::string ReasonOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kPayloadUrl);
  if (!payload.has_value()) return "";
  const std::string text(*payload);
  const size_t space = text.find(' ');
  return space == std::string::npos ? "" : text.substr(space + 1);
}

bool IsNotFound(const absl::Status& status) { return HttpCodeOf(status) == 404; }
bool IsAlreadyExists(const absl::Status& status) {
  return HttpCodeOf(status) == 409 && ReasonOf(status) == "AlreadyExists";
}
bool IsConflict(const absl::Status& status) {
  return HttpCodeOf(status) == 409 && ReasonOf(status) != "AlreadyExists";
}
bool IsGone(const absl::Status& status) {
  return HttpCodeOf(status) == 410 || ReasonOf(status) == "Expired";
}
bool IsTooManyRequests(const absl::Status& status) { return HttpCodeOf(status) == 429; }
bool IsInvalid(const absl::Status& status) { return HttpCodeOf(status) == 422; }

}  // namespace dovetail::kube
