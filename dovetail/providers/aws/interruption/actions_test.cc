#include "dovetail/providers/aws/interruption/actions.h"

#include <string>

#include "gtest/gtest.h"

namespace dovetail::providers::aws::interruption {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

InterruptionMessage Of(InterruptionKind kind) {
  InterruptionMessage m;
  m.kind = kind;
  m.instance_ids = {"i-0123456789abcdef0"};
  m.time = kNow - absl::Seconds(5);
  return m;
}

DecisionContext At(absl::Time now, RebalancePolicy policy = RebalancePolicy::kNone) {
  DecisionContext c;
  c.now = now;
  c.rebalance.policy = policy;
  return c;
}

TEST(DecideActionTest, SpotInterruptionReplacesFirstWithADeadlineThatLeavesTheDrainReserve) {
  const Action a = DecideAction(Of(InterruptionKind::kSpotInterruption), At(kNow));
  EXPECT_TRUE(a.replace);
  EXPECT_TRUE(a.replace_cordon);
  EXPECT_TRUE(a.replace_delete_when_ready);
  // event at now - 5 s; reclaimed at event + 2 min; drained from event + 75 s.
  EXPECT_EQ(a.replace_deadline, kNow - absl::Seconds(5) + absl::Seconds(75));
  EXPECT_TRUE(a.delete_node_claim) << "the fallback without a Replacer";
  EXPECT_TRUE(a.mark_spot_unavailable);
  EXPECT_FALSE(a.taint_rebalance);
  EXPECT_EQ(a.event_reason, "SpotInterrupted");
}

TEST(DecideActionTest, SpotDeadlineIsNeverInThePastNorBeyondTheNotice) {
  InterruptionMessage late = Of(InterruptionKind::kSpotInterruption);
  late.time = kNow - absl::Minutes(3);  // redelivered after the instance should be gone
  EXPECT_EQ(DecideAction(late, At(kNow)).replace_deadline, kNow);

  InterruptionMessage ahead = Of(InterruptionKind::kSpotInterruption);
  ahead.time = kNow + absl::Minutes(5);  // our clock is behind EC2's
  EXPECT_EQ(DecideAction(ahead, At(kNow)).replace_deadline, kNow + absl::Seconds(75));

  DecisionContext reserve = At(kNow);
  reserve.drain_reserve = absl::Seconds(100);
  EXPECT_EQ(DecideAction(Of(InterruptionKind::kSpotInterruption), reserve).replace_deadline,
            kNow + absl::Seconds(15));
}

TEST(DecideActionTest, SpotWithoutEventTimeCountsFromItsArrivalInTheQueue) {
  InterruptionMessage m = Of(InterruptionKind::kSpotInterruption);
  m.time = absl::InfinitePast();
  DecisionContext c = At(kNow);
  c.received = kNow - absl::Seconds(30);
  EXPECT_EQ(DecideAction(m, c).replace_deadline, kNow + absl::Seconds(45));
  c.received = absl::InfinitePast();
  EXPECT_EQ(DecideAction(m, c).replace_deadline, kNow + absl::Seconds(75));
}

TEST(DecideActionTest, ScheduledChangeReplacesFirstWithinTheWindow) {
  InterruptionMessage m = Of(InterruptionKind::kScheduledChange);
  // No start time: the bounded wait.
  Action a = DecideAction(m, At(kNow));
  EXPECT_TRUE(a.replace);
  EXPECT_TRUE(a.replace_cordon);
  EXPECT_TRUE(a.replace_delete_when_ready);
  EXPECT_TRUE(a.delete_node_claim);
  EXPECT_FALSE(a.mark_spot_unavailable);
  EXPECT_EQ(a.replace_deadline, kNow + absl::Minutes(10));
  EXPECT_EQ(a.event_reason, "InstanceUnhealthy");
  // A window days away: still the bounded wait.
  m.start_time = kNow + absl::Hours(72);
  EXPECT_EQ(DecideAction(m, At(kNow)).replace_deadline, kNow + absl::Minutes(10));
  // A window about to start: drained before it, leaving the drain reserve.
  m.start_time = kNow + absl::Minutes(4);
  EXPECT_EQ(DecideAction(m, At(kNow)).replace_deadline,
            kNow + absl::Minutes(4) - absl::Seconds(45));
  // Already started: at once.
  m.start_time = kNow - absl::Minutes(1);
  EXPECT_EQ(DecideAction(m, At(kNow)).replace_deadline, kNow);
}

TEST(DecideActionTest, StoppedTerminatedAndReservationInterruptionsDeleteAtOnce) {
  const struct {
    InterruptionKind kind;
    std::string reason;
  } cases[] = {
      {InterruptionKind::kInstanceStopped, "InstanceStopping"},
      {InterruptionKind::kInstanceTerminated, "InstanceTerminating"},
      {InterruptionKind::kCapacityReservationInterruption, "CapacityReservationInterrupted"},
  };
  for (const auto& c : cases) {
    const Action a = DecideAction(Of(c.kind), At(kNow, RebalancePolicy::kReplace));
    EXPECT_TRUE(a.delete_node_claim) << c.reason;
    EXPECT_FALSE(a.replace) << c.reason;
    EXPECT_FALSE(a.mark_spot_unavailable) << c.reason;
    EXPECT_FALSE(a.taint_rebalance) << c.reason;
    EXPECT_EQ(a.event_reason, c.reason);
  }
}

TEST(DecideActionTest, RebalanceFollowsTheNodePoolPolicy) {
  const InterruptionMessage m = Of(InterruptionKind::kRebalanceRecommendation);
  const Action plain = DecideAction(m, At(kNow));
  EXPECT_FALSE(plain.delete_node_claim);
  EXPECT_FALSE(plain.replace);
  EXPECT_FALSE(plain.mark_spot_unavailable);
  EXPECT_FALSE(plain.taint_rebalance);
  EXPECT_EQ(plain.event_reason, "SpotRebalanceRecommendation");

  const Action taint = DecideAction(m, At(kNow, RebalancePolicy::kTaint));
  EXPECT_TRUE(taint.taint_rebalance);
  EXPECT_FALSE(taint.replace);
  EXPECT_FALSE(taint.delete_node_claim);

  DecisionContext c = At(kNow, RebalancePolicy::kReplace);
  c.rebalance.drain_after = absl::Minutes(25);
  const Action replace = DecideAction(m, c);
  EXPECT_TRUE(replace.taint_rebalance);
  EXPECT_TRUE(replace.replace);
  EXPECT_FALSE(replace.replace_cordon);
  EXPECT_FALSE(replace.replace_delete_when_ready);
  EXPECT_EQ(replace.replace_deadline, kNow + absl::Minutes(25));
  EXPECT_FALSE(replace.delete_node_claim) << "a rebalance never deletes at once";
  EXPECT_FALSE(replace.mark_spot_unavailable);
}

TEST(DecideActionTest, UnknownAndInvalidDoNothing) {
  EXPECT_EQ(DecideAction(Of(InterruptionKind::kUnknown), At(kNow, RebalancePolicy::kReplace)),
            Action{});
  EXPECT_EQ(DecideAction(Of(InterruptionKind::kInvalid), At(kNow, RebalancePolicy::kReplace)),
            Action{});
}

TEST(DecideActionTest, ParsedSpotEventMapsToReplacement) {
  const InterruptionMessage m = ParseInterruptionMessage(R"({
    "version": "0", "id": "1", "detail-type": "EC2 Spot Instance Interruption Warning",
    "source": "aws.ec2", "account": "123456789012", "time": "2026-11-30T16:00:00Z",
    "region": "us-east-1", "resources": ["arn:aws:ec2:us-east-1b:instance/i-0abc"],
    "detail": {"instance-id": "i-0abc", "instance-action": "terminate"}})");
  ASSERT_EQ(m.kind, InterruptionKind::kSpotInterruption) << m.reason;
  const absl::Time event =
      absl::FromCivil(absl::CivilSecond(2026, 11, 30, 16, 0, 0), absl::UTCTimeZone());
  const Action a = DecideAction(m, At(event + absl::Seconds(2)));
  EXPECT_TRUE(a.replace);
  EXPECT_EQ(a.replace_deadline, event + absl::Seconds(75));
  EXPECT_EQ(DecideAction(ParseInterruptionMessage("not json"), At(kNow)), Action{});
}

