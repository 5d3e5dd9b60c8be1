#include "dovetail/common/thread_entry.h"

#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <utility>

#include "dovetail/common/log.h"

namespace dovetail {
namespace {

[[noreturn]] void ExitAfterEscapedException(std::string_view name, std::string_view what) {
  log::Error("thread", "an exception escaped a thread; exiting for a restart",
             {{"thread", std::string(name)},
              {"exception", std::string(what)},
              {"exitCode", std::to_string(kThreadFailureExitCode)}});
  std::fflush(nullptr);
  // _Exit, not exit: static destructors would run while the other threads still use the objects.
  std::_Exit(kThreadFailureExitCode);
}

}  // namespace

void RunThreadEntry(std::string_view name, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    ExitAfterEscapedException(name, e.what());
  } catch (...) {
    ExitAfterEscapedException(name, "unknown exception (not a std::exception)");
  }
}

std::thread StartThread(std::string name, std::function<void()> fn) {
  return std::thread([name = std::move(name), fn = std::move(fn)] {
    // The kernel keeps 15 bytes of a thread's name; a longer one is refused (ERANGE).
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    RunThreadEntry(name, fn);
  });
}

}  // namespace dovetail
