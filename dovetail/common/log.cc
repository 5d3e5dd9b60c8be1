#include "dovetail/common/log.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace dovetail::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
absl::Mutex g_mu;

struct Output {
  std::string path;
  FILE* file = nullptr;
  bool owned = false;  // opened here (a file path), closed when replaced
};
std::vector<Output>& Outputs() ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_mu) {
  static auto* outputs = new std::vector<Output>{{"stderr", stderr, false}};
  return *outputs;
}
std::vector<Output>& ErrorOutputs() ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_mu) {
  static auto* outputs = new std::vector<Output>{{"stderr", stderr, false}};
  return *outputs;
}

absl::Status Open(const std::vector<std::string>& paths, std::string_view variable,
                  std::vector<Output>& out) {
  for (const std::string& path : paths) {
    if (path == "stdout") {
      out.push_back({path, stdout, false});
    } else if (path == "stderr") {
      out.push_back({path, stderr, false});
    } else {
      FILE* f = std::fopen(path.c_str(), "a");
      if (f == nullptr) {
        const std::string why = std::strerror(errno);
        for (Output& o : out) {
          if (o.owned) std::fclose(o.file);
        }
        return absl::InvalidArgumentError(absl::StrCat(std::string(variable), "=\"", path,
                                                       "\": cannot open it for appending: ", why));
      }
      out.push_back({path, f, true});
    }
  }
  return absl::OkStatus();
}

void Replace(std::vector<Output>& current, std::vector<Output> next) {
  for (Output& o : current) {
    if (o.owned) std::fclose(o.file);
  }
  current = std::move(next);
}

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

absl::Status SetOutputs(const std::vector<std::string>& paths,
                        const std::vector<std::string>& error_paths) {
  if (paths.empty() || error_paths.empty()) {
    return absl::InvalidArgumentError("LOG_OUTPUT_PATHS and LOG_ERROR_OUTPUT_PATHS need a path");
  }
  std::vector<Output> outputs, errors;
  if (absl::Status s = Open(paths, "LOG_OUTPUT_PATHS", outputs); !s.ok()) return s;
  if (absl::Status s = Open(error_paths, "LOG_ERROR_OUTPUT_PATHS", errors); !s.ok()) {
    for (Output& o : outputs) {
      if (o.owned) std::fclose(o.file);
    }
    return s;
  }
  absl::MutexLock lock(&g_mu);
  Replace(Outputs(), std::move(outputs));
  Replace(ErrorOutputs(), std::move(errors));
  return absl::OkStatus();
}

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
  for (const Output& o : Outputs()) {
    if (std::fprintf(o.file, "%s\n", text.c_str()) >= 0 && std::fflush(o.file) == 0) continue;
    const std::string why = std::strerror(errno);
    std::clearerr(o.file);
    for (const Output& e : ErrorOutputs()) {
      std::fprintf(e.file, "log: cannot write to %s: %s\n", o.path.c_str(), why.c_str());
      std::fflush(e.file);
    }
  }
}

}  // namespace dovetail::log
