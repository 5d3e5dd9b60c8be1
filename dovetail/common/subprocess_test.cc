#include "dovetail/common/subprocess.h"

#include "gtest/gtest.h"

namespace dovetail {
namespace {

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

TEST(SubprocessTest, TooMuchOutputIsAnError) {
  auto r = RunSubprocess({"/bin/sh", "-c", "yes"}, {.max_output = 1000});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
}

}  // namespace
}  // namespace dovetail
