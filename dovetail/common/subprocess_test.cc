#include "dovetail/common/subprocess.h"

#include <sys/types.h>

#include <fstream>
#include <string>

#include "absl/time/clock.h"
#include "dovetail/common/test_temp_dir.h"
#include "gtest/gtest.h"

namespace dovetail {
namespace {

// Whether process `pid` has ended: gone, or a zombie (state Z in /proc/PID/stat) that its new
// parent has not reaped yet.
bool ProcessEnded(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!stat || !std::getline(stat, line)) return true;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

// Polls ProcessEnded for up to 10 s: SIGKILL is delivered asynchronously.
bool EndsSoon(pid_t pid) {
  for (int i = 0; i < 1000; ++i) {
    if (ProcessEnded(pid)) return true;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return false;
}

TEST(SubprocessTest, ReadsStdoutAndTheExitCode) {
  auto r = RunSubprocess({"/bin/sh", "-c", "printf 'a b'; echo \"$EXTRA\"; exit 3"},
                         {.extra_env = {{"EXTRA", "from-parent"}}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->stdout_text, "a bfrom-parent\n");
}

TEST(SubprocessTest, AMissingCommandCannotStart) {
  auto r = RunSubprocess({"/nonexistent/dovetail-helper"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_EQ(RunSubprocess({}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SubprocessTest, AHungChildIsKilledAtTheTimeout) {
  auto r = RunSubprocess({"/bin/sleep", "30"}, {.timeout = absl::Milliseconds(300)});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
}

TEST(SubprocessTest, AChildThatClosesStdoutButStaysIsKilledAtTheTimeout) {
  auto r = RunSubprocess({"/bin/sh", "-c", "echo done; exec >&-; exec sleep 30"},
                         {.timeout = absl::Milliseconds(300)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stdout_text, "done\n");
  EXPECT_EQ(r->exit_code, 128 + 9);  // SIGKILL
}

TEST(SubprocessTest, WhatTheChildStartedIsKilledWithItAtTheTimeout) {
  const std::string pid_file = dovetail::testing::ProcessTempDir("subprocess_test") + "/sleep.pid";
  auto r = RunSubprocess({"/bin/sh", "-c", "sleep 300 & echo $! > \"$PID_FILE\"; wait"},
                         {.extra_env = {{"PID_FILE", pid_file}}, .timeout = absl::Seconds(1)});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  pid_t grandchild = 0;
  std::ifstream(pid_file) >> grandchild;
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(EndsSoon(grandchild))
      << "the shell's `sleep 300` (pid " << grandchild << ") outlived the timeout";
}

TEST(SubprocessTest, TooMuchOutputIsAnError) {
  auto r = RunSubprocess({"/bin/sh", "-c", "yes"}, {.max_output = 1000});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
}

}  // namespace
}  // namespace dovetail
