#include "dovetail/common/crash_point.h"

#include <csignal>
#include <cstdlib>

#include "gtest/gtest.h"

namespace dovetail {
namespace {

// In a child process (a death test), so that the variable is read there first: a point the
// variable does not name passes, the one it names kills the process with SIGKILL.
TEST(CrashPointTest, KillsWithSigkillOnlyAtTheNamedPoint) {
  EXPECT_EXIT(
      {
        setenv("DOVETAIL_CRASH_POINT", "nodeclaim-launched", 1);
        CrashPoint("somewhere-else");
        CrashPoint(kCrashPointNodeClaimLaunched);
        std::exit(0);
      },
      ::testing::KilledBySignal(SIGKILL), "");
}

}  // namespace
}  // namespace dovetail
