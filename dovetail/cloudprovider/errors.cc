#include "dovetail/cloudprovider/errors.h"

#include <string>

#include "absl/strings/cord.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::cloudprovider {
namespace {

constexpr std::string_view kInsufficientCapacityUrl =
    "type.dovetail.dev/cloudprovider.InsufficientCapacity";
constexpr std::string_view kNodeClaimNotFoundUrl =
    "type.dovetail.dev/cloudprovider.NodeClaimNotFound";
constexpr std::string_view kNodeClassNotReadyUrl =
    "type.dovetail.dev/cloudprovider.NodeClassNotReady";
// The payload of a CreateError is its reason.
constexpr std::string_view kCreateErrorUrl = "type.dovetail.dev/cloudprovider.CreateError";

absl::Status Tagged(absl::StatusCode code, std::string_view message, std::string_view url,
                    std::string_view payload = "") {
  absl::Status status(code, AsAbsl(message));
  status.SetPayload(AsAbsl(url), absl::Cord(AsAbsl(payload)));
  return status;
}

bool HasTag(const absl::Status& status, absl::StatusCode code, std::string_view url) {
  return status.code() == code && status.GetPayload(AsAbsl(url)).has_value();
}

}  // namespace

absl::Status InsufficientCapacityError(std::string_view message) {
  return Tagged(absl::StatusCode::kResourceExhausted, message, kInsufficientCapacityUrl);
}

bool IsInsufficientCapacity(const absl::Status& status) {
  return HasTag(status, absl::StatusCode::kResourceExhausted, kInsufficientCapacityUrl);
}

absl::Status NodeClaimNotFoundError(std::string_view message) {
  return Tagged(absl::StatusCode::kNotFound, message, kNodeClaimNotFoundUrl);
}

bool IsNodeClaimNotFound(const absl::Status& status) {
  return HasTag(status, absl::StatusCode::kNotFound, kNodeClaimNotFoundUrl);
}

absl::Status NodeClassNotReadyError(std::string_view message) {
  return Tagged(absl::StatusCode::kFailedPrecondition, message, kNodeClassNotReadyUrl);
}

bool IsNodeClassNotReady(const absl::Status& status) {
  return HasTag(status, absl::StatusCode::kFailedPrecondition, kNodeClassNotReadyUrl);
}

absl::Status CreateError(std::string_view reason, std::string_view message) {
  return Tagged(absl::StatusCode::kUnavailable, message, kCreateErrorUrl, reason);
}

bool IsCreateError(const absl::Status& status) {
  return HasTag(status, absl::StatusCode::kUnavailable, kCreateErrorUrl);
}

std::optional<CreateErrorInfo> GetCreateError(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kUnavailable) return std::nullopt;
  auto reason = status.GetPayload(AsAbsl(kCreateErrorUrl));
  if (!reason.has_value()) return std::nullopt;
  return CreateErrorInfo{std::string(*reason), std::string(status.message())};
}

}  // namespace dovetail::cloudprovider
