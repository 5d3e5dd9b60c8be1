#include "dovetail/kube/rest_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/tls_server_name.h"
#include "dovetail/metrics/buckets.h"

namespace dovetail::kube {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct TransferState {
  std::string* buffer = nullptr;  // buffered mode
  absl::FunctionRef<bool(std::string_view)>* on_data = nullptr;
  std::string error_body;  // streaming mode: body of a non-2xx answer
  bool stopped_by_consumer = false;
  const std::atomic<bool>* cancel = nullptr;
  CURL* curl = nullptr;
  std::optional<absl::Duration> retry_after;
};

size_t WriteCallback(char* data, size_t size, size_t count, void* user) {
  auto* state = static_cast<TransferState*>(user);
  const size_t n = size * count;
  if (state->buffer != nullptr) {
    state->buffer->append(data, n);
    return n;
  }
  long code = 0;  // NOLINT(google-runtime-int): CURLINFO_RESPONSE_CODE writes a long
  curl_easy_getinfo(state->curl, CURLINFO_RESPONSE_CODE, &code);
  if (code < 200 || code >= 300) {
    state->error_body.append(data, n);
    return n;
  }
  if (!(*state->on_data)(std::string_view(data, n))) {
    state->stopped_by_consumer = true;
    return 0;  // aborts the transfer
  }
  return n;
}

size_t HeaderCallback(char* data, size_t size, size_t count, void* user) {
  auto* state = static_cast<TransferState*>(user);
  const size_t n = size * count;
  std::string_view line(data, n);
  constexpr std::string_view kRetryAfter = "retry-after:";
  if (line.size() > kRetryAfter.size() &&
      absl::EqualsIgnoreCase(AsAbsl(line.substr(0, kRetryAfter.size())), AsAbsl(kRetryAfter))) {
    std::string value(line.substr(kRetryAfter.size()));
    absl::StripAsciiWhitespace(&value);
    int64_t seconds = 0;
    if (absl::SimpleAtoi(value, &seconds) && seconds >= 0) {
      state->retry_after = absl::Seconds(seconds);
    }
  }
  return n;
}

int ProgressCallback(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* state = static_cast<TransferState*>(user);
  return state->cancel != nullptr && state->cancel->load() ? 1 : 0;
}

// The transfer's HTTP options: HTTP/1.1, keep-alive, compression, user agent, timeouts (the
// request's, else the config's for buffered requests), method and body. `request` must outlive
// the transfer (the body is not copied).
void SetHttpOptions(CURL* curl, const RestConfig& config, const HttpRequest& request,
                    bool streaming) {
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // gzip when the server offers it
  curl_easy_setopt(curl, CURLOPT_USERAGENT, config.user_agent.c_str());
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 10'000L);
  absl::Duration timeout = request.timeout;
  if (timeout == absl::ZeroDuration() && !streaming) timeout = config.timeout;
  if (timeout > absl::ZeroDuration()) {
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(absl::ToInt64Milliseconds(timeout)));
  }
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (request.method == "HEAD") curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
      request.method == "PATCH") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  }
}

// The TLS blobs of one transfer; they must outlive it.
struct TlsBlobs {
  curl_blob ca{};
  curl_blob cert{};
  curl_blob key{};
};

// Server verification (skipped, or against the config's CA) and the client certificate.
void SetTlsOptions(CURL* curl, const RestConfig& config, const Credentials& creds,
                   TlsBlobs& blobs) {
  if (config.insecure_skip_tls_verify) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (!config.ca_pem.empty()) {
    blobs.ca =
        curl_blob{const_cast<char*>(config.ca_pem.data()), config.ca_pem.size(), CURL_BLOB_NOCOPY};
    curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &blobs.ca);
  }
  if (!creds.client_cert_pem.empty()) {
    blobs.cert = curl_blob{const_cast<char*>(creds.client_cert_pem.data()),
                           creds.client_cert_pem.size(), CURL_BLOB_COPY};
    blobs.key = curl_blob{const_cast<char*>(creds.client_key_pem.data()),
                          creds.client_key_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &blobs.cert);
    curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
    curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &blobs.key);
  }
}

