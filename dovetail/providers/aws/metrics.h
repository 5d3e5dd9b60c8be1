// Prometheus metrics of the AWS API clients, for every service client (the SDK service id as
// `service`: EC2, SSM, IAM, SQS, Pricing, STS, EKS).
//
// Upstream's (the aws-sdk-go-prometheus middleware upstream wraps its SDK config with), labelled
// service, action (the API: DescribeSubnets, CreateFleet, ...) and code (an HTTP status code as
// text; "0" when no response came back: a transport failure, or no credentials so nothing was
// sent), one sample per finished call (AwsClient's CallRecord):
//   aws_sdk_go_request_total                      calls, code of the last response
//   aws_sdk_go_request_attempt_total              HTTP requests, code of each attempt's response
//   aws_sdk_go_request_duration_seconds           the call, waits and backoff included
//   aws_sdk_go_request_attempt_duration_seconds   each attempt; code of the *call*, as upstream
//                                                 labels it (not the attempt's own)
//   aws_sdk_go_request_retry_count                retries per call, code of the call
// Durations are on the client's Clock; buckets are upstream's (10 ms x 1.5^i, 20 buckets; retries
// 0..10).
//
// Dovetail's own counters of the same calls (AwsClient's ApiStats), labelled service and api:
//   dovetail_aws_api_calls_total      calls (one per Send, whatever the retries)
//   dovetail_aws_api_attempts_total   HTTP requests sent (calls + retries)
//   dovetail_aws_api_throttles_total  responses with a throttling code or HTTP 429
//   dovetail_aws_api_retries_total    attempts after the first
//   dovetail_aws_api_errors_total     calls that returned an error (after the retries)
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
inline constexpr char kAwsSdkRequestsMetric[] = "aws_sdk_go_request_total";
inline constexpr char kAwsSdkAttemptsMetric[] = "aws_sdk_go_request_attempt_total";
inline constexpr char kAwsSdkDurationMetric[] = "aws_sdk_go_request_duration_seconds";
inline constexpr char kAwsSdkAttemptDurationMetric[] =
    "aws_sdk_go_request_attempt_duration_seconds";
inline constexpr char kAwsSdkRetryCountMetric[] = "aws_sdk_go_request_retry_count";

// Registers the families above (shared by every client exported to `registry`) and makes them
// follow `client` from now on: the dovetail_* counters start with the client's totals so far, the
// aws_sdk_go_* ones with the calls that finish from now on. Replaces the client's stats and call
// observers. `registry` must outlive `client`'s use.
void ExportAwsApiMetrics(AwsClient& client, metrics::Registry& registry);

// karpenter_ec2nodeclasses_userdata_bytes{nodeclass}: the size of the user data (raw, before
// base64) last rendered for an EC2NodeClass's launch templates. The cloud provider sets it when it
// renders a launch's user data; the node class controller deletes the series when it deletes the
// class's launch templates (upstream: set before CreateLaunchTemplate, deleted with the class's
// templates). Registered on first use; the same gauge every time.
inline constexpr char kUserDataBytesMetric[] = "karpenter_ec2nodeclasses_userdata_bytes";
metrics::Gauge& UserDataBytesGauge(metrics::Registry& registry);

}  // namespace dovetail::providers::aws
