// AwsClient: one AWS service endpoint with signing, per-API token buckets, retries and counters.
// The protocol clients (Ec2Client, SsmClient, StsClient) build AwsRequests and call Send(); this
// class owns everything that is the same for every API:
//   - endpoint and signing region (endpoints.h) and SigV4 header auth with credentials from a
//     CredentialsProvider (no provider: the request goes unsigned, as AssumeRoleWithWebIdentity
//     does);
//   - a token bucket per API name (default `default_rate`), waited on before every attempt;
//   - retries of throttling (RequestLimitExceeded, Throttling, ..., HTTP 429), 5xx, transient
//     codes and transport failures, up to `max_attempts`, sleeping a full-jitter exponential
//     backoff: uniform(0, min(max_backoff, base_delay x 2^retry)); throttles use
//     `throttle_base_delay` (longer, as the SDKs' standard retryer does);
//   - counters per API: calls, attempts, throttles, retries, errors, readable as a snapshot
//     (Stats, AllStats) or followed by an observer (SetStatsObserver; metrics.h exports them as
//     Prometheus counters);
//   - one CallRecord per finished Send (status code and duration of the call and of each attempt,
//     on the injected Clock), for an observer (SetCallObserver; metrics.h: aws_sdk_go_request_*).
//   - a write fence: with Dependencies::write_fence, every attempt of a call to an API that
//     changes something (IsWriteApi: CreateFleet, TerminateInstances, launch template and
//     instance profile writes, SQS DeleteMessage, ...) first asks the fence; a non-OK answer ends
//     the call with it and nothing more is sent. The operator fences with the leader's write gate,
//     so no cloud write (and no retry of one) leaves a process that lost its lease.
// Final errors are absl::Status values with the AWS error code kept (errors.h); when the
// credentials provider has no credentials (NotFound) the call fails with kUnauthenticated before
// anything is sent.
//
// Thread-safe: Send() may be called concurrently; the buckets and counters are synchronised and
// the wait/backoff sleep happens outside every lock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/common/clock.h"
#include "dovetail/providers/aws/credentials.h"
#include "dovetail/providers/aws/endpoints.h"
#include "dovetail/providers/aws/errors.h"
#include "dovetail/providers/aws/http_transport.h"

namespace dovetail::providers::aws {

struct RateLimit {
  double qps = 0;  // 0: unlimited
  int burst = 1;
};

// A token bucket on a Clock: Reserve() takes a token and says how long to wait until it is due.
// Thread-safe.
class TokenBucket {
 public:
  TokenBucket(RateLimit limit, const Clock& clock);
  absl::Duration Reserve();

 private:
  const RateLimit limit_;
  const Clock& clock_;
  absl::Mutex mu_;
  double tokens_ ABSL_GUARDED_BY(mu_);
  absl::Time last_ ABSL_GUARDED_BY(mu_);
};

struct ApiStats {
  int64_t calls = 0;      // Send() invocations
  int64_t attempts = 0;   // HTTP requests sent (calls + retries)
  int64_t throttles = 0;  // responses with a throttling code or HTTP 429
  int64_t retries = 0;
  int64_t errors = 0;  // calls that returned an error
  bool operator==(const ApiStats&) const = default;
};

// One change of an API's counters (a delta), or at registration the totals so far.
using StatsObserver = std::function<void(std::string_view api, const ApiStats& delta)>;

// One finished Send, as the AWS SDK's metrics middleware reports a call (upstream exports it as
// aws_sdk_go_request_*). `status` is the HTTP status of the last response, 0 when there was none
// (transport failure, or no credentials so nothing was sent).
struct CallRecord {
  struct Attempt {
    int status = 0;  // 0: the transport failed
    absl::Duration duration;
  };
  int status = 0;
  absl::Duration duration;  // the whole call: rate-limit waits, attempts and backoff sleeps
  int retries = 0;
  std::vector<Attempt> attempts;  // the HTTP requests sent, in order
};
using CallObserver = std::function<void(std::string_view api, const CallRecord& call)>;

// Whether calling `api` may change something: every API but the reads (Describe*, Get*, List*,
// Receive*) and STS's AssumeRole* (which only mint credentials).
bool IsWriteApi(std::string_view api);

using ErrorParser = std::function<AwsErrorDetail(const HttpResponse&)>;
using Sleeper = std::function<void(absl::Duration)>;

class AwsClient {
 public:
  struct Options {
    ServiceInfo service;
    std::string region;
    std::string endpoint;  // resolved (ResolveEndpoint); required
    ErrorParser parse_error = ParseXmlError;
    int max_attempts = 5;
    absl::Duration base_delay = absl::Milliseconds(50);
    absl::Duration throttle_base_delay = absl::Milliseconds(500);
    absl::Duration max_backoff = absl::Seconds(20);
    RateLimit default_rate;                      // every API without its own entry
    std::map<std::string, RateLimit> api_rates;  // API name -> rate
    uint64_t jitter_seed = 0;                    // 0: seeded from the OS
  };
  struct Dependencies {
    const HttpTransport& transport;
    CredentialsProvider* credentials = nullptr;  // nullptr: unsigned requests
    const Clock& clock;
    Sleeper sleep;  // empty: absl::SleepFor
    // Asked before every attempt of a write (IsWriteApi); empty: none.
    std::function<absl::Status()> write_fence;
  };

  AwsClient(Dependencies deps, Options options);

  // Sends `request` (endpoint filled in from the options) for API `api` ("DescribeSubnets").
  // Returns the 2xx response, or the final error.
  absl::StatusOr<HttpResponse> Send(std::string_view api, AwsRequest request);
  // As Send, signed with `credentials` instead of the client's provider (STS AssumeRole signs
  // with the source credentials of the role it assumes).
  absl::StatusOr<HttpResponse> SendAs(std::string_view api, AwsRequest request,
                                      const AwsCredentials& credentials);

  const Options& options() const { return options_; }
  ApiStats Stats(std::string_view api) const;
  std::map<std::string, ApiStats> AllStats() const;
  // Replaces the observer (empty: none). It is called at once with each API's totals so far, then
  // with every change, always under the client's lock (so nothing is lost or counted twice); it
  // must be quick and must not call back into this client.
  void SetStatsObserver(StatsObserver observer);
  // Replaces the call observer (empty: none); called once per finished Send, outside the client's
  // lock, possibly from several threads at once. It must not call back into this client.
  void SetCallObserver(CallObserver observer);

 private:
  absl::StatusOr<HttpResponse> SendWith(std::string_view api, AwsRequest request,
                                        CredentialsProvider* credentials);
  TokenBucket& BucketFor(std::string_view api);
  absl::Duration Backoff(int retry, bool throttled);

  const HttpTransport& transport_;
  CredentialsProvider* const credentials_;
  const Clock& clock_;
  Sleeper sleep_;
  const std::function<absl::Status()> write_fence_;
  const Options options_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<TokenBucket>> buckets_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, ApiStats> stats_ ABSL_GUARDED_BY(mu_);
  StatsObserver observer_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const CallObserver> call_observer_ ABSL_GUARDED_BY(mu_);
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dovetail::providers::aws
