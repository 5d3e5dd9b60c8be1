#include "dovetail/kube/credentials.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/common/status_macros.h"
#include "nlohmann/json.hpp"

extern char** environ;

namespace dovetail::kube {

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
    const ExecConfig& exec) {
  int out_pipe[2];
  if (pipe(out_pipe) != 0) return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
  posix_spawn_file_actions_addclose(&actions, out_pipe[1]);

  std::vector<std::string> argv_storage = {exec.command};
  argv_storage.insert(argv_storage.end(), exec.args.begin(), exec.args.end());
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) env_storage.emplace_back(*e);
  for (const auto& [name, value] : exec.env) env_storage.push_back(absl::StrCat(name, "=", value));
  const nlohmann::json info = {{"apiVersion", exec.api_version},
                               {"kind", "ExecCredential"},
                               {"spec", {{"interactive", false}}}};
  env_storage.push_back(absl::StrCat("KUBERNETES_EXEC_INFO=", info.dump()));
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = 0;
  const int rc =
      posix_spawnp(&pid, exec.command.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    return absl::FailedPreconditionError(
        absl::StrCat("exec plugin ", exec.command, ": ", strerror(rc)));
  }
  std::string output;
  char buffer[4096];
  while (true) {
    const ssize_t n = read(out_pipe[0], buffer, sizeof(buffer));
    if (n > 0) {
      output.append(buffer, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  close(out_pipe[0]);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return absl::UnavailableError(absl::StrCat("exec plugin ", exec.command, " failed"));
  }
  const nlohmann::json json = nlohmann::json::parse(output, nullptr, false);
  if (!json.is_object() || !json.contains("status") || !json["status"].is_object()) {
    return absl::InvalidArgumentError("exec plugin: output is not an ExecCredential with status");
  }
  const nlohmann::json& status = json["status"];
  Credentials creds;
  creds.bearer_token = status.value("token", "");
  creds.client_cert_pem = status.value("clientCertificateData", "");
  creds.client_key_pem = status.value("clientKeyData", "");
  if (creds.bearer_token.empty() && creds.client_cert_pem.empty()) {
    return absl::InvalidArgumentError("exec plugin: neither token nor client certificate");
  }
  std::optional<absl::Time> expires;
  if (const std::string ts = status.value("expirationTimestamp", ""); !ts.empty()) {
    ASSIGN_OR_RETURN(expires, apis::core::ParseKubeTime(ts));
  }
  return std::make_pair(std::move(creds), expires);
}

}  // namespace dovetail::kube
