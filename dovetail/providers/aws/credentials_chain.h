// The AWS SDKs' default credentials chain, cached, as the controller and `dovetail catalog export`
// use it. Sources in the SDKs' order (the first that is configured wins; one that is configured
// but fails stops the chain with its error):
//   1. environment        AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN
//                         (credentials.h)
//   2. web identity       AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE: IRSA
//                         (web_identity_credentials.h)
//   3. shared config      the AWS_PROFILE profile: role_arn, static keys, credential_process
//                         (profile_credentials.h)
//   4. container          AWS_CONTAINER_CREDENTIALS_RELATIVE_URI / _FULL_URI: EKS Pod Identity,
//                         ECS task roles (container_credentials.h)
//   5. instance role      IMDSv2 (instance_profile_credentials.h)
// When none is configured the error is NotFound (AwsClient reports it as Unauthenticated), naming
// every source tried and why it did not apply. The result is cached and fetched again 5 minutes
// before the credentials expire, whichever source gave them.
#pragma once

#include <memory>

#include "dovetail/common/clock.h"
#include "dovetail/providers/aws/aws_client.h"
#include "dovetail/providers/aws/credentials.h"
#include "dovetail/providers/aws/env.h"

namespace dovetail::providers::aws {

// `sts` (an unsigned STS client: AssumeRoleWithWebIdentity needs no signature and AssumeRole signs
// with its source credentials) and `clock` must outlive the result.
std::unique_ptr<CredentialsProvider> DefaultCredentialsChain(AwsClient& sts, const Clock& clock,
                                                             const EnvLookup& env = ProcessEnv());

}  // namespace dovetail::providers::aws
