#include "dovetail/common/input_limits.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/status/status.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail {

absl::Status CheckSize(size_t size, size_t max_bytes, std::string_view what) {
  if (size <= max_bytes) return absl::OkStatus();
  return absl::InvalidArgumentError(
      Cat(what, " is ", size, " bytes, more than the limit of ", max_bytes, " bytes"));
}

absl::StatusOr<std::string> ReadFileAtMost(const std::string& path, size_t max_bytes,
                                           std::string_view what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(Cat("cannot read ", what, " ", path, ": is a directory"));
  }
  // A regular file's size is known before reading it (a sparse file can claim terabytes);
  // pipes and devices are measured as they are read.
  if (const uintmax_t size = std::filesystem::file_size(path, ec);
      !ec && std::filesystem::is_regular_file(path, ec) && size > max_bytes) {
    return absl::InvalidArgumentError(
        Cat(what, " ", path, " is ", size, " bytes, more than the limit of ", max_bytes, " bytes"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    return absl::Status(absl::ErrnoToStatusCode(error),
                        Cat("cannot open ", what, " ", path, ": ", std::strerror(error)));
  }
  std::string text;
  char buffer[1 << 16];
  while (in) {
    in.read(buffer, sizeof(buffer));
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes) {
      return absl::InvalidArgumentError(
          Cat(what, " ", path, " is larger than the limit of ", max_bytes, " bytes"));
    }
  }
  if (in.bad()) return absl::UnavailableError(Cat("cannot read ", what, " ", path));
  return text;
}

}  // namespace dovetail
