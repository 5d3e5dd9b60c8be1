#include "dovetail/providers/aws/process_credentials.h"

#include "dovetail/common/absl_compat.h"
#include "dovetail/common/subprocess.h"
#include "dovetail/providers/aws/json_member.h"
#include "nlohmann/json.hpp"

namespace dovetail::providers::aws {

absl::StatusOr<AwsCredentials> ProcessCredentialsProvider::Get() {
  const std::string what = Cat(source_, ": credential_process");
  absl::StatusOr<SubprocessResult> run =
      RunSubprocess({"/bin/sh", "-c", command_}, {.timeout = timeout_, .max_output = 64 << 10});
  if (!run.ok()) return absl::UnavailableError(Cat(what, ": ", run.status().message()));
  if (run->exit_code != 0) {
    return absl::UnavailableError(Cat(what, ": '", command_, "' exited with ", run->exit_code));
  }
  const nlohmann::json doc =
      nlohmann::json::parse(run->stdout_text, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json* version = internal::Member(doc, "Version");
  if (version == nullptr || !version->is_number_integer() || version->get<int64_t>() != 1) {
    return absl::InvalidArgumentError(
        Cat(what, ": the output is not a JSON object with \"Version\": 1"));
  }
  AwsCredentials out{.access_key_id = internal::StringMember(doc, "AccessKeyId"),
                     .secret_access_key = internal::StringMember(doc, "SecretAccessKey"),
                     .session_token = internal::StringMember(doc, "SessionToken"),
                     .source = source_};
  if (out.access_key_id.empty() || out.secret_access_key.empty()) {
    return absl::InvalidArgumentError(
        Cat(what, ": the output has no AccessKeyId and SecretAccessKey"));
  }
  if (std::string exp = internal::StringMember(doc, "Expiration"); !exp.empty()) {
    out.expiration = ParseExpiration(exp);
    if (!out.expiration) {
      return absl::InvalidArgumentError(Cat(what, ": bad Expiration '", exp, "'"));
    }
  }
  return out;
}

}  // namespace dovetail::providers::aws
