#include "dovetail/providers/aws/sts.h"

#include "absl/strings/str_cat.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/providers/aws/query_protocol.h"

namespace dovetail::providers::aws {
namespace {

// <ActionResult><Credentials> of either call, as AwsCredentials.
absl::StatusOr<AwsCredentials> ReadStsCredentials(const pugi::xml_document& doc,
                                                  std::string_view action, std::string source) {
  pugi::xml_node creds =
      doc.document_element().child(Cat(action, "Result").c_str()).child("Credentials");
  AwsCredentials out{.access_key_id = Text(creds, "AccessKeyId"),
                     .secret_access_key = Text(creds, "SecretAccessKey"),
                     .session_token = Text(creds, "SessionToken"),
                     .source = std::move(source)};
  if (out.access_key_id.empty() || out.secret_access_key.empty()) {
    return absl::InternalError(Cat("sts:", action, ": response has no Credentials"));
  }
  out.expiration = ParseExpiration(Text(creds, "Expiration"));
  return out;
}

QueryParams RoleParams(const AssumeRoleParams& params) {
  QueryParams out{{"RoleArn", params.role_arn},
                  {"RoleSessionName", params.session_name},
                  {"DurationSeconds", absl::StrCat(absl::ToInt64Seconds(params.duration))}};
  if (!params.external_id.empty()) out.emplace_back("ExternalId", params.external_id);
  return out;
}

}  // namespace

absl::StatusOr<AwsCredentials> AssumeRoleWithWebIdentity(AwsClient& sts,
                                                         const AssumeRoleParams& params,
                                                         std::string_view token) {
  QueryParams query = RoleParams(params);
  query.emplace_back("WebIdentityToken", std::string(token));
  ASSIGN_OR_RETURN(auto doc, CallQuery(sts, "AssumeRoleWithWebIdentity", kStsApiVersion, query));
  return ReadStsCredentials(*doc, "AssumeRoleWithWebIdentity",
                            Cat("web-identity:", params.role_arn));
}

absl::StatusOr<AwsCredentials> AssumeRole(AwsClient& sts, const AwsCredentials& source,
                                          const AssumeRoleParams& params) {
  ASSIGN_OR_RETURN(auto doc,
                   CallQuery(sts, "AssumeRole", kStsApiVersion, RoleParams(params), &source));
  return ReadStsCredentials(*doc, "AssumeRole",
                            Cat("assume-role:", params.role_arn, " from ", source.source));
}

}  // namespace dovetail::providers::aws
