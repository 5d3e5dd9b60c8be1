#include "dovetail/kube/config.h"

#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/input_limits.h"
#include "dovetail/common/status_macros.h"
#include "yaml-cpp/yaml.h"

namespace dovetail::kube {
namespace {

std::string Resolve(std::string_view base_dir, const std::string& path) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return Cat(base_dir, "/", path);
}

// Finds the entry `name` in a kubeconfig list (`clusters`, `users`, `contexts`).
YAML::Node FindNamed(const YAML::Node& list, const std::string& name, const char* field) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const YAML::Node& entry : list) {
    if (entry["name"] && entry["name"].as<std::string>() == name) return entry[field];
  }
  return YAML::Node();
}

std::string Str(const YAML::Node& node, const char* key) {
  const YAML::Node value = node[key];
  if (!value || value.IsNull() || !value.IsScalar()) return "";
  return value.as<std::string>();
}

absl::StatusOr<std::string> DataOrFile(const YAML::Node& node, const char* data_key,
                                       const char* file_key, std::string_view base_dir) {
  const std::string data = Str(node, data_key);
  if (!data.empty()) {
    std::string decoded;
    if (!absl::Base64Unescape(data, &decoded)) {
      return absl::InvalidArgumentError(absl::StrCat("kubeconfig: ", data_key, " is not base64"));
    }
    return decoded;
  }
  const std::string file = Str(node, file_key);
  if (file.empty()) return std::string();
  return ReadFile(Resolve(base_dir, file));
}

absl::StatusOr<RestConfig> ParseKubeconfigNode(const YAML::Node& root, std::string_view base_dir,
                                               std::string_view context_override) {
  std::string context_name(context_override);
  if (context_name.empty()) context_name = Str(root, "current-context");
  if (context_name.empty()) return absl::InvalidArgumentError("kubeconfig: no current-context");
  const YAML::Node context = FindNamed(root["contexts"], context_name, "context");
  if (!context) {
    return absl::InvalidArgumentError(Cat("kubeconfig: context \"", context_name, "\" not found"));
  }
  const std::string cluster_name = Str(context, "cluster");
  const YAML::Node cluster = FindNamed(root["clusters"], cluster_name, "cluster");
  if (!cluster) {
    return absl::InvalidArgumentError(Cat("kubeconfig: cluster \"", cluster_name, "\" not found"));
  }
  RestConfig config;
  config.server = Str(cluster, "server");
  while (!config.server.empty() && config.server.back() == '/') config.server.pop_back();
  if (config.server.empty()) return absl::InvalidArgumentError("kubeconfig: cluster has no server");
  config.tls_server_name = Str(cluster, "tls-server-name");
  config.insecure_skip_tls_verify = Str(cluster, "insecure-skip-tls-verify") == "true";
  ASSIGN_OR_RETURN(config.ca_pem, DataOrFile(cluster, "certificate-authority-data",
                                             "certificate-authority", base_dir));

  const std::string user_name = Str(context, "user");
  const YAML::Node user = FindNamed(root["users"], user_name, "user");
  if (!user_name.empty() && !user) {
    return absl::InvalidArgumentError(Cat("kubeconfig: user \"", user_name, "\" not found"));
  }
  if (user) {
    ASSIGN_OR_RETURN(config.client_cert_pem,
                     DataOrFile(user, "client-certificate-data", "client-certificate", base_dir));
    ASSIGN_OR_RETURN(config.client_key_pem,
                     DataOrFile(user, "client-key-data", "client-key", base_dir));
    config.bearer_token = Str(user, "token");
    const std::string token_file = Str(user, "tokenFile");
    if (!token_file.empty()) config.token_file = Resolve(base_dir, token_file);
    if (const YAML::Node exec = user["exec"]; exec && exec.IsMap()) {
      ExecConfig e;
      e.command = Str(exec, "command");
      if (e.command.empty()) return absl::InvalidArgumentError("kubeconfig: exec without command");
      if (e.command.find('/') != std::string::npos && e.command[0] != '/') {
        e.command = Resolve(base_dir, e.command);
      }
      if (const YAML::Node args = exec["args"]; args && args.IsSequence()) {
        for (const YAML::Node& a : args) e.args.push_back(a.as<std::string>());
      }
      if (const YAML::Node env = exec["env"]; env && env.IsSequence()) {
        for (const YAML::Node& v : env) e.env.emplace_back(Str(v, "name"), Str(v, "value"));
      }
      const std::string api_version = Str(exec, "apiVersion");
      if (!api_version.empty()) e.api_version = api_version;
      config.exec = std::move(e);
    }
  }
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    return absl::InvalidArgumentError("kubeconfig: client certificate and key must come together");
  }
  return config;
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  return ReadFileAtMost(path, kMaxKubeconfigBytes, "file");
}

absl::StatusOr<RestConfig> ParseKubeconfig(std::string_view yaml, std::string_view base_dir,
                                           std::string_view context) {
  RETURN_IF_ERROR(CheckSize(yaml.size(), kMaxKubeconfigBytes, "kubeconfig"));
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsMap()) return absl::InvalidArgumentError("kubeconfig: not a mapping");
    return ParseKubeconfigNode(root, base_dir, context);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig: ", e.what()));
  }
}

absl::StatusOr<RestConfig> LoadKubeconfigFile(const std::string& path, std::string_view context) {
  ASSIGN_OR_RETURN(const std::string text, ReadFileAtMost(path, kMaxKubeconfigBytes, "kubeconfig"));
  const size_t slash = path.rfind('/');
  const std::string base_dir = slash == std::string::npos ? "." : path.substr(0, slash);
  return ParseKubeconfig(text, base_dir, context);
}

absl::StatusOr<RestConfig> InClusterConfig(const InClusterPaths& paths) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') {
    return absl::FailedPreconditionError(
        "not running in a cluster (KUBERNETES_SERVICE_HOST unset)");
  }
  RestConfig config;
  const std::string_view h(host);
  // IPv6 literals need brackets in URLs.
  config.server = h.find(':') != std::string_view::npos ? Cat("https://[", h, "]:", port)
                                                        : Cat("https://", h, ":", port);
  config.token_file = paths.token_file;
  ASSIGN_OR_RETURN(config.ca_pem, ReadFile(paths.ca_file));
  // Fail early when the token is missing; the credential provider re-reads it later.
  RETURN_IF_ERROR(ReadFile(paths.token_file).status());
  return config;
}

absl::StatusOr<RestConfig> LoadDefaultConfig() {
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    const std::vector<std::string> paths = absl::StrSplit(env, ':', absl::SkipEmpty());
    if (!paths.empty()) return LoadKubeconfigFile(paths.front());
  }
  if (auto in_cluster = InClusterConfig(); in_cluster.ok()) return in_cluster;
  const char* home = std::getenv("HOME");
  if (home == nullptr) return absl::NotFoundError("no kubeconfig: KUBECONFIG and HOME unset");
  return LoadKubeconfigFile(absl::StrCat(home, "/.kube/config"));
}

}  // namespace dovetail::kube
