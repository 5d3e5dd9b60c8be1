// Where and how to reach the API server: RestConfig, loaded from a kubeconfig file (current or
// named context; certificate-authority(-data), client-certificate(-data)/client-key(-data), token,
// tokenFile, exec credential plugins, insecure-skip-tls-verify, tls-server-name) or from the
// in-cluster service account (KUBERNETES_SERVICE_HOST/PORT, the mounted token re-read on rotation
// by the credential provider, the mounted CA). File contents are read at load time except the
// token file, which credentials.h re-reads.
// Pure functions over the file system; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace dovetail::kube {

// client.authentication.k8s.io exec credential plugin.
struct ExecConfig {
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string api_version = "client.authentication.k8s.io/v1";
};

struct RestConfig {
  std::string server;  // e.g. https://127.0.0.1:6443, no trailing slash
  std::string tls_server_name;
  bool insecure_skip_tls_verify = false;
  std::string ca_pem;  // empty: the system trust store
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string bearer_token;
  std::string token_file;  // re-read on rotation (in-cluster, kubeconfig tokenFile)
  std::optional<ExecConfig> exec;

  // Client-side throttling (token bucket); qps <= 0 disables it.
  double qps = 50;
  int burst = 100;
  absl::Duration timeout = absl::Seconds(30);  // per request (not for watches)
  std::string user_agent = "dovetail";
};

// Parses kubeconfig YAML. Relative file paths resolve against `base_dir`. An empty `context`
// selects current-context. Errors: InvalidArgument (malformed, missing context/cluster/user, more
// than kMaxKubeconfigBytes of common/input_limits.h; yaml-cpp refuses nesting deeper than its own
// guard), NotFound (a referenced file is missing).
absl::StatusOr<RestConfig> ParseKubeconfig(std::string_view yaml, std::string_view base_dir,
                                           std::string_view context = {});
absl::StatusOr<RestConfig> LoadKubeconfigFile(const std::string& path,
                                              std::string_view context = {});

struct InClusterPaths {
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
};
// Errors: FailedPrecondition when not running in a pod (no KUBERNETES_SERVICE_HOST/PORT).
absl::StatusOr<RestConfig> InClusterConfig(const InClusterPaths& paths = {});

// $KUBECONFIG (first entry), else the in-cluster config, else ~/.kube/config.
absl::StatusOr<RestConfig> LoadDefaultConfig();

// Reads a whole file (a certificate, key or token that a kubeconfig or the service account names)
// of at most kMaxKubeconfigBytes (common/input_limits.h), so that a kubeconfig naming /dev/zero
// cannot exhaust memory. Errors: NotFound (or another errno code) when it cannot be opened,
// InvalidArgument when it is larger or a directory, Unavailable for a read error.
absl::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace dovetail::kube
