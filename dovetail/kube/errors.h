// Kubernetes API errors as absl::Status. The REST client turns every non-2xx response into a
// status whose code follows the HTTP status (404 NotFound, 409 AlreadyExists or Aborted for a
// conflict, 410 FailedPrecondition "Gone", 422 InvalidArgument, 429 ResourceExhausted, 5xx
// Unavailable, ...) and whose payload keeps the HTTP code and the API server's `reason`, so that
// callers branch on the predicates below and never on message text.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace dovetail::kube {

// Builds the status for an HTTP response. `body` is the API server's metav1.Status JSON when it
// sent one (its reason and message are used); otherwise the body's start is quoted.
absl::Status StatusFromHttp(int http_code, std::string_view body);

// A status for a failure below HTTP (connection refused, TLS, timeout): Unavailable or
// DeadlineExceeded, with HTTP code 0.
absl::Status TransportError(std::string_view what, bool timed_out);

// The HTTP code a status came from (0 when it did not come from an HTTP response).
int HttpCodeOf(const absl::Status& status);
// The API server's reason (`NotFound`, `Conflict`, `AlreadyExists`, `Expired`, ...), or empty.
std::string ReasonOf(const absl::Status& status);

bool IsNotFound(const absl::Status& status);
bool IsAlreadyExists(const absl::Status& status);
// A write lost an optimistic-concurrency race (409 Conflict): re-read and retry.
bool IsConflict(const absl::Status& status);
// The requested resourceVersion is no longer available (410 Gone / reason Expired): re-list.
bool IsGone(const absl::Status& status);
bool IsTooManyRequests(const absl::Status& status);
bool IsInvalid(const absl::Status& status);

}  // namespace dovetail::kube
