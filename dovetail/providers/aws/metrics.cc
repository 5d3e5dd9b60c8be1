#include "dovetail/providers/aws/metrics.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dovetail::providers::aws {

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
}

}  // namespace dovetail::providers::aws
