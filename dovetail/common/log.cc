#include "dovetail/common/log.h"

#include <atomic>
#include <cstdio>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace dovetail::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
absl::Mutex g_mu;

std::string_view Name(Level level) {
  switch (level) {
    case Level::kDebug:
      return "DEBUG";
    case Level::kInfo:
      return "INFO";
    case Level::kError:
      return "ERROR";
  }
  return "INFO";
}

}  // namespace

bool SetLevel(std::string_view level) {
  if (level == "debug") {
    g_level = static_cast<int>(Level::kDebug);
  } else if (level == "info") {
    g_level = static_cast<int>(Level::kInfo);
  } else if (level == "error") {
    g_level = static_cast<int>(Level::kError);
  } else {
    return false;
  }
  return true;
}

bool Enabled(Level level) { return static_cast<int>(level) >= g_level.load(); }

void Write(Level level, std::string_view logger, std::string_view message, Fields fields) {
  nlohmann::ordered_json line;
  line["level"] = Name(level);
  line["time"] = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
  line["logger"] = logger;
  line["message"] = message;
  for (const auto& [key, value] : fields) line[std::string(key)] = value;
  // Invalid UTF-8 from the API server or the cloud must not throw.
  const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  absl::MutexLock lock(&g_mu);
  std::fprintf(stderr, "%s\n", text.c_str());
  std::fflush(stderr);
}

}  // namespace dovetail::log
