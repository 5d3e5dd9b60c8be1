// credential_process: credentials printed by a command a shared-config profile names
// (profile_credentials.h). The command line runs through /bin/sh -c, as the SDKs run it on Linux,
// with a one-minute limit; its stdout must be the JSON the SDKs read:
//   {"Version": 1, "AccessKeyId": ..., "SecretAccessKey": ..., "SessionToken": ...,
//    "Expiration": "<RFC 3339>"}   (SessionToken and Expiration optional)
// Thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dovetail/providers/aws/credentials.h"

namespace dovetail::providers::aws {

class ProcessCredentialsProvider final : public CredentialsProvider {
 public:
  // `source` names the credentials ("profile:dev"); `command` is the profile's value.
  ProcessCredentialsProvider(std::string command, std::string source,
                             absl::Duration timeout = absl::Minutes(1))
      : command_(std::move(command)), source_(std::move(source)), timeout_(timeout) {}

  // Unavailable when the command cannot run, fails (non-zero exit) or times out; InvalidArgument
  // for output that is not Version 1 credentials.
  absl::StatusOr<AwsCredentials> Get() override;

 private:
  const std::string command_;
  const std::string source_;
  const absl::Duration timeout_;
};

}  // namespace dovetail::providers::aws
