// EKS Pod Identity and ECS task roles: credentials served over HTTP by an agent next to the
// container, as the AWS SDKs fetch them.
//   AWS_CONTAINER_CREDENTIALS_RELATIVE_URI  a path on the ECS agent, http://169.254.170.2<path>
//   AWS_CONTAINER_CREDENTIALS_FULL_URI      a whole URL (EKS Pod Identity injects
//                                           http://169.254.170.23/v1/credentials); used when
//                                           the relative URI is unset. Plain http is allowed only
//                                           to a loopback address or to the ECS and EKS agents
//                                           (169.254.170.2, 169.254.170.23, fd00:ec2::23);
//                                           anything else must be https.
//   AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE  the Authorization header, re-read on every fetch (EKS
//                                           rotates the projected token); wins over
//   AWS_CONTAINER_AUTHORIZATION_TOKEN       the header given inline.
// The reply is JSON: AccessKeyId, SecretAccessKey, Token, Expiration (RFC 3339). Transport
// failures and 5xx replies are tried 3 times in all, 100 ms then 200 ms apart. Thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "dovetail/providers/aws/credentials.h"
#include "dovetail/providers/aws/http_transport.h"

namespace dovetail::providers::aws {

class ContainerCredentialsProvider final : public CredentialsProvider {
 public:
  explicit ContainerCredentialsProvider(EnvLookup env = ProcessEnv());

  // NotFound when neither URI is set; InvalidArgument for a URL that may not be used or a token
  // with a line break; FailedPrecondition for an unreadable token file; PermissionDenied for a 4xx
  // reply (the agent refused the token or has no association for this service account),
  // Unavailable for an unreachable agent or a 5xx reply, Internal for a reply that is not
  // credentials.
  absl::StatusOr<AwsCredentials> Get() override;

 private:
  EnvLookup env_;
  HttpTransport transport_;
};

// The URL the provider fetches from (exposed for tests): NotFound / InvalidArgument as Get().
absl::StatusOr<std::string> ContainerCredentialsUrl(const EnvLookup& env);

}  // namespace dovetail::providers::aws
