// EC2 instance-role credentials from the instance metadata service, IMDSv2 only (region.h's
// ImdsClient: a session token, then GET meta-data/iam/security-credentials/ for the role name and
// GET meta-data/iam/security-credentials/<role> for its JSON: Code, AccessKeyId,
// SecretAccessKey, Token, Expiration). The endpoint is AWS_EC2_METADATA_SERVICE_ENDPOINT, else
// http://169.254.169.254; AWS_EC2_METADATA_DISABLED=true turns the source off. Timeouts are short
// (1 s to connect, 3 s in all), as the SDKs' are, since off EC2 nothing answers. It is the last
// source of the default chain (credentials_chain.h). Thread-safe.
#pragma once

#include "absl/status/statusor.h"
#include "dovetail/providers/aws/credentials.h"
#include "dovetail/providers/aws/http_transport.h"

namespace dovetail::providers::aws {

class InstanceProfileCredentialsProvider final : public CredentialsProvider {
 public:
  explicit InstanceProfileCredentialsProvider(EnvLookup env = ProcessEnv());

  // NotFound when IMDS is disabled, cannot be reached (off EC2, or from a pod when the instance's
  // IMDS hop limit is 1) or the instance has no role; PermissionDenied when IMDS refuses the
  // session token; Internal for a reply that is not credentials or whose Code is not "Success".
  absl::StatusOr<AwsCredentials> Get() override;

 private:
  EnvLookup env_;
  HttpTransport transport_;
};

}  // namespace dovetail::providers::aws
