#include "dovetail/kube/credentials.h"

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dovetail/common/test_temp_dir.h"
#include "gtest/gtest.h"

namespace dovetail::kube {
namespace {

// An exec plugin that prints `output` (single-quoted for the shell: no ' in it).
ExecConfig PrintingPlugin(const std::string& output) {
  return {.command = "/bin/sh", .args = {"-c", absl::StrCat("echo '", output, "'")}};
}

absl::Status PluginStatus(const std::string& output) {
  return RunExecCredentialPlugin(PrintingPlugin(output)).status();
}

TEST(ExecCredentialTypesTest, AMemberOfTheWrongJsonTypeIsInvalidArgumentNotAThrow) {
  for (const char* output : {
           R"({"status":{"token":42}})",
           R"({"status":{"token":["a"]}})",
           R"({"status":{"clientCertificateData":{},"clientKeyData":"k"}})",
           R"({"status":{"clientCertificateData":"c","clientKeyData":true}})",
           R"({"status":{"token":"t","expirationTimestamp":1700000000}})",
       }) {
    const absl::Status status = PluginStatus(output);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << output << ": " << status;
    EXPECT_NE(status.message().find("not a string"), std::string::npos) << status;
  }
}

TEST(ExecCredentialTypesTest, AStatusThatIsNotAnObjectIsInvalidArgument) {
  for (const char* output :
       {R"({"status":"token"})", R"([{"status":{}}])", R"("x")", "{", R"({"status":{}})",
        R"({"status":{"token":"t","expirationTimestamp":"soon"}})"}) {
    EXPECT_EQ(PluginStatus(output).code(), absl::StatusCode::kInvalidArgument) << output;
  }
}

TEST(ExecCredentialTypesTest, NullMembersCountAsAbsent) {
  auto result = RunExecCredentialPlugin(PrintingPlugin(
      R"({"status":{"token":"t","expirationTimestamp":null,"clientKeyData":null}})"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->first.bearer_token, "t");
  EXPECT_FALSE(result->second.has_value());
}

TEST(ExecCredentialTimeoutTest, AHungPluginAndItsChildrenAreKilledAtTheDeadline) {
  const std::string pid_file =
      dovetail::testing::ProcessTempDir("kube_credentials_test") + "/plugin-child.pid";
  // A plugin that starts a helper and waits on it forever, as a stuck SSO login would.
  const ExecConfig plugin{.command = "/bin/sh",
                          .args = {"-c", "sleep 300 & echo $! > \"$PID_FILE\"; wait"},
                          .env = {{"PID_FILE", pid_file}}};
  const absl::Status status = RunExecCredentialPlugin(plugin, absl::Seconds(1)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_NE(status.message().find("exec plugin"), std::string::npos) << status;

  int child = 0;
  std::ifstream(pid_file) >> child;
  ASSERT_GT(child, 0);
  bool ended = false;
  for (int i = 0; i < 1000 && !ended; ++i) {  // SIGKILL lands asynchronously; up to 10 s
    std::ifstream stat(absl::StrCat("/proc/", child, "/stat"));
    std::string line;
    ended = !stat || !std::getline(stat, line) ||
            line.substr(line.rfind(')') + 2, 1) == "Z";  // gone, or a zombie not yet reaped
    if (!ended) absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(ended) << "the plugin's child " << child << " outlived the timeout";
}

TEST(ExecCredentialTimeoutTest, TheDefaultDeadlineIsThirtySeconds) {
  EXPECT_EQ(kExecPluginTimeout, absl::Seconds(30));
}

}  // namespace
}  // namespace dovetail::kube
