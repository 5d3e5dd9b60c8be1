#include "dovetail/controllers/disruption/involuntary_record.h"

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::controllers::disruption {
namespace {

using ::testing::HasSubstr;

absl::Time At(const char* rfc3339) {
  absl::Time t;
  std::string error;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &error)) << error;
  return t;
}

ReplaceRequest SpotWarning() {
  ReplaceRequest r;
  r.node_claim = "default-abc12";
  r.reason = "SpotInterrupted";
  r.metric_reason = "spot_interrupted";
  r.deadline = At("2026-12-06T10:02:15Z");
  r.delete_when_ready = true;
  r.cordon = true;
  return r;
}

TEST(InvoluntaryRecordTest, RoundTripsEveryField) {
  const ReplaceRequest spot = SpotWarning();
  const std::string text = EncodeInvoluntaryRecord(spot);
  EXPECT_EQ(text, R"({"reason":"SpotInterrupted","metricReason":"spot_interrupted",)"
                  R"("deadline":"2026-12-06T10:02:15Z","deleteWhenReady":true,"cordon":true})");
  absl::StatusOr<ReplaceRequest> back = DecodeInvoluntaryRecord("default-abc12", text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->node_claim, "default-abc12");
  EXPECT_EQ(back->reason, spot.reason);
  EXPECT_EQ(back->metric_reason, spot.metric_reason);
  EXPECT_EQ(back->deadline, spot.deadline);
  EXPECT_TRUE(back->delete_when_ready);
  EXPECT_TRUE(back->cordon);

  ReplaceRequest rebalance;
  rebalance.reason = "SpotRebalanceRecommendation";
  rebalance.delete_when_ready = false;
  rebalance.cordon = false;
  back = DecodeInvoluntaryRecord("n", EncodeInvoluntaryRecord(rebalance));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->deadline, absl::InfiniteFuture()) << "no deadline stays none";
  EXPECT_FALSE(back->delete_when_ready);
  EXPECT_FALSE(back->cordon);
}

TEST(InvoluntaryRecordTest, DeadlinesRoundDownToWholeSeconds) {
  ReplaceRequest r = SpotWarning();
  r.deadline += absl::Milliseconds(999);
  absl::StatusOr<ReplaceRequest> back = DecodeInvoluntaryRecord("n", EncodeInvoluntaryRecord(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->deadline, At("2026-12-06T10:02:15Z"));
}

TEST(InvoluntaryRecordTest, GarbageIsAnErrorNamingTheNodeClaim) {
  for (const char* text : {"", "{", "[]", "7", R"({"reason":7})", R"({"cordon":"yes"})",
                           R"({"deadline":"tomorrow"})", R"({"deadline":12})"}) {
    absl::StatusOr<ReplaceRequest> r = DecodeInvoluntaryRecord("default-x", text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(r.status().message(), HasSubstr("nodeclaim default-x")) << text;
  }
  // Unknown fields (a newer writer) are ignored.
  EXPECT_TRUE(DecodeInvoluntaryRecord("n", R"({"reason":"X","future":{"a":1}})").ok());
}

TEST(InvoluntaryRecordTest, MergeKeepsTheStricterOfEach) {
  ReplaceRequest rebalance;
  rebalance.reason = "SpotRebalanceRecommendation";
  rebalance.deadline = At("2026-12-06T10:10:00Z");
  rebalance.delete_when_ready = false;
  rebalance.cordon = false;
  const ReplaceRequest merged = MergeInvoluntary(rebalance, SpotWarning());
  EXPECT_EQ(merged.reason, "SpotInterrupted");
  EXPECT_EQ(merged.deadline, At("2026-12-06T10:02:15Z"));
  EXPECT_TRUE(merged.delete_when_ready);
  EXPECT_TRUE(merged.cordon);
  // A later, laxer request never relaxes what was recorded.
  const ReplaceRequest again = MergeInvoluntary(SpotWarning(), rebalance);
  EXPECT_EQ(again.deadline, At("2026-12-06T10:02:15Z"));
  EXPECT_TRUE(again.delete_when_ready);
  EXPECT_TRUE(again.cordon);
}

TEST(InvoluntaryRecordTest, ResumeReplacesWhileTimeIsLeftElseDeletes) {
  const ReplaceRequest spot = SpotWarning();
  EXPECT_EQ(DecideResume(spot, spot.deadline - absl::Seconds(30)), ResumeAction::kReplace);
  EXPECT_EQ(DecideResume(spot, spot.deadline), ResumeAction::kDelete);
  EXPECT_EQ(DecideResume(spot, spot.deadline + absl::Hours(1)), ResumeAction::kDelete);
  ReplaceRequest none;
  EXPECT_EQ(DecideResume(none, At("2030-01-01T00:00:00Z")), ResumeAction::kReplace);
}

}  // namespace
}  // namespace dovetail::controllers::disruption
