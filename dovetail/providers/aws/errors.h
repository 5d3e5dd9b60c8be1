// AWS API errors as absl::Status. The service's error code (e.g. "InvalidSubnetID.NotFound",
// "RequestLimitExceeded") travels as a payload so callers branch on AwsErrorCode(status), never on
// message text; the absl code gives the broad class:
//   kNotFound           *.NotFound, *NotFound, NoSuchEntity, ParameterNotFound, ...
//   kPermissionDenied   AuthFailure, UnauthorizedOperation, AccessDenied*, SignatureDoesNotMatch,
//                       InvalidClientTokenId, ExpiredToken*, ...
//   kResourceExhausted  unfulfillable capacity (InsufficientInstanceCapacity, VcpuLimitExceeded,
//                       MaxSpotInstanceCountExceeded, ...)
//   kUnavailable        throttling (after retries), HTTP 5xx, transport failures
//   kInvalidArgument    InvalidParameter*, MissingParameter, ValidationError/Exception, other 4xx
// Free functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "dovetail/providers/aws/http_transport.h"

namespace dovetail::providers::aws {

struct AwsErrorDetail {
  std::string code;
  std::string message;
  std::string request_id;
};

// The error in an EC2 (<Response><Errors><Error>) or Query (<ErrorResponse><Error>) XML body.
// Empty code when the body holds none.
AwsErrorDetail ParseXmlError(const HttpResponse& response);
// The error in a JSON-protocol body ({"__type": "...#Code", "message": "..."}) or the
// X-Amzn-ErrorType header.
AwsErrorDetail ParseJsonError(const HttpResponse& response);

// The Status for an error response of `api` (e.g. "ec2:DescribeSubnets").
absl::Status AwsErrorStatus(std::string_view api, int http_status, const AwsErrorDetail& detail);

// The AWS error code carried by `status`; empty when it carries none.
std::string AwsErrorCode(const absl::Status& status);

// Throttling codes (RequestLimitExceeded, Throttling, ThrottlingException, ...), retried with
// backoff and counted as throttles.
bool IsThrottlingCode(std::string_view code);
// Transient codes that are retried like 5xx (RequestTimeout, InternalError, ...).
bool IsTransientCode(std::string_view code);
// Codes upstream treats as unfulfillable capacity.
bool IsUnfulfillableCapacityCode(std::string_view code);

}  // namespace dovetail::providers::aws
