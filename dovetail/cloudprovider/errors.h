// Typed CloudProvider errors. Each is an absl::Status with a conventional code plus a payload that
// marks its kind, so that controllers branch on a predicate (`IsInsufficientCapacity(status)`)
// rather than on message text, and so that an unrelated ResourceExhausted or NotFound (e.g. an API
// throttle, a missing launch template) is never mistaken for one of these.
//
//   kind                   code                 meaning for the caller
//   insufficient capacity  kResourceExhausted   the cloud has no capacity for the requested
//                                               offerings right now; mark them unavailable, retry
//                                               with others
//   nodeclaim not found    kNotFound            the instance behind a NodeClaim is gone; Delete is
//                                               complete, Get means the NodeClaim can be removed
//   nodeclass not ready    kFailedPrecondition  the NodeClaim's NodeClass is not Ready; retry later
//   create error           kUnavailable         launch failed for a provider-specific reason that
//                                               becomes the NodeClaim's Launched condition reason
//
// The payload survives copies and RETURN_IF_ERROR propagation; building a new Status from the
// message alone drops it. Free functions over value types; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace dovetail::cloudprovider {

absl::Status InsufficientCapacityError(std::string_view message);
bool IsInsufficientCapacity(const absl::Status& status);

absl::Status NodeClaimNotFoundError(std::string_view message);
bool IsNodeClaimNotFound(const absl::Status& status);

absl::Status NodeClassNotReadyError(std::string_view message);
bool IsNodeClassNotReady(const absl::Status& status);

// A launch failure with a machine-readable reason (CamelCase, e.g. "LaunchTemplateNotFound") for
// the NodeClaim's Launched=False condition and a human-readable message.
struct CreateErrorInfo {
  std::string reason;
  std::string message;
  bool operator==(const CreateErrorInfo&) const = default;
};

absl::Status CreateError(std::string_view reason, std::string_view message);
bool IsCreateError(const absl::Status& status);
// The reason and message of a CreateError; nullopt for any other status.
std::optional<CreateErrorInfo> GetCreateError(const absl::Status& status);

}  // namespace dovetail::cloudprovider
