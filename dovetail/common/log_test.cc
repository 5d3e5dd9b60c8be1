#include "dovetail/common/log.h"

#include <fstream>
#include <sstream>
#include <string>

#include "dovetail/common/test_temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dovetail::log {
namespace {

using ::testing::HasSubstr;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// LOG_OUTPUT_PATHS: lines go to every path given, files appended to.
TEST(LogOutputsTest, LinesGoToEveryOutputPath) {
  const std::string dir = testing::ProcessTempDir("log_test");
  const std::string a = dir + "/a.log", b = dir + "/b.log";
  std::ofstream(a) << "kept\n";
  std::ofstream(b, std::ios::trunc).flush();
  ASSERT_TRUE(SetOutputs({a, b}, {"stderr"}).ok());
  Info("test", "hello", {{"k", "v"}});
  ASSERT_TRUE(SetOutputs({"stderr"}, {"stderr"}).ok());  // closes a and b
  Info("test", "not in the files");
  const std::string text = ReadAll(a);
  EXPECT_THAT(text, ::testing::StartsWith("kept\n"));
  const nlohmann::json line = nlohmann::json::parse(text.substr(5));
  EXPECT_EQ(line["message"], "hello");
  EXPECT_EQ(line["k"], "v");
  EXPECT_EQ(ReadAll(b), text.substr(5));
}

TEST(LogOutputsTest, APathThatCannotBeOpenedIsRefusedAndChangesNothing) {
  const std::string dir = testing::ProcessTempDir("log_test");
  const std::string kept = dir + "/kept.log";
  ASSERT_TRUE(SetOutputs({kept}, {"stderr"}).ok());
  absl::Status s = SetOutputs({"stdout", dir + "/no/such/dir/x.log"}, {"stderr"});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("LOG_OUTPUT_PATHS"));
  EXPECT_THAT(SetOutputs({"stdout"}, {dir + "/no/such/dir/e.log"}).message(),
              HasSubstr("LOG_ERROR_OUTPUT_PATHS"));
  Info("test", "still here");
  ASSERT_TRUE(SetOutputs({"stderr"}, {"stderr"}).ok());
  EXPECT_THAT(ReadAll(kept), HasSubstr("still here"));
}

// LOG_ERROR_OUTPUT_PATHS: a write that fails (here /dev/full) is reported there.
TEST(LogOutputsTest, AFailedWriteIsReportedOnTheErrorOutputs) {
  const std::string dir = testing::ProcessTempDir("log_test");
  const std::string errors = dir + "/errors.log";
  ASSERT_TRUE(SetOutputs({"/dev/full"}, {errors}).ok());
  Error("test", "lost");
  ASSERT_TRUE(SetOutputs({"stderr"}, {"stderr"}).ok());
  EXPECT_THAT(ReadAll(errors), HasSubstr("log: cannot write to /dev/full"));
}

}  // namespace
}  // namespace dovetail::log
