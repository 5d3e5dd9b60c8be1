#include "dovetail/common/thread_entry.h"

#include <atomic>
#include <stdexcept>

#include "gtest/gtest.h"

namespace dovetail {
namespace {

TEST(ThreadEntryTest, RunsTheFunctionOnItsThread) {
  std::atomic<int> runs{0};
  std::thread t = StartThread("test.runs", [&] { ++runs; });
  t.join();
  EXPECT_EQ(runs.load(), 1);
}

TEST(ThreadEntryTest, ReturnsNormallyWhenNothingIsThrown) {
  bool ran = false;
  RunThreadEntry("test.inline", [&] { ran = true; });
  EXPECT_TRUE(ran);
}

using ThreadEntryDeathTest = ::testing::Test;

TEST_F(ThreadEntryDeathTest, AStdExceptionEndsTheProcessWithTheThreadNameAndWhat) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::thread t =
            StartThread("provisioner", [] { throw std::runtime_error("json type_error 302"); });
        t.join();
      },
      ::testing::ExitedWithCode(kThreadFailureExitCode),
      "\"thread\":\"provisioner\".*\"exception\":\"json type_error 302\"");
}

TEST_F(ThreadEntryDeathTest, AnUnknownExceptionEndsTheProcessToo) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::thread t = StartThread("workqueue.worker", [] { throw 42; });
        t.join();
      },
      ::testing::ExitedWithCode(kThreadFailureExitCode),
      "\"thread\":\"workqueue.worker\".*unknown exception");
}

}  // namespace
}  // namespace dovetail
