#include "dovetail/kube/credentials.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/common/subprocess.h"
#include "nlohmann/json.hpp"

namespace dovetail::kube {
namespace {

// The string member `key` of an ExecCredential's status: empty when absent or null,
// InvalidArgument when it holds another JSON type (nlohmann's get<std::string> would throw).
absl::StatusOr<std::string> StatusString(const nlohmann::json& status, const char* key) {
  const auto it = status.find(key);
  if (it == status.end() || it->is_null()) return std::string();
  if (!it->is_string()) {
    return absl::InvalidArgumentError(absl::StrCat("exec plugin: ExecCredential status.", key,
                                                   " is a ", it->type_name(), ", not a string"));
  }
  return it->get<std::string>();
}

}  // namespace

CredentialProvider::CredentialProvider(const RestConfig& config, const Clock& clock,
                                       absl::Duration file_refresh)
    : config_(config), clock_(clock), file_refresh_(file_refresh) {}

void CredentialProvider::Invalidate() {
  absl::MutexLock lock(&mu_);
  cached_.reset();
}

absl::StatusOr<Credentials> CredentialProvider::Get() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  if (cached_.has_value() && now < expires_) return *cached_;
  Credentials creds{.bearer_token = config_.bearer_token,
                    .client_cert_pem = config_.client_cert_pem,
                    .client_key_pem = config_.client_key_pem};
  absl::Time expires = absl::InfiniteFuture();
  if (config_.exec.has_value()) {
    ASSIGN_OR_RETURN(auto result, RunExecCredentialPlugin(*config_.exec));
    if (!result.first.bearer_token.empty()) creds.bearer_token = result.first.bearer_token;
    if (!result.first.client_cert_pem.empty()) {
      creds.client_cert_pem = result.first.client_cert_pem;
      creds.client_key_pem = result.first.client_key_pem;
    }
    if (result.second.has_value()) expires = *result.second;
  } else if (!config_.token_file.empty()) {
    ASSIGN_OR_RETURN(std::string token, ReadFile(config_.token_file));
    creds.bearer_token = std::string(absl::StripAsciiWhitespace(token));
    expires = now + file_refresh_;
  }
  cached_ = creds;
  expires_ = expires;
  return creds;
}

absl::StatusOr<std::pair<Credentials, std::optional<absl::Time>>> RunExecCredentialPlugin(
    const ExecConfig& exec, absl::Duration timeout) {
  std::vector<std::string> argv = {exec.command};
  argv.insert(argv.end(), exec.args.begin(), exec.args.end());
  SubprocessOptions options;
  options.timeout = timeout;
  options.extra_env.assign(exec.env.begin(), exec.env.end());
  const nlohmann::json info = {{"apiVersion", exec.api_version},
                               {"kind", "ExecCredential"},
                               {"spec", {{"interactive", false}}}};
  options.extra_env.emplace_back("KUBERNETES_EXEC_INFO", info.dump());
  absl::StatusOr<SubprocessResult> run = RunSubprocess(argv, options);
  if (!run.ok()) {
    return absl::Status(run.status().code(), absl::StrCat("exec plugin ", run.status().message()));
  }
  if (run->exit_code != 0) {
    return absl::UnavailableError(
        absl::StrCat("exec plugin ", exec.command, " failed (exit ", run->exit_code, ")"));
  }
  const nlohmann::json json = nlohmann::json::parse(run->stdout_text, nullptr, false);
  if (!json.is_object() || !json.contains("status") || !json["status"].is_object()) {
    return absl::InvalidArgumentError("exec plugin: output is not an ExecCredential with status");
  }
  const nlohmann::json& status = json["status"];
  Credentials creds;
  ASSIGN_OR_RETURN(creds.bearer_token, StatusString(status, "token"));
  ASSIGN_OR_RETURN(creds.client_cert_pem, StatusString(status, "clientCertificateData"));
  ASSIGN_OR_RETURN(creds.client_key_pem, StatusString(status, "clientKeyData"));
  if (creds.bearer_token.empty() && creds.client_cert_pem.empty()) {
    return absl::InvalidArgumentError("exec plugin: neither token nor client certificate");
  }
  std::optional<absl::Time> expires;
  ASSIGN_OR_RETURN(const std::string ts, StatusString(status, "expirationTimestamp"));
  if (!ts.empty()) {
    ASSIGN_OR_RETURN(expires, apis::core::ParseKubeTime(ts));
  }
  return std::make_pair(std::move(creds), expires);
}

}  // namespace dovetail::kube
