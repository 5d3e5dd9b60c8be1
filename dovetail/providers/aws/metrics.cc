#include "dovetail/providers/aws/metrics.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dovetail::providers::aws {

namespace {

// Upstream's latency buckets: 10 ms growing by 1.5, 20 of them (the product computed the way
// client_golang's ExponentialBuckets does, so the bounds print identically).
std::vector<double> SdkLatencyBuckets() {
  std::vector<double> out;
  double bound = 0.01;
  for (int i = 0; i < 20; ++i, bound *= 1.5) out.push_back(bound);
  return out;
}

std::vector<double> SdkRetryBuckets() {
  std::vector<double> out;
  for (int i = 0; i <= 10; ++i) out.push_back(i);
  return out;
}

}  // namespace

void ExportAwsApiMetrics(AwsClient& client, metrics::Registry& registry) {
  const std::vector<std::string> labels = {"service", "api"};
  metrics::Counter& calls = registry.NewCounter(
      kAwsApiCallsMetric, "AWS API calls made by Dovetail, per service and API.", labels);
  metrics::Counter& attempts = registry.NewCounter(
      kAwsApiAttemptsMetric, "HTTP requests sent for AWS API calls (calls plus retries).", labels);
  metrics::Counter& throttles = registry.NewCounter(
      kAwsApiThrottlesMetric,
      "AWS API responses that were throttled (throttling code or HTTP 429).", labels);
  metrics::Counter& retries =
      registry.NewCounter(kAwsApiRetriesMetric, "AWS API attempts after the first.", labels);
  metrics::Counter& errors = registry.NewCounter(
      kAwsApiErrorsMetric, "AWS API calls that failed after their retries.", labels);
  const std::string service(client.options().service.service_id);
  // Counters are kept for the registry's lifetime: pointers to them stay valid.
  client.SetStatsObserver([calls = &calls, attempts = &attempts, throttles = &throttles,
                           retries = &retries, errors = &errors,
                           service](std::string_view api, const ApiStats& delta) {
    const metrics::LabelValues values = {service, std::string(api)};
    auto add = [&](metrics::Counter* c, int64_t n) {
      if (n > 0) c->Inc(values, static_cast<double>(n));
    };
    add(calls, delta.calls);
    add(attempts, delta.attempts);
    add(throttles, delta.throttles);
    add(retries, delta.retries);
    add(errors, delta.errors);
  });

  const std::vector<std::string> sdk_labels = {"service", "action", "code"};
  metrics::Counter& requests =
      registry.NewCounter(kAwsSdkRequestsMetric,
                          "AWS API calls, by the HTTP status of their last response.", sdk_labels);
  metrics::Counter& request_attempts = registry.NewCounter(
      kAwsSdkAttemptsMetric, "HTTP requests sent for AWS API calls, by their response status.",
      sdk_labels);
  metrics::Histogram& duration = registry.NewHistogram(
      kAwsSdkDurationMetric, "Seconds an AWS API call took, retries and waits included.",
      sdk_labels, SdkLatencyBuckets());
  metrics::Histogram& attempt_duration = registry.NewHistogram(
      kAwsSdkAttemptDurationMetric,
      "Seconds each HTTP request of an AWS API call took (labelled with the call's status).",
      sdk_labels, SdkLatencyBuckets());
  metrics::Histogram& retry_count = registry.NewHistogram(
      kAwsSdkRetryCountMetric, "Retries an AWS API call made.", sdk_labels, SdkRetryBuckets());
  client.SetCallObserver([requests = &requests, request_attempts = &request_attempts,
                          duration = &duration, attempt_duration = &attempt_duration,
                          retry_count = &retry_count,
                          service](std::string_view api, const CallRecord& call) {
    const std::string action(api);
    const metrics::LabelValues values = {service, action, std::to_string(call.status)};
    requests->Inc(values);
    duration->Observe(values, absl::ToDoubleSeconds(call.duration));
    retry_count->Observe(values, call.retries);
    for (const CallRecord::Attempt& a : call.attempts) {
      request_attempts->Inc({service, action, std::to_string(a.status)});
      attempt_duration->Observe(values, absl::ToDoubleSeconds(a.duration));
    }
  });
}

metrics::Gauge& UserDataBytesGauge(metrics::Registry& registry) {
  return registry.NewGauge(kUserDataBytesMetric,
                           "Bytes of user data (before base64) rendered for the EC2NodeClass.",
                           {"nodeclass"});
}

}  // namespace dovetail::providers::aws
