#include "dovetail/providers/aws/web_identity_credentials.h"

#include "absl/strings/ascii.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/input_limits.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/providers/aws/sts.h"

namespace dovetail::providers::aws {

absl::StatusOr<std::string> ReadWebIdentityToken(std::string_view what, const std::string& path) {
  absl::StatusOr<std::string> text =
      ReadFileAtMost(path, kMaxAwsSharedFileBytes, Cat(what, ": token file"));
  if (!text.ok() && text.status().code() == absl::StatusCode::kInvalidArgument) {
    return text.status();  // over the size limit
  }
  if (!text.ok()) {
    return absl::FailedPreconditionError(Cat(what, ": cannot read token file ", path));
  }
  std::string token(absl::StripAsciiWhitespace(*text));
  if (token.empty()) {
    return absl::FailedPreconditionError(Cat(what, ": token file ", path, " is empty"));
  }
  return token;
}

absl::StatusOr<AwsCredentials> WebIdentityCredentialsProvider::Get() {
  auto role = env_("AWS_ROLE_ARN");
  auto token_file = env_("AWS_WEB_IDENTITY_TOKEN_FILE");
  if (!role || !token_file) {
    return absl::NotFoundError(
        "web identity: AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE are not both set");
  }
  ASSIGN_OR_RETURN(std::string token, ReadWebIdentityToken("web identity", *token_file));
  return AssumeRoleWithWebIdentity(
      sts_, {.role_arn = *role, .session_name = env_("AWS_ROLE_SESSION_NAME").value_or("dovetail")},
      token);
}

}  // namespace dovetail::providers::aws
