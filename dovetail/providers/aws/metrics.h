// Prometheus metrics of the AWS API clients: AwsClient's per-API counters (aws_client.h) as
// counters of a metrics::Registry, labelled service (the SDK service id: EC2, SSM, IAM, SQS,
// Pricing, STS) and api (the action: DescribeSubnets, CreateFleet, ...):
//   dovetail_aws_api_calls_total      calls (one per Send, whatever the retries)
//   dovetail_aws_api_attempts_total   HTTP requests sent (calls + retries)
//   dovetail_aws_api_throttles_total  responses with a throttling code or HTTP 429
//   dovetail_aws_api_retries_total    attempts after the first
//   dovetail_aws_api_errors_total     calls that returned an error (after the retries)
// Upstream Karpenter exports the AWS SDK's own metrics (aws_sdk_go_request_total,
// aws_sdk_go_request_attempt_total{service,action,code}, aws_sdk_go_request_retry_count,
// aws_sdk_go_request_duration_seconds); Dovetail's client is its own, so its names say so.
//
// Thread-safe (the registry and the client are).
#pragma once

#include "dovetail/metrics/registry.h"
#include "dovetail/providers/aws/aws_client.h"

namespace dovetail::providers::aws {

inline constexpr char kAwsApiCallsMetric[] = "dovetail_aws_api_calls_total";
inline constexpr char kAwsApiAttemptsMetric[] = "dovetail_aws_api_attempts_total";
inline constexpr char kAwsApiThrottlesMetric[] = "dovetail_aws_api_throttles_total";
inline constexpr char kAwsApiRetriesMetric[] = "dovetail_aws_api_retries_total";
inline constexpr char kAwsApiErrorsMetric[] = "dovetail_aws_api_errors_total";

// Registers the five counters (shared by every client exported to `registry`) and makes them
// follow `client` from now on, starting with its totals so far. Replaces the client's stats
// observer. `registry` must outlive `client`'s use.
void ExportAwsApiMetrics(AwsClient& client, metrics::Registry& registry);

}  // namespace dovetail::providers::aws