TEST(ParseRebalanceSettingsTest, ReadsPolicyAndDrainAfter) {
  std::string problem = "stale";
  EXPECT_EQ(ParseRebalanceSettings({}, &problem), RebalanceSettings{});
  EXPECT_EQ(problem, "");
  EXPECT_EQ(ParseRebalanceSettings({{"dovetail.sh/rebalance-policy", ""}}, &problem).policy,
            RebalancePolicy::kNone);
  EXPECT_EQ(problem, "");
  EXPECT_EQ(ParseRebalanceSettings({{"dovetail.sh/rebalance-policy", "Taint"}}, &problem).policy,
            RebalancePolicy::kTaint);
  const RebalanceSettings replace =
      ParseRebalanceSettings({{"dovetail.sh/rebalance-policy", "Replace"},
                              {"dovetail.sh/rebalance-drain-after", "1h30m"},
                              {"other", "x"}},
                             &problem);
  EXPECT_EQ(replace.policy, RebalancePolicy::kReplace);
  EXPECT_EQ(replace.drain_after, absl::Minutes(90));
  EXPECT_EQ(problem, "");
  EXPECT_EQ(
      ParseRebalanceSettings({{"dovetail.sh/rebalance-policy", "Replace"}}, &problem).drain_after,
      kDefaultRebalanceDrainAfter);
  EXPECT_EQ(kDefaultRebalanceDrainAfter, absl::Minutes(10));
}

