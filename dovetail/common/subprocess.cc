#include "dovetail/common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

extern char** environ;

namespace dovetail {
namespace {

// Kills the child and everything it started: RunSubprocess makes it the leader of its own process
// group, so a shell script's own children (a `sleep`, a `curl` waiting on a dead server) go too.
// Called only before the child is reaped, while its process group id cannot be reused.
void KillGroup(pid_t pid) { kill(-pid, SIGKILL); }

// Reaps `pid`, killing its process group first if it is still running at `deadline` (a child that
// closed its stdout but did not exit).
int WaitFor(pid_t pid, absl::Time deadline) {
  int wstatus = 0;
  while (true) {
    const pid_t r = waitpid(pid, &wstatus, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return -1;
    if (absl::Now() >= deadline) {
      KillGroup(pid);
      while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return -1;
}

}  // namespace

absl::StatusOr<SubprocessResult> RunSubprocess(const std::vector<std::string>& argv,
                                               const SubprocessOptions& options) {
  if (argv.empty()) return absl::InvalidArgumentError("subprocess: empty command");
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);  // a new group whose id is the child's pid

  std::vector<std::string> argv_storage = argv;
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) env_storage.emplace_back(*e);
  for (const auto& [name, value] : options.extra_env) {
    env_storage.push_back(absl::StrCat(name, "=", value));
  }
  std::vector<char*> c_argv;
  for (std::string& a : argv_storage) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  std::vector<char*> c_env;
  for (std::string& e : env_storage) c_env.push_back(e.data());
  c_env.push_back(nullptr);

  pid_t pid = 0;
  const int rc =
      posix_spawnp(&pid, argv[0].c_str(), &actions, &attributes, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(out_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    return absl::FailedPreconditionError(absl::StrCat(argv[0], ": ", strerror(rc)));
  }

  SubprocessResult result;
  absl::Status failure;
  const absl::Time deadline = absl::Now() + options.timeout;
  char buffer[4096];
  while (true) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      failure = absl::DeadlineExceededError(absl::StrCat(
          argv[0], ": no result after ", absl::FormatDuration(options.timeout), "; killed"));
      break;
    }
    pollfd pfd{.fd = out_pipe[0], .events = POLLIN, .revents = 0};
    const int ready = poll(&pfd, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // timed out: the deadline check above ends the loop
    const ssize_t n = read(out_pipe[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF (or a read error): the child closed its stdout
    result.stdout_text.append(buffer, static_cast<size_t>(n));
    if (result.stdout_text.size() > options.max_output) {
      failure = absl::ResourceExhaustedError(
          absl::StrCat(argv[0], ": more than ", options.max_output, " bytes of output; killed"));
      break;
    }
  }
  close(out_pipe[0]);
  if (!failure.ok()) KillGroup(pid);
  result.exit_code = WaitFor(pid, deadline);
  if (!failure.ok()) return failure;
  return result;
}

}  // namespace dovetail
