// Where each AWS service is reached. Resolution order, as the AWS SDKs do it:
//   1. an explicit override (EndpointOverrides, from Dovetail's options),
//   2. AWS_ENDPOINT_URL_<SERVICE> (service id upper-cased, spaces as '_': AWS_ENDPOINT_URL_EC2,
//      AWS_ENDPOINT_URL_SSM, AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_IAM,
//      AWS_ENDPOINT_URL_PRICING, AWS_ENDPOINT_URL_EKS),
//   3. AWS_ENDPOINT_URL (every service),
//   4. the public endpoint: https://<prefix>.<region>.amazonaws.com (.amazonaws.com.cn in cn-*);
//      IAM is global (iam.amazonaws.com), Pricing lives in us-east-1 (api.pricing.us-east-1...).
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true skips 2 and 3. Tests reach moto through 1-3.
// Free functions; thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "dovetail/providers/aws/env.h"

namespace dovetail::providers::aws {

struct ServiceInfo {
  std::string_view service_id;    // SDK service id: "EC2", "SSM", "STS", ...
  std::string_view signing_name;  // SigV4 service: "ec2", "ssm", "sts", ...
  std::string_view prefix;        // endpoint prefix
};

inline constexpr ServiceInfo kEc2{"EC2", "ec2", "ec2"};
inline constexpr ServiceInfo kSsm{"SSM", "ssm", "ssm"};
inline constexpr ServiceInfo kSts{"STS", "sts", "sts"};
inline constexpr ServiceInfo kSqs{"SQS", "sqs", "sqs"};
inline constexpr ServiceInfo kIam{"IAM", "iam", "iam"};
inline constexpr ServiceInfo kPricing{"Pricing", "pricing", "api.pricing"};
inline constexpr ServiceInfo kEks{"EKS", "eks", "eks"};

// Service id (as in ServiceInfo::service_id, case-insensitive) -> endpoint URL.
using EndpointOverrides = std::map<std::string, std::string>;

// The endpoint URL (scheme://host[:port], no trailing slash). Errors: InvalidArgument for an
// override that is not http(s)://..., or an empty region where the default needs one.
absl::StatusOr<std::string> ResolveEndpoint(const ServiceInfo& service, std::string_view region,
                                            const EndpointOverrides& overrides,
                                            const EnvLookup& env);

// The region requests to a service are signed for (IAM: us-east-1; Pricing: us-east-1 unless
// the region is in China or GovCloud).
std::string SigningRegion(const ServiceInfo& service, std::string_view region);

}  // namespace dovetail::providers::aws
