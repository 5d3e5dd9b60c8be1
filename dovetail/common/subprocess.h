// Runs a helper command and reads what it prints: the credential helpers a kubeconfig (exec
// plugins, kube/credentials.cc) or an AWS profile (credential_process,
// providers/aws/process_credentials.cc) names. The child gets the parent's environment plus
// `extra_env`, the parent's stderr, and its stdout on a pipe; no shell unless argv asks for one.
// It leads a process group of its own, so that a kill at the timeout also ends what it started.
// Thread-safe (posix_spawn; nothing global is touched).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace dovetail {

struct SubprocessResult {
  int exit_code = 0;
  std::string stdout_text;
};

struct SubprocessOptions {
  std::vector<std::pair<std::string, std::string>> extra_env;  // added after the parent's
  absl::Duration timeout = absl::Minutes(1);  // then the child's process group is killed (SIGKILL)
  size_t max_output = 1 << 20;                // more stdout than this is an error
};

// Runs argv[0] (searched on PATH) with argv and waits for it. A non-zero exit is not an error:
// read `exit_code`. Errors: InvalidArgument for an empty argv, FailedPrecondition when the command
// cannot be started, DeadlineExceeded after `timeout` (the child's process group is killed and the
// child reaped), ResourceExhausted for too much output, Internal for a failed pipe. A child killed
// by a signal reports exit code 128 + the signal number, as a shell does.
absl::StatusOr<SubprocessResult> RunSubprocess(const std::vector<std::string>& argv,
                                               const SubprocessOptions& options = {});

}  // namespace dovetail
