// The entry of every thread Dovetail starts. Our code throws nothing (docs/architecture.md), but a
// third-party library can (nlohmann::json, yaml-cpp, the standard library's std::bad_alloc), and an
// exception that leaves a thread's function calls std::terminate: the process aborts without a
// word about which thread or why. RunThreadEntry catches it instead, logs the thread's name and
// what() as one error line (common/log.h) and ends the process with kThreadFailureExitCode, so the
// supervisor (the kubelet, systemd) restarts it and the log says why. Ending the process rather
// than the thread alone is deliberate: a controller whose loop is gone but whose process lives on
// would hold its lease and do nothing.
// Thread-safe; call StartThread wherever a product thread is started.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <thread>

namespace dovetail {

// The exit code of a process one of whose threads let an exception escape: EX_SOFTWARE
// ("internal software error") of BSD's sysexits.h.
inline constexpr int kThreadFailureExitCode = 70;

// Runs `fn` on the calling thread. If it throws, logs `name` and the exception (what() when it is
// a std::exception) and exits the process with kThreadFailureExitCode without running static
// destructors (other threads are still running); never returns in that case.
void RunThreadEntry(std::string_view name, const std::function<void()>& fn);

// A std::thread running `fn` under RunThreadEntry, its name (the first 15 bytes, the kernel's
// limit) set for ps, top and debuggers.
std::thread StartThread(std::string name, std::function<void()> fn);

}  // namespace dovetail
