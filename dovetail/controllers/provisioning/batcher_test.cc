#include "dovetail/controllers/provisioning/batcher.h"

#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace dovetail::controllers::provisioning {
namespace {

BatcherOptions Defaults() { return {.idle = absl::Seconds(1), .max = absl::Seconds(10)}; }

TEST(BatcherTest, NothingIsReadyWithoutATrigger) {
  FakeClock clock;
  Batcher batcher(clock, Defaults());
  clock.Advance(absl::Minutes(1));
  EXPECT_FALSE(batcher.TakeIfReady().has_value());
}

TEST(BatcherTest, WindowClosesAfterTheIdleDuration) {
  FakeClock clock;
  Batcher batcher(clock, Defaults());
  batcher.Trigger("a");
  clock.Advance(absl::Milliseconds(999));
  EXPECT_FALSE(batcher.TakeIfReady().has_value());
  clock.Advance(absl::Milliseconds(1));
  auto batch = batcher.TakeIfReady();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->triggers, 1u);
  EXPECT_FALSE(batcher.TakeIfReady().has_value());  // reset
}

TEST(BatcherTest, NewDistinctTriggerExtendsTheWindowButARepeatDoesNot) {
  FakeClock clock;
  Batcher batcher(clock, Defaults());
  batcher.Trigger("a");
  clock.Advance(absl::Milliseconds(800));
  batcher.Trigger("a");  // repeat: no extension
  clock.Advance(absl::Milliseconds(200));
  ASSERT_TRUE(batcher.TakeIfReady().has_value());

  batcher.Trigger("a");
  clock.Advance(absl::Milliseconds(800));
  batcher.Trigger("b");  // new: the idle timer restarts
  clock.Advance(absl::Milliseconds(200));
  EXPECT_FALSE(batcher.TakeIfReady().has_value());
  clock.Advance(absl::Milliseconds(800));
  auto batch = batcher.TakeIfReady();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->triggers, 2u);
}

TEST(BatcherTest, WindowClosesAtTheMaxDurationUnderAStreamOfTriggers) {
  FakeClock clock;
  Batcher batcher(clock, Defaults());
  const absl::Time start = clock.Now();
  int i = 0;
  while (!batcher.TakeIfReady().has_value()) {
    batcher.Trigger(std::to_string(i++));
    clock.Advance(absl::Milliseconds(500));
    ASSERT_LT(clock.Now() - start, absl::Seconds(11));
  }
  EXPECT_EQ(clock.Now() - start, absl::Seconds(10));
}

TEST(BatcherTest, WaitReturnsTheWindowAfterIdleOnARealClock) {
  RealClock clock;
  Batcher batcher(clock, {.idle = absl::Milliseconds(20), .max = absl::Milliseconds(500)});
  std::thread trigger([&] { batcher.Trigger("a"); });
  auto batch = batcher.Wait(absl::Seconds(10));
  trigger.join();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->triggers, 1u);
  EXPECT_GE(batch->closed - batch->opened, absl::Milliseconds(20));
}

TEST(BatcherTest, WaitFollowsASimulatedClock) {
  FakeClock clock;
  Batcher batcher(
      clock, {.idle = absl::Seconds(1), .max = absl::Seconds(10), .poll = absl::Milliseconds(1)});
  batcher.Trigger("a");
  std::thread advance([&] {
    absl::SleepFor(absl::Milliseconds(5));
    clock.Advance(absl::Seconds(1));
  });
  auto batch = batcher.Wait(absl::Seconds(10));
  advance.join();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->closed - batch->opened, absl::Seconds(1));
}

TEST(BatcherTest, WaitTimesOutWithoutTriggersAndStopWakesIt) {
  RealClock clock;
  Batcher batcher(clock, Defaults());
  EXPECT_FALSE(batcher.Wait(absl::Milliseconds(10)).has_value());
  std::thread stopper([&] {
    absl::SleepFor(absl::Milliseconds(10));
    batcher.Stop();
  });
  batcher.Trigger("a");
  EXPECT_FALSE(batcher.Wait(absl::Seconds(30)).has_value());  // idle is 1 s: Stop came first
  stopper.join();
}

}  // namespace
}  // namespace dovetail::controllers::provisioning
