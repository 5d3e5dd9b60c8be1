// IRSA: credentials for AWS_ROLE_ARN from STS AssumeRoleWithWebIdentity (sts.h), presenting the
// token in AWS_WEB_IDENTITY_TOKEN_FILE (re-read on every fetch: the kubelet rotates it). The call
// is unsigned (the token is the proof), so `sts` is an AwsClient without a credentials provider.
// Wrap it in a CachingCredentialsProvider: the credentials expire (1 h by default).
// Thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "dovetail/providers/aws/aws_client.h"
#include "dovetail/providers/aws/credentials.h"

namespace dovetail::providers::aws {

class WebIdentityCredentialsProvider final : public CredentialsProvider {
 public:
  // `sts` must outlive the provider.
  explicit WebIdentityCredentialsProvider(AwsClient& sts, EnvLookup env = ProcessEnv())
      : sts_(sts), env_(std::move(env)) {}

  // NotFound unless both AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE are set; FailedPrecondition
  // for an unreadable token file; STS errors as they come (PermissionDenied for a rejected
  // token). Session name: AWS_ROLE_SESSION_NAME, default "dovetail".
  absl::StatusOr<AwsCredentials> Get() override;

 private:
  AwsClient& sts_;
  EnvLookup env_;
};

// The token in `path`, whitespace-trimmed: FailedPrecondition when it cannot be read or is empty,
// InvalidArgument when it is over kMaxAwsSharedFileBytes (common/input_limits.h). `what` names
// the setting in the message ("web identity").
absl::StatusOr<std::string> ReadWebIdentityToken(std::string_view what, const std::string& path);

}  // namespace dovetail::providers::aws
