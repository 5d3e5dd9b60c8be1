// A scratch directory of one test process, for tests only. CTest runs every test of a binary
// as its own process, several at a time, and ::testing::TempDir() is the same directory for
// all of them: a fixed file name under it is shared, and one test rewrites what another reads.
// The process id keeps each test's files its own.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace dovetail::testing {

// <TempDir>/<name>.<pid>, created if missing.
inline std::string ProcessTempDir(std::string_view name) {
  std::string dir = ::testing::TempDir();
  if (!dir.empty() && dir.back() != '/') dir += '/';
  dir += std::string(name) + "." + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace dovetail::testing
