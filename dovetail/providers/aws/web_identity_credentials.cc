#include "dovetail/providers/aws/web_identity_credentials.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/providers/aws/query_protocol.h"

namespace dovetail::providers::aws {

absl::StatusOr<AwsCredentials> WebIdentityCredentialsProvider::Get() {
  auto role = env_("AWS_ROLE_ARN");
  auto token_file = env_("AWS_WEB_IDENTITY_TOKEN_FILE");
  if (!role || !token_file) {
    return absl::NotFoundError(
        "web identity: AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE are not both set");
  }
  std::ifstream in(*token_file, std::ios::binary);
  if (!in.is_open()) {
    return absl::FailedPreconditionError(Cat("web identity: cannot read token file ", *token_file));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(ss.str()));
  if (token.empty()) {
    return absl::FailedPreconditionError(
        Cat("web identity: token file ", *token_file, " is empty"));
  }
  std::string session = env_("AWS_ROLE_SESSION_NAME").value_or("dovetail");
  QueryParams params{{"RoleArn", *role}, {"RoleSessionName", session}, {"WebIdentityToken", token}};
  ASSIGN_OR_RETURN(auto doc, CallQuery(sts_, "AssumeRoleWithWebIdentity", kStsApiVersion, params));
  pugi::xml_node creds =
      doc->document_element().child("AssumeRoleWithWebIdentityResult").child("Credentials");
  AwsCredentials out{.access_key_id = Text(creds, "AccessKeyId"),
                     .secret_access_key = Text(creds, "SecretAccessKey"),
                     .session_token = Text(creds, "SessionToken"),
                     .source = "web-identity:" + *role};
  if (out.access_key_id.empty() || out.secret_access_key.empty()) {
    return absl::InternalError("sts:AssumeRoleWithWebIdentity: response has no Credentials");
  }
  absl::Time expiration;
  std::string err;
  if (absl::ParseTime(absl::RFC3339_full, Text(creds, "Expiration"), &expiration, &err)) {
    out.expiration = expiration;
  }
  return out;
}

std::unique_ptr<CredentialsProvider> DefaultCredentialsChain(AwsClient& sts, const Clock& clock,
                                                             const EnvLookup& env) {
  std::vector<std::unique_ptr<CredentialsProvider>> chain;
  chain.push_back(std::make_unique<EnvironmentCredentialsProvider>(env));
  chain.push_back(std::make_unique<WebIdentityCredentialsProvider>(sts, env));
  chain.push_back(std::make_unique<ProfileCredentialsProvider>(env));
  return std::make_unique<CachingCredentialsProvider>(
      std::make_unique<ChainCredentialsProvider>(std::move(chain)), clock);
}

}  // namespace dovetail::providers::aws
