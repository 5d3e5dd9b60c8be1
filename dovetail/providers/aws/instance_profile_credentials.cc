#include "dovetail/providers/aws/instance_profile_credentials.h"

#include "absl/strings/ascii.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/providers/aws/json_member.h"
#include "dovetail/providers/aws/region.h"
#include "nlohmann/json.hpp"

namespace dovetail::providers::aws {
namespace {

constexpr std::string_view kRolesPath = "meta-data/iam/security-credentials/";

}  // namespace

InstanceProfileCredentialsProvider::InstanceProfileCredentialsProvider(EnvLookup env)
    : env_(std::move(env)),
      transport_(HttpTransport::Options{.connect_timeout = absl::Seconds(1),
                                        .timeout = absl::Seconds(3)}) {}

absl::StatusOr<AwsCredentials> InstanceProfileCredentialsProvider::Get() {
  if (absl::AsciiStrToLower(env_("AWS_EC2_METADATA_DISABLED").value_or("")) == "true") {
    return absl::NotFoundError("IMDS: AWS_EC2_METADATA_DISABLED is true");
  }
  ImdsClient imds(transport_, ImdsClient::Options{}, env_);
  absl::StatusOr<std::string> roles = imds.Get(kRolesPath);
  if (absl::IsUnavailable(roles.status())) {
    return absl::NotFoundError(Cat("IMDS (", imds.endpoint(), "): not reachable (",
                                   roles.status().message(),
                                   "; from a pod, an instance IMDS hop limit of 1 blocks it)"));
  }
  if (absl::IsNotFound(roles.status())) {
    return absl::NotFoundError(Cat("IMDS (", imds.endpoint(), "): the instance has no IAM role"));
  }
  if (!roles.ok()) return roles.status();
  std::string role(absl::StripAsciiWhitespace(roles->substr(0, roles->find('\n'))));
  if (role.empty()) {
    return absl::NotFoundError(Cat("IMDS (", imds.endpoint(), "): the instance has no IAM role"));
  }
  ASSIGN_OR_RETURN(std::string body, imds.Get(Cat(kRolesPath, role)));
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (std::string code = internal::StringMember(doc, "Code"); code != "Success") {
    return absl::InternalError(Cat("IMDS: credentials of role ", role, ": Code '", code,
                                   "': ", internal::StringMember(doc, "Message")));
  }
  AwsCredentials out{.access_key_id = internal::StringMember(doc, "AccessKeyId"),
                     .secret_access_key = internal::StringMember(doc, "SecretAccessKey"),
                     .session_token = internal::StringMember(doc, "Token"),
                     .source = Cat("imds:", role)};
  if (out.access_key_id.empty() || out.secret_access_key.empty()) {
    return absl::InternalError(Cat("IMDS: credentials of role ", role, " are incomplete"));
  }
  out.expiration = ParseExpiration(internal::StringMember(doc, "Expiration"));
  return out;
}

}  // namespace dovetail::providers::aws
