#include "dovetail/common/crash_point.h"

#include <csignal>
#include <cstdlib>
#include <string>

#include "dovetail/common/log.h"

namespace dovetail {

void CrashPoint(std::string_view name) {
  static const std::string armed = [] {
    const char* value = std::getenv("DOVETAIL_CRASH_POINT");
    std::string point = value == nullptr ? std::string() : std::string(value);
    if (!point.empty() && point != kCrashPointNodeClaimLaunched) {
      log::Error("crash-point", "DOVETAIL_CRASH_POINT names no crash point; ignored",
                 {{"point", point}, {"known", std::string(kCrashPointNodeClaimLaunched)}});
    }
    return point;
  }();
  if (armed.empty() || armed != name) return;
  log::Error("crash-point", "killing the process with SIGKILL (DOVETAIL_CRASH_POINT)",
             {{"point", std::string(name)}});
  std::raise(SIGKILL);
}

}  // namespace dovetail
