// Structured logs for the long-running controller: one JSON object per line (on stderr until
// SetOutputs; the controller sends them where upstream's LOG_OUTPUT_PATHS says), with the
// fields upstream Karpenter's (zap) logs carry (level, time, logger, message) plus key/value pairs,
// so log pipelines built for upstream keep working. The level threshold is process-wide (set once
// at start-up from LOG_LEVEL); the CLI's one-shot commands print plain messages instead.
// Thread-safe: lines from different threads never interleave.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace dovetail::log {

enum class Level { kDebug = 0, kInfo = 1, kError = 2 };

// "debug", "info" or "error"; anything else leaves the level unchanged and returns false.
bool SetLevel(std::string_view level);
bool Enabled(Level level);

// Where lines go (upstream's LOG_OUTPUT_PATHS): each of `paths` is "stdout", "stderr" or a file
// opened for appending; a failed write is reported on each of `error_paths` (upstream's
// LOG_ERROR_OUTPUT_PATHS). Errors: InvalidArgument naming a path that cannot be opened (the
// outputs are then unchanged).
absl::Status SetOutputs(const std::vector<std::string>& paths,
                        const std::vector<std::string>& error_paths);

using Fields = std::initializer_list<std::pair<std::string_view, std::string>>;

void Write(Level level, std::string_view logger, std::string_view message, Fields fields = {});
inline void Debug(std::string_view logger, std::string_view message, Fields fields = {}) {
  if (Enabled(Level::kDebug)) Write(Level::kDebug, logger, message, fields);
}
inline void Info(std::string_view logger, std::string_view message, Fields fields = {}) {
  if (Enabled(Level::kInfo)) Write(Level::kInfo, logger, message, fields);
}
inline void Error(std::string_view logger, std::string_view message, Fields fields = {}) {
  Write(Level::kError, logger, message, fields);
}

}  // namespace dovetail::log
