// The credentials a request carries: a bearer token and/or a client certificate. Static ones come
// from the RestConfig; a token file (in-cluster service account, kubeconfig tokenFile) is re-read
// when it is older than `file_refresh` so a rotated token is picked up; an exec credential plugin
// (client.authentication.k8s.io ExecCredential) is run on first use and again when its
// expirationTimestamp has passed or after the API server answered 401 (Invalidate()).
// Used by RestClient for every request. Thread-safe.
#pragma once

#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/common/clock.h"
#include "dovetail/kube/config.h"

namespace dovetail::kube {

struct Credentials {
  std::string bearer_token;
  std::string client_cert_pem;
  std::string client_key_pem;
};

class CredentialProvider {
 public:
  CredentialProvider(const RestConfig& config, const Clock& clock,
                     absl::Duration file_refresh = absl::Minutes(1));

  // Current credentials. Errors: those of reading the token file or running the exec plugin.
  absl::StatusOr<Credentials> Get();
  // Forgets cached plugin/file credentials so the next Get() fetches fresh ones.
  void Invalidate();

 private:
  absl::StatusOr<Credentials> RunExecPlugin() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const RestConfig config_;
  const Clock& clock_;
  const absl::Duration file_refresh_;
  absl::Mutex mu_;
  std::optional<Credentials> cached_ ABSL_GUARDED_BY(mu_);
  absl::Time expires_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

// How long an exec credential plugin may run before it is killed. client-go sets no limit, so a
// hung plugin (a login prompt nobody answers, an unreachable token endpoint) would hold the
// credential lock, and every request behind it, for ever; 30 s leaves a plugin that fetches a
// token over the network ample time.
inline constexpr absl::Duration kExecPluginTimeout = absl::Seconds(30);

// Runs an exec credential plugin once and parses its ExecCredential. The plugin and everything
// it started (its process group) are killed after `timeout`. Errors: DeadlineExceeded after the
// timeout; Unavailable for a non-zero exit; InvalidArgument for output that is not an
// ExecCredential (not JSON, no status, a member of the wrong JSON type, neither token nor client
// certificate, a bad expirationTimestamp); those of RunSubprocess (common/subprocess.h) otherwise.
// Exposed for tests.
absl::StatusOr<std::pair<Credentials, std::optional<absl::Time>>> RunExecCredentialPlugin(
    const ExecConfig& exec, absl::Duration timeout = kExecPluginTimeout);

}  // namespace dovetail::kube
