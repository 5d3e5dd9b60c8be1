#include "dovetail/operator/health.h"

#include <optional>
#include <thread>

#include "absl/synchronization/notification.h"
#include "dovetail/common/work_in_progress.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::op {
namespace {

using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

LeaseHealthInput Lease(bool leading, absl::Duration since_renewal) {
  return {.lease_name = "karpenter-leader-election",
          .leading = leading,
          .last_renewal = kNow - since_renewal,
          .lease_duration = absl::Seconds(15)};
}

TEST(DecideHealthTest, HealthyWithNothingToCheck) {
  HealthVerdict verdict = DecideHealth({.now = kNow});
  EXPECT_TRUE(verdict.healthy);
  EXPECT_EQ(verdict.reason, "ok");
}

TEST(DecideHealthTest, ALeaderIsHealthyUpToLeaseDurationPlusTwentySeconds) {
  EXPECT_TRUE(DecideHealth({.now = kNow, .lease = Lease(true, absl::Seconds(35))}).healthy);
  HealthVerdict late = DecideHealth({.now = kNow, .lease = Lease(true, absl::Seconds(36))});
  EXPECT_FALSE(late.healthy);
  EXPECT_EQ(late.reason,
            "leader election: leading but lease karpenter-leader-election not renewed for 36s "
            "(limit 35s)");
}

TEST(DecideHealthTest, AnOldRenewalDoesNotMatterWhenNotLeading) {
  // A standby replica renews nothing; client-go's adaptor only checks a leader.
  EXPECT_TRUE(DecideHealth({.now = kNow, .lease = Lease(false, absl::Hours(3))}).healthy);
}

TEST(DecideHealthTest, ALeaderThatNeverRenewedIsUnhealthy) {
  LeaseHealthInput lease = Lease(true, absl::ZeroDuration());
  lease.last_renewal = absl::InfinitePast();
  HealthVerdict verdict = DecideHealth({.now = kNow, .lease = lease});
  EXPECT_FALSE(verdict.healthy);
  EXPECT_THAT(verdict.reason, HasSubstr("never renewed"));
}

TEST(DecideHealthTest, WorkRunningMoreThanFifteenMinutesIsAStuckLoop) {
  HealthInput input{.now = kNow,
                    .work = {{"provisioner", kNow - absl::Minutes(15)},
                             {"nodeclaim.lifecycle", std::nullopt},
                             {"disruption", kNow - absl::Seconds(3)}}};
  EXPECT_TRUE(DecideHealth(input).healthy);  // exactly at the limit
  input.work[0].oldest_start = kNow - absl::Minutes(15) - absl::Seconds(1);
  HealthVerdict verdict = DecideHealth(input);
  EXPECT_FALSE(verdict.healthy);
  EXPECT_EQ(verdict.reason, "controller provisioner: a unit of work running for 901s (limit 900s)");
}

TEST(DecideHealthTest, NamesTheControllerWithTheOldestWork) {
  HealthVerdict verdict = DecideHealth({.now = kNow,
                                        .work = {{"termination", kNow - absl::Minutes(20)},
                                                 {"disruption", kNow - absl::Hours(2)},
                                                 {"provisioner", kNow - absl::Minutes(16)}}});
  EXPECT_FALSE(verdict.healthy);
  EXPECT_THAT(verdict.reason, HasSubstr("controller disruption:"));
}

TEST(DecideHealthTest, TheLeaseIsReportedBeforeStuckWork) {
  HealthVerdict verdict = DecideHealth({.now = kNow,
                                        .lease = Lease(true, absl::Minutes(1)),
                                        .work = {{"disruption", kNow - absl::Hours(2)}}});
  EXPECT_FALSE(verdict.healthy);
  EXPECT_THAT(verdict.reason, HasSubstr("leader election:"));
}

TEST(WorkInProgressTest, ReportsTheOldestScopeStillOpen) {
  WorkInProgress work;
  EXPECT_EQ(work.OldestStart(), std::nullopt);
  const absl::Time before = absl::Now();
  std::optional<absl::Time> first;
  {
    WorkInProgress::Scope outer(work);
    first = work.OldestStart();
    ASSERT_TRUE(first.has_value());
    EXPECT_GE(*first, before);
    {
      WorkInProgress::Scope inner(work);  // a second, younger unit
      EXPECT_EQ(work.OldestStart(), first);
    }
    EXPECT_EQ(work.OldestStart(), first);
  }
  EXPECT_EQ(work.OldestStart(), std::nullopt);
}

TEST(WorkInProgressTest, ScopesOnOtherThreadsAreSeen) {
  WorkInProgress work;
  absl::Notification entered;
  absl::Notification release;
  std::thread worker([&] {
    WorkInProgress::Scope scope(work);
    entered.Notify();
    release.WaitForNotification();
  });
  entered.WaitForNotification();
  EXPECT_TRUE(work.OldestStart().has_value());
  release.Notify();
  worker.join();
  EXPECT_EQ(work.OldestStart(), std::nullopt);
}

}  // namespace
}  // namespace dovetail::op