TEST(ParseRebalanceSettingsTest, InvalidValuesFallBackToDefaultsAndSayWhy) {
  std::string problem;
  const RebalanceSettings unknown =
      ParseRebalanceSettings({{"dovetail.sh/rebalance-policy", "replace"}}, &problem);
  EXPECT_EQ(unknown.policy, RebalancePolicy::kNone) << "values are case-sensitive";
  EXPECT_NE(problem.find("dovetail.sh/rebalance-policy \"replace\""), std::string::npos) << problem;

  for (const char* bad : {"ten minutes", "10", "-5m", ""}) {
    const RebalanceSettings s = ParseRebalanceSettings(
        {{"dovetail.sh/rebalance-policy", "Replace"}, {"dovetail.sh/rebalance-drain-after", bad}},
        &problem);
    EXPECT_EQ(s.policy, RebalancePolicy::kReplace) << bad;
    EXPECT_EQ(s.drain_after, kDefaultRebalanceDrainAfter) << bad;
    EXPECT_NE(problem.find("dovetail.sh/rebalance-drain-after"), std::string::npos) << bad;
    EXPECT_NE(problem.find("using 10m0s"), std::string::npos) << problem;
  }
}

TEST(InstanceIdFromProviderIdTest, ParsesAwsProviderIds) {
  EXPECT_EQ(InstanceIdFromProviderId("aws:///us-east-1a/i-0123456789abcdef0"),
            "i-0123456789abcdef0");
  EXPECT_EQ(InstanceIdFromProviderId("aws:///i-0abc"), "i-0abc");
  EXPECT_EQ(InstanceIdFromProviderId("kwok://node-1"), "");
  EXPECT_EQ(InstanceIdFromProviderId("aws:///us-east-1a/"), "");
  EXPECT_EQ(InstanceIdFromProviderId(""), "");
}

}  // namespace
}  // namespace dovetail::providers::aws::interruption
