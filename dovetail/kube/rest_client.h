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
// A kubeconfig's tls-server-name is honoured: the certificate is verified against that name while
// the connection goes to the server URL's address (tls_server_name.h).
// Watches use Stream(), which is throttled like any request but never retried (the informer
// owns reconnecting).
// Metrics (with RestClientOptions::metrics), as client-go reports them in upstream Karpenter:
//  - every attempt (each retry, each stream) counts in controller-runtime's
//    rest_client_requests_total{code,method,host} and operatorpkg's
//    client_go_request_total{code,method}: code is the HTTP status, "<error>" when no response
//    arrived; method the HTTP method; host the server's host[:port];
//  - every Do() (throttling and retries included; not streams) is observed in operatorpkg's
//    client_go_request_duration_seconds with the labels of ClientGoLatencyLabels().
// Thread-safe: any number of threads may issue requests concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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
#include "dovetail/kube/tls_server_name.h"
#include "dovetail/metrics/registry.h"

namespace dovetail::kube {

struct HttpRequest {
  std::string method = "GET";
  std::string path;  // path and query, e.g. "/api/v1/pods?limit=500"
  std::string body;
  std::string content_type;  // set with a body
  // Zero: the config's timeout. Streams: the whole stream's lifetime (zero: unlimited).
  absl::Duration timeout = absl::ZeroDuration();
  bool retry = true;  // false: one attempt (the caller owns retrying)
  // Checked before every attempt, after any throttling, backoff or Retry-After wait: a non-OK
  // status ends the request with it and nothing more is sent. kube::Client fences writes with
  // its WriteGate here, so that no retry goes out once leadership is lost. Null: none.
  std::function<absl::Status()> precondition;
};

struct HttpResponse {
  int code = 0;
  std::string body;
};

struct RestClientOptions {
  int max_retries = 6;
  Backoff::Options backoff = {.initial = absl::Milliseconds(100), .max = absl::Seconds(10)};
  absl::Duration max_retry_after = absl::Seconds(60);
  const Clock* clock = nullptr;          // default: a RealClock owned by the client
  metrics::Registry* metrics = nullptr;  // where to count requests (see above); null: nowhere
};

struct RestClientStats {
  int64_t requests = 0;  // attempts sent
  int64_t retries = 0;
  int64_t throttled = 0;  // requests that waited for the token bucket
};

class RestClient {
 public:
  // Errors: InvalidArgument for an unusable config (no server; a tls-server-name that cannot be
  // routed, tls_server_name.h).
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
  struct Instruments;  // the request families above
  RestClient(const RestConfig& config, RestClientOptions options,
             std::optional<TlsServerNameRoute> route);

  absl::StatusOr<HttpResponse> DoWithRetries(const HttpRequest& request);
  // Counts one attempt: `code` 0 when no response arrived.
  void CountAttempt(const HttpRequest& request, int code);

  std::unique_ptr<Handle> Acquire();
  void Release(std::unique_ptr<Handle> handle);
  // One attempt after the rate limiter's wait, the request's precondition and the credentials,
  // on a pooled handle (Perform). `connect_failed` and `retry_after` as Perform's; an error of the
  // precondition or the credentials is returned before any request is sent, with `*sent` false.
  absl::StatusOr<HttpResponse> Attempt(const HttpRequest& request,
                                       absl::FunctionRef<bool(std::string_view)>* on_data,
                                       const std::atomic<bool>* cancel, bool* sent,
                                       bool* connect_failed,
                                       std::optional<absl::Duration>* retry_after);
  // One attempt. `on_data` null: buffer the body into the response.
  absl::StatusOr<HttpResponse> Perform(Handle& handle, const HttpRequest& request,
                                       const Credentials& creds,
                                       absl::FunctionRef<bool(std::string_view)>* on_data,
                                       const std::atomic<bool>* cancel, bool* connect_failed,
                                       std::optional<absl::Duration>* retry_after);

  const RestConfig config_;
  const RestClientOptions options_;
  const std::optional<TlsServerNameRoute> route_;  // set by the kubeconfig's tls-server-name
  std::unique_ptr<RealClock> owned_clock_;
  const Clock& clock_;
  CredentialProvider credentials_;
  TokenBucket bucket_;

  absl::Mutex mu_;
  std::vector<std::unique_ptr<Handle>> idle_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> retries_{0};
  std::atomic<int64_t> throttled_{0};
  std::unique_ptr<Instruments> instruments_;  // null without metrics
};

// The client_go_request_duration_seconds labels {verb, group, version, kind, subresource} of a
// request, as operatorpkg derives them from client-go's URL template: kind is the resource
// (e.g. "pods"), group "" for the core API; the verb is POST -> CREATE, GET of a collection ->
// LIST, PUT -> UPDATE (CREATE on a collection), others as sent. Empty for paths outside
// /api and /apis/<group> resources (discovery, /version, ...), which are not observed.
std::optional<std::vector<std::string>> ClientGoLatencyLabels(std::string_view method,
                                                              std::string_view path);

// Percent-encodes a query parameter value.
std::string UrlEncode(std::string_view value);

}  // namespace dovetail::kube
