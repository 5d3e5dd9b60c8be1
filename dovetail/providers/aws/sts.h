// The STS calls that produce credentials, through one AwsClient for STS (so their counters are
// exported with every other API's, metrics.h):
//   AssumeRoleWithWebIdentity  unsigned: the OIDC token is the proof (IRSA, a profile's
//                              web_identity_token_file)
//   AssumeRole                 signed with the source credentials of the role being assumed
//                              (a profile's role_arn with source_profile or credential_source)
// Both return temporary credentials with their Expiration; errors are AwsClient's (the STS error
// code kept, errors.h), Internal for a response without Credentials. Thread-safe as AwsClient is.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dovetail/providers/aws/aws_client.h"

namespace dovetail::providers::aws {

inline constexpr std::string_view kStsApiVersion = "2011-06-15";

struct AssumeRoleParams {
  std::string role_arn;
  std::string session_name;  // RoleSessionName; required by STS
  std::string external_id;   // empty: not sent
  absl::Duration duration = absl::Hours(1);
};

absl::StatusOr<AwsCredentials> AssumeRoleWithWebIdentity(AwsClient& sts,
                                                         const AssumeRoleParams& params,
                                                         std::string_view token);

absl::StatusOr<AwsCredentials> AssumeRole(AwsClient& sts, const AwsCredentials& source,
                                          const AssumeRoleParams& params);

}  // namespace dovetail::providers::aws
