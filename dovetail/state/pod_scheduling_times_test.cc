#include "dovetail/state/pod_scheduling_times.h"

#include "gtest/gtest.h"

namespace dovetail::state {
namespace {

TEST(PodSchedulingTimesTest, FirstAckDecisionAndSuccessAreKeptUntilForgotten) {
  PodSchedulingTimes times;
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  times.Ack({"ns/a", "ns/b"}, t0);
  times.Ack({"ns/a"}, t0 + absl::Seconds(5));  // the first ack stays
  EXPECT_EQ(times.AckTime("ns/a"), t0);

  // The first decision observes ack→now once per pod; a pod never acked observes nothing.
  std::vector<absl::Duration> first =
      times.Decide({"ns/a"}, {"ns/b", "ns/never-acked"}, t0 + absl::Seconds(2));
  EXPECT_EQ(first, (std::vector<absl::Duration>{absl::Seconds(2), absl::Seconds(2)}));
  EXPECT_EQ(times.SuccessTime("ns/a"), t0 + absl::Seconds(2));
  EXPECT_EQ(times.SuccessTime("ns/b"), std::nullopt);
  EXPECT_EQ(times.DecisionTime("ns/b"), t0 + absl::Seconds(2));

  // Later passes: no second observation; success is kept while placed, cleared when not.
  EXPECT_TRUE(times.Decide({"ns/a", "ns/b"}, {}, t0 + absl::Seconds(9)).empty());
  EXPECT_EQ(times.SuccessTime("ns/a"), t0 + absl::Seconds(2));
  EXPECT_EQ(times.SuccessTime("ns/b"), t0 + absl::Seconds(9));
  times.Decide({}, {"ns/a"}, t0 + absl::Seconds(10));
  EXPECT_EQ(times.SuccessTime("ns/a"), std::nullopt);

  times.Forget("ns/a");
  EXPECT_EQ(times.AckTime("ns/a"), std::nullopt);
  EXPECT_EQ(times.DecisionTime("ns/a"), std::nullopt);
}

}  // namespace
}  // namespace dovetail::state
