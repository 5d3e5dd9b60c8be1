// The HTTP layer under every Kubernetes call: libcurl over HTTPS (HTTP/1.1, keep-alive; easy
// handles are pooled so connections are reused), credentials from CredentialProvider, the
// client-side token bucket, per-request timeouts, and retries:
//  - 429 is retried for every verb, waiting for Retry-After when the server sent one and with
//    exponential backoff otherwise;
//  - 5xx is retried for GET, and for other verbs only when the server sent Retry-After (it then
//    promises the request was not processed);
//  - a connection that could not be established is retried for every verb, other transport
//    failures (reset, timeout) only for GET;
//  - 401 makes the credentials be fetched again once (rotated token, expired exec credential).
// Anything else non-2xx is returned as a status built by StatusFromHttp (errors.h).
// Watches use Stream(), which is throttled like any request but never retried (the informer
// owns reconnecting).
// Thread-safe: any number of threads may issue requests concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/common/clock.h"
#include "dovetail/kube/config.h"
#include "dovetail/kube/credentials.h"
#include "dovetail/kube/rate_limiter.h"

namespace dovetail::kube {

struct HttpRequest {
  std::string method = "GET";
  std::string path;  // path and query, e.g. "/api/v1/pods?limit=500"
  std::string body;
  std::string content_type;  // set with a body
  // Zero: the config's timeout. Streams: the whole stream's lifetime (zero: unlimited).
  absl::Duration timeout = absl::ZeroDuration();
  bool retry = true;  // false: one attempt (the caller owns retrying)
};

struct HttpResponse {
  int code = 0;
  std::string body;
};

struct RestClientOptions {
  int max_retries = 6;
  Backoff::Options backoff = {.initial = absl::Milliseconds(100), .max = absl::Seconds(10)};
  absl::Duration max_retry_after = absl::Seconds(60);
  const Clock* clock = nullptr;  // default: a RealClock owned by the client
};

struct RestClientStats {
  int64_t requests = 0;  // attempts sent
  int64_t retries = 0;
  int64_t throttled = 0;  // requests that waited for the token bucket
};

class RestClient {
 public:
  // Errors: InvalidArgument for an unusable config (no server).
  static absl::StatusOr<std::unique_ptr<RestClient>> Create(const RestConfig& config,
                                                            RestClientOptions options = {});
  ~RestClient();
  RestClient(const RestClient&) = delete;
  RestClient& operator=(const RestClient&) = delete;

  // Sends the request (with retries as described above). Returns the 2xx response, or the
  // error status of the last attempt.
  absl::StatusOr<HttpResponse> Do(const HttpRequest& request);

  // Sends a request whose response body is consumed as it arrives (watches). `on_data` gets each
  // chunk; returning false ends the stream. `cancel`, when set by another thread, ends the
  // stream within about a second. Returns OK when the server closed a 2xx stream or the consumer
  // or `cancel` ended it; the error status of a non-2xx answer; a transport error.
  absl::Status Stream(const HttpRequest& request, absl::FunctionRef<bool(std::string_view)> on_data,
                      const std::atomic<bool>* cancel = nullptr);

  const RestConfig& config() const { return config_; }
  RestClientStats stats() const;

 private:
  struct Handle;
  RestClient(const RestConfig& config, RestClientOptions options);

  std::unique_ptr<Handle> Acquire();
  void Release(std::unique_ptr<Handle> handle);
  // One attempt. `on_data` null: buffer the body into the response.
  absl::StatusOr<HttpResponse> Perform(Handle& handle, const HttpRequest& request,
                                       const Credentials& creds,
                                       absl::FunctionRef<bool(std::string_view)>* on_data,
                                       const std::atomic<bool>* cancel, bool* connect_failed,
                                       std::optional<absl::Duration>* retry_after);

  const RestConfig config_;
  const RestClientOptions options_;
  std::unique_ptr<RealClock> owned_clock_;
  const Clock& clock_;
  CredentialProvider credentials_;
  TokenBucket bucket_;

  absl::Mutex mu_;
  std::vector<std::unique_ptr<Handle>> idle_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> retries_{0};
  std::atomic<int64_t> throttled_{0};
};

// Percent-encodes a query parameter value.
std::string UrlEncode(std::string_view value);

}  // namespace dovetail::kube
