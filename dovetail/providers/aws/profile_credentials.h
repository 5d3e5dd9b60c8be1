// Credentials from a profile of the shared config files, as the AWS SDKs resolve it:
//   files     AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials, sections "[NAME]") and
//             AWS_CONFIG_FILE (~/.aws/config, sections "[profile NAME]" and "[default]"); for one
//             profile the credentials file wins key by key
//   profile   AWS_PROFILE, else AWS_DEFAULT_PROFILE, else "default"
// A profile gives credentials in this order:
//   role_arn                  STS AssumeRole (sts.h) with the credentials of
//                               source_profile      another profile, resolved the same way (so
//                                                   roles chain), or this profile's own static
//                                                   keys when it names itself
//                               credential_source   Environment, Ec2InstanceMetadata or
//                                                   EcsContainer
//                             or AssumeRoleWithWebIdentity with web_identity_token_file;
//                             role_session_name, external_id and duration_seconds are honoured;
//                             mfa_serial is refused (it needs a person to type a code)
//   aws_access_key_id         static keys (+ aws_secret_access_key, aws_session_token)
//   credential_process        the command's output (process_credentials.h)
// Thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "dovetail/providers/aws/aws_client.h"
#include "dovetail/providers/aws/credentials.h"

namespace dovetail::providers::aws {

class ProfileCredentialsProvider final : public CredentialsProvider {
 public:
  // `sts` (an STS client; it may be unsigned, AssumeRole signs with the source credentials) must
  // outlive the provider; without it a profile with role_arn is FailedPrecondition.
  explicit ProfileCredentialsProvider(EnvLookup env = ProcessEnv(), AwsClient* sts = nullptr)
      : env_(std::move(env)), sts_(sts) {}

  // NotFound when neither file has the profile or the profile has no credentials setting;
  // InvalidArgument for a profile that is set up wrong (a role without a source, a source that
  // does not exist, a cycle of source profiles, a key id without a secret, mfa_serial) and for a
  // shared file over kMaxAwsSharedFileBytes (common/input_limits.h); the errors of STS, the
  // credential sources and credential_process as they come.
  absl::StatusOr<AwsCredentials> Get() override;

 private:
  EnvLookup env_;
  AwsClient* const sts_;
};

// Parses an INI file of the shared config/credentials format: returns the key/value pairs of
// section `section` ("default", "profile dev", ...); NotFound when the section is absent.
absl::StatusOr<std::map<std::string, std::string>> ReadIniSection(std::string_view text,
                                                                  std::string_view section);

}  // namespace dovetail::providers::aws
