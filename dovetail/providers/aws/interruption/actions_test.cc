#include "dovetail/providers/aws/interruption/actions.h"

#include <string>

#include "gtest/gtest.h"

namespace dovetail::providers::aws::interruption {
namespace {

InterruptionMessage Of(InterruptionKind kind) {
  InterruptionMessage m;
  m.kind = kind;
  m.instance_ids = {"i-0123456789abcdef0"};
  return m;
}

TEST(DecideActionTest, SpotInterruptionDeletesAndMarksSpotUnavailable) {
  const Action a = DecideAction(Of(InterruptionKind::kSpotInterruption), "");
  EXPECT_TRUE(a.delete_node_claim);
  EXPECT_TRUE(a.mark_spot_unavailable);
  EXPECT_FALSE(a.taint_rebalance);
  EXPECT_EQ(a.event_reason, "SpotInterrupted");
}

TEST(DecideActionTest, DeletingKindsDoNotMarkTheIceCache) {
  const struct {
    InterruptionKind kind;
    std::string reason;
  } cases[] = {
      {InterruptionKind::kScheduledChange, "InstanceUnhealthy"},
      {InterruptionKind::kInstanceStopped, "InstanceStopping"},
      {InterruptionKind::kInstanceTerminated, "InstanceTerminating"},
      {InterruptionKind::kCapacityReservationInterruption, "CapacityReservationInterrupted"},
  };
  for (const auto& c : cases) {
    const Action a = DecideAction(Of(c.kind), "Taint");
    EXPECT_TRUE(a.delete_node_claim) << c.reason;
    EXPECT_FALSE(a.mark_spot_unavailable) << c.reason;
    EXPECT_FALSE(a.taint_rebalance) << c.reason;
    EXPECT_EQ(a.event_reason, c.reason);
  }
}

TEST(DecideActionTest, RebalanceIsAnEventOnlyUnlessTheNodePoolOptsIn) {
  const Action plain = DecideAction(Of(InterruptionKind::kRebalanceRecommendation), "");
  EXPECT_FALSE(plain.delete_node_claim);
  EXPECT_FALSE(plain.mark_spot_unavailable);
  EXPECT_FALSE(plain.taint_rebalance);
  EXPECT_EQ(plain.event_reason, "SpotRebalanceRecommendation");
  const Action other = DecideAction(Of(InterruptionKind::kRebalanceRecommendation), "Something");
  EXPECT_FALSE(other.taint_rebalance);
  const Action taint = DecideAction(Of(InterruptionKind::kRebalanceRecommendation), "Taint");
  EXPECT_TRUE(taint.taint_rebalance);
  EXPECT_FALSE(taint.delete_node_claim);
}

TEST(DecideActionTest, UnknownAndInvalidDoNothing) {
  EXPECT_EQ(DecideAction(Of(InterruptionKind::kUnknown), "Taint"), Action{});
  EXPECT_EQ(DecideAction(Of(InterruptionKind::kInvalid), "Taint"), Action{});
}

TEST(DecideActionTest, ParsedSpotEventMapsToDeletion) {
  const InterruptionMessage m = ParseInterruptionMessage(R"({
    "version": "0", "id": "1", "detail-type": "EC2 Spot Instance Interruption Warning",
    "source": "aws.ec2", "account": "123456789012", "time": "2026-11-30T16:00:00Z",
    "region": "us-east-1", "resources": ["arn:aws:ec2:us-east-1b:instance/i-0abc"],
    "detail": {"instance-id": "i-0abc", "instance-action": "terminate"}})");
  ASSERT_EQ(m.kind, InterruptionKind::kSpotInterruption) << m.reason;
  EXPECT_TRUE(DecideAction(m, "").delete_node_claim);
  EXPECT_EQ(DecideAction(ParseInterruptionMessage("not json"), ""), Action{});
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
