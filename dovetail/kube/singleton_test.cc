#include "dovetail/kube/singleton.h"

#include <atomic>
#include <optional>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace dovetail::kube {
namespace {

// Polls `condition` for up to 10 s.
bool Eventually(const std::function<bool()>& condition) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    if (condition()) return true;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return condition();
}

TEST(SingletonTest, PassesAtStartThenEveryPeriod) {
  std::atomic<int> passes{0};
  Singleton loop({}, absl::Milliseconds(5), [&] {
    ++passes;
    return absl::OkStatus();
  });
  EXPECT_EQ(passes.load(), 0);  // nothing before Start
  loop.Start();
  loop.Start();  // no second loop
  EXPECT_TRUE(Eventually([&] { return passes.load() >= 3; }));
  loop.Stop();
  const int stopped_at = passes.load();
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(passes.load(), stopped_at);
  loop.Stop();  // idempotent
}

TEST(SingletonTest, AFailedPassIsRetriedWithTheQueuesBackoffNotThePeriod) {
  std::atomic<int> passes{0};
  Singleton loop(
      {.base_delay = absl::Milliseconds(1), .max_delay = absl::Milliseconds(2)}, absl::Hours(1),
      [&] { return ++passes < 3 ? absl::UnavailableError("not yet") : absl::OkStatus(); });
  loop.Start();
  EXPECT_TRUE(Eventually([&] { return passes.load() == 3; }));
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(passes.load(), 3);  // then the hour's period
}

TEST(SingletonTest, StopWaitsForThePassInFlightAndStartRunsAgain) {
  std::atomic<bool> inside{false};
  std::atomic<int> passes{0};
  Singleton loop({}, absl::Hours(1), [&] {
    inside = true;
    absl::SleepFor(absl::Milliseconds(50));
    ++passes;
    inside = false;
    return absl::OkStatus();
  });
  loop.Start();
  ASSERT_TRUE(Eventually([&] { return inside.load(); }));
  loop.Stop();
  EXPECT_FALSE(inside.load());
  EXPECT_EQ(passes.load(), 1);
  loop.Start();  // a new first pass
  EXPECT_TRUE(Eventually([&] { return passes.load() == 2; }));
}

TEST(SingletonTest, ReportsWhenThePassInFlightBeganAndNothingBetweenPasses) {
  absl::Notification entered;
  absl::Notification release;
  Singleton loop({}, absl::Hours(1), [&] {
    entered.Notify();
    release.WaitForNotification();
    return absl::OkStatus();
  });
  EXPECT_EQ(loop.OldestWorkStart(), std::nullopt);
  const absl::Time before = absl::Now();
  loop.Start();
  entered.WaitForNotification();
  std::optional<absl::Time> start = loop.OldestWorkStart();
  ASSERT_TRUE(start.has_value());
  EXPECT_GE(*start, before);
  EXPECT_LE(*start, absl::Now());
  release.Notify();
  EXPECT_TRUE(Eventually([&] { return !loop.OldestWorkStart().has_value(); }));
  loop.Stop();
}

}  // namespace
}  // namespace dovetail::kube