// The request headers (JSON, bearer token, content type, no Expect, the route's Host); the
// caller frees the list after the transfer.
curl_slist* RequestHeaders(const HttpRequest& request, const Credentials& creds,
                           const std::optional<TlsServerNameRoute>& route) {
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json");
  if (!creds.bearer_token.empty()) {
    const std::string auth = absl::StrCat("Authorization: Bearer ", creds.bearer_token);
    headers = curl_slist_append(headers, auth.c_str());
  }
  if (!request.content_type.empty()) {
    const std::string content_type = absl::StrCat("Content-Type: ", request.content_type);
    headers = curl_slist_append(headers, content_type.c_str());
  }
  headers = curl_slist_append(headers, "Expect:");
  if (route.has_value()) headers = curl_slist_append(headers, route->host_header.c_str());
  return headers;
}

// Body, header and (when the transfer can be cancelled) progress callbacks over `state`.
void SetCallbacks(CURL* curl, TransferState& state, bool cancellable) {
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &WriteCallback);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &state);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &HeaderCallback);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &state);
  if (cancellable) {
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &ProgressCallback);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &state);
  }
}

bool IsIdempotent(const HttpRequest& request) {
  return request.method == "GET" || request.method == "HEAD";
}

// The host[:port] of a server URL ("https://10.0.0.1:6443/prefix" -> "10.0.0.1:6443"), as
// client-go's rest_client_requests_total reports it.
std::string ServerHost(std::string_view server) {
  if (size_t scheme = server.find("://"); scheme != std::string_view::npos) {
    server.remove_prefix(scheme + 3);
  }
  return std::string(server.substr(0, server.find('/')));
}

}  // namespace

struct RestClient::Instruments {
  explicit Instruments(metrics::Registry& r, std::string server_host)
      : host(std::move(server_host)),
        requests(r.NewCounter("rest_client_requests_total",
                              "HTTP requests to the API server by status code, method and host.",
                              {"code", "method", "host"})),
        results(r.NewCounter("client_go_request_total",
                             "HTTP requests to the API server by status code and method.",
                             {"code", "method"})),
        latency(r.NewHistogram("client_go_request_duration_seconds",
                               "API request latency in seconds, retries included, by verb, "
                               "group, version, kind and subresource.",
                               {"verb", "group", "version", "kind", "subresource"},
                               metrics::ExponentialBuckets(0.001, 1.5, 20))) {}
  const std::string host;
  metrics::Counter& requests;
  metrics::Counter& results;
  metrics::Histogram& latency;
};

std::optional<std::vector<std::string>> ClientGoLatencyLabels(std::string_view method,
                                                              std::string_view path) {
  path = path.substr(0, path.find('?'));
  if (path.empty() || path[0] != '/') return std::nullopt;
  std::vector<absl::string_view> parts = absl::StrSplit(AsAbsl(path.substr(1)), '/');
  size_t group = 0;
  if (parts[0] == "apis") {
    group = 1;
  } else if (parts[0] != "api") {
    return std::nullopt;
  }
  if (parts.size() < group + 3) return std::nullopt;  // discovery
  const size_t version = group + 1;
  // Namespaced: <version>/namespaces/<ns>/<kind>/...; cluster-scoped (and namespaces
  // themselves): <version>/<kind>/...
  const size_t kind =
      parts[group + 2] == "namespaces" && parts.size() > group + 4 ? version + 3 : version + 1;
  const bool named = parts.size() > kind + 1;
  std::string verb(method);
  if (verb == "POST") {
    verb = "CREATE";
  } else if (verb == "GET" && !named) {
    verb = "LIST";
  } else if (verb == "PUT") {
    verb = named ? "UPDATE" : "CREATE";
  }
  return std::vector<std::string>{verb, group == 0 ? "" : std::string(parts[0 + group]),
                                  std::string(parts[version]), std::string(parts[kind]),
                                  parts.size() == kind + 3 ? std::string(parts[kind + 2]) : ""};
}

struct RestClient::Handle {
  CURL* curl = nullptr;
  ~Handle() {
    if (curl != nullptr) curl_easy_cleanup(curl);
  }
};

