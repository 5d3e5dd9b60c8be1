#include "dovetail/providers/aws/credentials_chain.h"

#include <utility>
#include <vector>

#include "dovetail/providers/aws/container_credentials.h"
#include "dovetail/providers/aws/instance_profile_credentials.h"
#include "dovetail/providers/aws/profile_credentials.h"
#include "dovetail/providers/aws/web_identity_credentials.h"

namespace dovetail::providers::aws {

std::unique_ptr<CredentialsProvider> DefaultCredentialsChain(AwsClient& sts, const Clock& clock,
                                                             const EnvLookup& env) {
  std::vector<std::unique_ptr<CredentialsProvider>> chain;
  chain.push_back(std::make_unique<EnvironmentCredentialsProvider>(env));
  chain.push_back(std::make_unique<WebIdentityCredentialsProvider>(sts, env));
  chain.push_back(std::make_unique<ProfileCredentialsProvider>(env, &sts));
  chain.push_back(std::make_unique<ContainerCredentialsProvider>(env));
  chain.push_back(std::make_unique<InstanceProfileCredentialsProvider>(env));
  return std::make_unique<CachingCredentialsProvider>(
      std::make_unique<ChainCredentialsProvider>(std::move(chain)), clock);
}

}  // namespace dovetail::providers::aws
