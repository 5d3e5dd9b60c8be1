#include "dovetail/providers/aws/aws_client.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::providers::aws {

TokenBucket::TokenBucket(RateLimit limit, const Clock& clock)
    : limit_(limit), clock_(clock), tokens_(std::max(1, limit.burst)), last_(clock.Now()) {}

absl::Duration TokenBucket::Reserve() {
  if (limit_.qps <= 0) return absl::ZeroDuration();
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  if (now > last_) {
    tokens_ = std::min<double>(std::max(1, limit_.burst),
                               tokens_ + absl::ToDoubleSeconds(now - last_) * limit_.qps);
    last_ = now;
  }
  tokens_ -= 1;  // may go negative: later callers queue behind this one
  if (tokens_ >= 0) return absl::ZeroDuration();
  return absl::Seconds(-tokens_ / limit_.qps);
}

bool IsWriteApi(std::string_view api) {
  for (std::string_view read : {"Describe", "Get", "List", "Receive", "AssumeRole"}) {
    if (api.substr(0, read.size()) == read) return false;
  }
  return true;
}

AwsClient::AwsClient(Dependencies deps, Options options)
    : transport_(deps.transport),
      credentials_(deps.credentials),
      clock_(deps.clock),
      sleep_(deps.sleep ? std::move(deps.sleep)
                        : Sleeper([](absl::Duration d) { absl::SleepFor(d); })),
      write_fence_(std::move(deps.write_fence)),
      options_(std::move(options)),
      rng_(options_.jitter_seed != 0 ? options_.jitter_seed : std::random_device{}()) {}

TokenBucket& AwsClient::BucketFor(std::string_view api) {
  absl::MutexLock lock(&mu_);
  auto it = buckets_.find(AsAbsl(api));
  if (it == buckets_.end()) {
    RateLimit limit = options_.default_rate;
    if (auto r = options_.api_rates.find(std::string(api)); r != options_.api_rates.end()) {
      limit = r->second;
    }
    it = buckets_.emplace(std::string(api), std::make_unique<TokenBucket>(limit, clock_)).first;
  }
  return *it->second;
}

absl::Duration AwsClient::Backoff(int retry, bool throttled) {
  const absl::Duration base = throttled ? options_.throttle_base_delay : options_.base_delay;
  const double cap = std::min(absl::ToDoubleSeconds(options_.max_backoff),
                              absl::ToDoubleSeconds(base) * std::ldexp(1.0, std::min(retry, 30)));
  absl::MutexLock lock(&mu_);
  std::uniform_real_distribution<double> dist(0.0, cap);
  return absl::Seconds(dist(rng_));
}

absl::StatusOr<HttpResponse> AwsClient::Send(std::string_view api, AwsRequest request) {
  return SendWith(api, std::move(request), credentials_);
}

absl::StatusOr<HttpResponse> AwsClient::SendAs(std::string_view api, AwsRequest request,
                                               const AwsCredentials& credentials) {
  StaticCredentialsProvider provider(credentials);
  return SendWith(api, std::move(request), &provider);
}

absl::StatusOr<HttpResponse> AwsClient::SendWith(std::string_view api, AwsRequest request,
                                                 CredentialsProvider* credentials) {
  const std::string name(api);
  auto count = [&](auto field) {
    absl::MutexLock lock(&mu_);
    ++(stats_[name].*field);
    if (observer_) {
      ApiStats delta;
      ++(delta.*field);
      observer_(name, delta);
    }
  };
  count(&ApiStats::calls);
  CallRecord record;
  const absl::Time started = clock_.Now();
  // Every return goes through here: the record is complete and the observer sees it once.
  auto finish = [&](absl::StatusOr<HttpResponse> result) {
    std::shared_ptr<const CallObserver> observer;
    {
      absl::MutexLock lock(&mu_);
      observer = call_observer_;
    }
    if (observer != nullptr) {
      record.duration = clock_.Now() - started;
      record.status = record.attempts.empty() ? 0 : record.attempts.back().status;
      (*observer)(name, record);
    }
    return result;
  };
  request.endpoint = options_.endpoint;
  TokenBucket& bucket = BucketFor(api);
  absl::Status last;
  for (int attempt = 0; attempt < std::max(1, options_.max_attempts); ++attempt) {
    if (attempt > 0) {
      count(&ApiStats::retries);
      ++record.retries;
    }
    if (absl::Duration wait = bucket.Reserve(); wait > absl::ZeroDuration()) sleep_(wait);
    if (write_fence_ && IsWriteApi(api)) {
      if (absl::Status fenced = write_fence_(); !fenced.ok()) {
        count(&ApiStats::errors);
        return finish(absl::Status(
            fenced.code(), Cat(options_.service.signing_name, ":", api, ": ", fenced.message())));
      }
    }
    AwsRequest signed_request = request;
    if (credentials != nullptr) {
      auto creds = credentials->Get();
      if (!creds.ok()) {
        count(&ApiStats::errors);
        // "No credentials anywhere" must not read as a missing AWS resource.
        const absl::StatusCode code = absl::IsNotFound(creds.status())
                                          ? absl::StatusCode::kUnauthenticated
                                          : creds.status().code();
        return finish(absl::Status(code, Cat(options_.service.signing_name, ":", api,
                                             ": credentials: ", creds.status().message())));
      }
      SignRequest(signed_request, *creds,
                  {.region = SigningRegion(options_.service, options_.region),
                   .service = std::string(options_.service.signing_name),
                   .time = clock_.Now()});
    }
    count(&ApiStats::attempts);
    const absl::Time attempt_started = clock_.Now();
    auto response = transport_.Send(signed_request);
    record.attempts.push_back({.status = response.ok() ? response->status : 0,
                               .duration = clock_.Now() - attempt_started});
    bool retryable = false;
    bool throttled = false;
    if (!response.ok()) {
      last = absl::Status(response.status().code(), Cat(options_.service.signing_name, ":", api,
                                                        ": ", response.status().message()));
      retryable = true;
    } else if (response->status >= 200 && response->status < 300) {
      return finish(std::move(response));
    } else {
      AwsErrorDetail detail = options_.parse_error(*response);
      throttled = IsThrottlingCode(detail.code) || response->status == 429;
      retryable = throttled || response->status >= 500 || IsTransientCode(detail.code);
      last = AwsErrorStatus(Cat(options_.service.signing_name, ":", api), response->status, detail);
      if (throttled) count(&ApiStats::throttles);
    }
    if (!retryable || attempt + 1 >= options_.max_attempts) break;
    sleep_(Backoff(attempt, throttled));
  }
  count(&ApiStats::errors);
  return finish(last);
}

void AwsClient::SetCallObserver(CallObserver observer) {
  absl::MutexLock lock(&mu_);
  call_observer_ = observer ? std::make_shared<const CallObserver>(std::move(observer)) : nullptr;
}

ApiStats AwsClient::Stats(std::string_view api) const {
  absl::MutexLock lock(&mu_);
  auto it = stats_.find(std::string(api));
  return it == stats_.end() ? ApiStats{} : it->second;
}

std::map<std::string, ApiStats> AwsClient::AllStats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void AwsClient::SetStatsObserver(StatsObserver observer) {
  absl::MutexLock lock(&mu_);
  observer_ = std::move(observer);
  if (!observer_) return;
  for (const auto& [api, totals] : stats_) observer_(api, totals);
}

}  // namespace dovetail::providers::aws