std::string UrlEncode(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

absl::StatusOr<std::unique_ptr<RestClient>> RestClient::Create(const RestConfig& config,
                                                               RestClientOptions options) {
  if (config.server.empty()) return absl::InvalidArgumentError("RestConfig without server");
  ASSIGN_OR_RETURN(std::optional<TlsServerNameRoute> route,
                   RouteForTlsServerName(config.server, config.tls_server_name));
  GlobalInit();
  return std::unique_ptr<RestClient>(new RestClient(config, options, std::move(route)));
}

RestClient::RestClient(const RestConfig& config, RestClientOptions options,
                       std::optional<TlsServerNameRoute> route)
    : config_(config),
      options_(options),
      route_(std::move(route)),
      owned_clock_(options.clock == nullptr ? std::make_unique<RealClock>() : nullptr),
      clock_(options.clock != nullptr ? *options.clock : *owned_clock_),
      credentials_(config_, clock_),
      bucket_(config.qps, config.burst, clock_) {
  if (options_.metrics != nullptr) {
    instruments_ = std::make_unique<Instruments>(*options_.metrics, ServerHost(config_.server));
  }
}

void RestClient::CountAttempt(const HttpRequest& request, int code) {
  if (instruments_ == nullptr) return;
  const std::string c = code > 0 ? absl::StrCat(code) : "<error>";
  instruments_->requests.Inc({c, request.method, instruments_->host});
  instruments_->results.Inc({c, request.method});
}

RestClient::~RestClient() = default;

RestClientStats RestClient::stats() const {
  return RestClientStats{
      .requests = requests_.load(), .retries = retries_.load(), .throttled = throttled_.load()};
}

std::unique_ptr<RestClient::Handle> RestClient::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      std::unique_ptr<Handle> handle = std::move(idle_.back());
      idle_.pop_back();
      return handle;
    }
  }
  auto handle = std::make_unique<Handle>();
  handle->curl = curl_easy_init();
  return handle;
}

void RestClient::Release(std::unique_ptr<Handle> handle) {
  absl::MutexLock lock(&mu_);
  if (idle_.size() < 32) idle_.push_back(std::move(handle));
}

absl::StatusOr<HttpResponse> RestClient::Perform(Handle& handle, const HttpRequest& request,
                                                 const Credentials& creds,
                                                 absl::FunctionRef<bool(std::string_view)>* on_data,
                                                 const std::atomic<bool>* cancel,
                                                 bool* connect_failed,
                                                 std::optional<absl::Duration>* retry_after) {
  CURL* curl = handle.curl;
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");
  curl_easy_reset(curl);  // keeps live connections, the DNS and TLS session caches
  HttpResponse response;
  TransferState state;
  state.curl = curl;
  state.cancel = cancel;
  if (on_data == nullptr) {
    state.buffer = &response.body;
  } else {
    state.on_data = on_data;
  }
  const std::string url = config_.server + request.path;  // as errors name it
  const std::string fetched = route_.has_value() ? route_->url_base + request.path : url;
  curl_easy_setopt(curl, CURLOPT_URL, fetched.c_str());
  curl_slist* connect_to = nullptr;
  if (route_.has_value()) {
    connect_to = curl_slist_append(connect_to, route_->connect_to.c_str());
    curl_easy_setopt(curl, CURLOPT_CONNECT_TO, connect_to);
  }
  SetHttpOptions(curl, config_, request, /*streaming=*/on_data != nullptr);
  TlsBlobs blobs;
  SetTlsOptions(curl, config_, creds, blobs);
  curl_slist* headers = RequestHeaders(request, creds, route_);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  SetCallbacks(curl, state, /*cancellable=*/cancel != nullptr);
  char error_buffer[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);

  requests_.fetch_add(1);
  const CURLcode rc = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  curl_slist_free_all(connect_to);
  long code = 0;  // NOLINT(google-runtime-int): CURLINFO_RESPONSE_CODE writes a long
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  *retry_after = state.retry_after;
  const bool ended_by_us = state.stopped_by_consumer || (cancel != nullptr && cancel->load());
  // A transfer that failed after the status line has no whole response: "<error>".
  CountAttempt(request, rc == CURLE_OK || ended_by_us ? static_cast<int>(code) : 0);
  if (rc != CURLE_OK) {
    if (ended_by_us) {
      response.code = static_cast<int>(code);
      return response;
    }
    *connect_failed = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST;
    return TransportError(absl::StrCat(request.method, " ", url, ": ", curl_easy_strerror(rc),
                                       error_buffer[0] != 0 ? ": " : "", error_buffer),
                          rc == CURLE_OPERATION_TIMEDOUT);
  }
  response.code = static_cast<int>(code);
  if (code < 200 || code >= 300) {
    return StatusFromHttp(response.code, on_data == nullptr ? response.body : state.error_body);
  }
  return response;
}

