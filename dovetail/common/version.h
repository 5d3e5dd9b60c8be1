// Build identity of this binary (version, git commit, build type, compiler), filled in at
// configure time. Immutable; thread-safe.
#pragma once

#include <string_view>

namespace dovetail {

struct BuildInfo {
  std::string_view version;
  std::string_view commit;
  std::string_view build_type;
  std::string_view compiler;
};

const BuildInfo& GetBuildInfo();

}  // namespace dovetail
