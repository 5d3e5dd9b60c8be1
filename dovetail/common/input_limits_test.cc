#include "dovetail/common/input_limits.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "dovetail/common/test_temp_dir.h"
#include "gtest/gtest.h"

namespace dovetail {
namespace {

std::string WriteTemp(const std::string& name, const std::string& content) {
  const std::string path = dovetail::testing::ProcessTempDir("input_limits_test") + "/" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

TEST(ReadFileAtMostTest, ReadsAFileUpToTheLimit) {
  const std::string path = WriteTemp("exact", std::string(100'000, 'x'));
  auto text = ReadFileAtMost(path, 100'000, "manifest");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(text->size(), 100'000u);
}

TEST(ReadFileAtMostTest, ALargerFileIsInvalidArgumentNamingTheLimit) {
  const std::string path = WriteTemp("over", std::string(100'001, 'x'));
  auto text = ReadFileAtMost(path, 100'000, "kubeconfig");
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument) << text.status();
  EXPECT_NE(text.status().message().find("kubeconfig"), std::string::npos) << text.status();
  EXPECT_NE(text.status().message().find("100000 bytes"), std::string::npos) << text.status();
}

TEST(ReadFileAtMostTest, AHugeSparseFileIsRefusedWithoutReadingIt) {
  const std::string path = WriteTemp("sparse", "");
  std::filesystem::resize_file(path, (uintmax_t{1} << 40) + 1);  // 1 TiB of holes
  auto text = ReadFileAtMost(path, kMaxManifestBytes, "manifest");
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument) << text.status();
  std::filesystem::remove(path);
}

TEST(ReadFileAtMostTest, AStreamIsCutAtTheLimit) {
  auto text = ReadFileAtMost("/dev/zero", 1 << 20, "manifest");
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument) << text.status();
}

TEST(ReadFileAtMostTest, MissingFilesAndDirectories) {
  EXPECT_EQ(ReadFileAtMost("/nonexistent/dovetail", 10, "x").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadFileAtMost("/", 10, "x").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CheckSizeTest, NamesWhatAndTheLimit) {
  EXPECT_TRUE(CheckSize(10, 10, "x").ok());
  const absl::Status s = CheckSize(11, 10, "spec.userData");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "spec.userData is 11 bytes, more than the limit of 10 bytes");
}

}  // namespace
}  // namespace dovetail