absl::StatusOr<HttpResponse> RestClient::Do(const HttpRequest& request) {
  if (instruments_ == nullptr) return DoWithRetries(request);
  const absl::Time start = absl::Now();
  absl::StatusOr<HttpResponse> result = DoWithRetries(request);
  if (std::optional<std::vector<std::string>> labels =
          ClientGoLatencyLabels(request.method, request.path)) {
    instruments_->latency.Observe(*labels, absl::ToDoubleSeconds(absl::Now() - start));
  }
  return result;
}

absl::StatusOr<HttpResponse> RestClient::Attempt(const HttpRequest& request,
                                                 absl::FunctionRef<bool(std::string_view)>* on_data,
                                                 const std::atomic<bool>* cancel, bool* sent,
                                                 bool* connect_failed,
                                                 std::optional<absl::Duration>* retry_after) {
  *sent = false;
  if (const absl::Duration wait = bucket_.Reserve(); wait > absl::ZeroDuration()) {
    throttled_.fetch_add(1);
    absl::SleepFor(wait);
  }
  if (request.precondition != nullptr) RETURN_IF_ERROR(request.precondition());
  ASSIGN_OR_RETURN(const Credentials creds, credentials_.Get());
  std::unique_ptr<Handle> handle = Acquire();
  *sent = true;
  absl::StatusOr<HttpResponse> result =
      Perform(*handle, request, creds, on_data, cancel, connect_failed, retry_after);
  Release(std::move(handle));
  return result;
}

absl::StatusOr<HttpResponse> RestClient::DoWithRetries(const HttpRequest& request) {
  Backoff backoff(options_.backoff);
  bool reauthenticated = false;
  for (int attempt = 0;; ++attempt) {
    bool sent = false;
    bool connect_failed = false;
    std::optional<absl::Duration> retry_after;
    absl::StatusOr<HttpResponse> result =
        Attempt(request, nullptr, nullptr, &sent, &connect_failed, &retry_after);
    if (result.ok() || !sent) return result;
    const absl::Status& status = result.status();
    const int code = HttpCodeOf(status);
    if (code == 401 && !reauthenticated) {
      reauthenticated = true;
      credentials_.Invalidate();
      continue;
    }
    if (!request.retry || attempt >= options_.max_retries) return status;
    bool retryable = false;
    if (code == 429) {
      retryable = true;
    } else if (code >= 500) {
      retryable = IsIdempotent(request) || retry_after.has_value();
    } else if (code == 0) {
      retryable = connect_failed || IsIdempotent(request);
    }
    if (!retryable) return status;
    absl::Duration wait = backoff.Next();
    if (retry_after.has_value()) wait = std::min(*retry_after, options_.max_retry_after);
    retries_.fetch_add(1);
    absl::SleepFor(wait);
  }
}

absl::Status RestClient::Stream(const HttpRequest& request,
                                absl::FunctionRef<bool(std::string_view)> on_data,
                                const std::atomic<bool>* cancel) {
  bool sent = false;
  bool connect_failed = false;
  std::optional<absl::Duration> retry_after;
  absl::StatusOr<HttpResponse> result =
      Attempt(request, &on_data, cancel, &sent, &connect_failed, &retry_after);
  if (!result.ok() && HttpCodeOf(result.status()) == 401) credentials_.Invalidate();
  return result.status();
}

}  // namespace dovetail::kube
