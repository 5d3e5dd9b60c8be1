#include "dovetail/controllers/launch/scheduler_metrics.h"

#include "dovetail/apis/v1/labels.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::controllers::launch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

apis::core::NodeSelectorTerm ZoneTerm(std::vector<std::string> zones) {
  apis::core::NodeSelectorTerm term;
  term.match_expressions.push_back({.key = std::string(apis::v1::kLabelTopologyZone),
                                    .op = apis::core::SelectorOperator::kIn,
                                    .values = std::move(zones)});
  return term;
}

TEST(EffectiveZoneTest, OneZoneFlexibleOrNone) {
  apis::core::Pod pod;
  EXPECT_EQ(EffectiveZone(pod), "flexible");
  pod.spec.node_selector[std::string(apis::v1::kLabelTopologyZone)] = "zone-a";
  EXPECT_EQ(EffectiveZone(pod), "zone-a");
  // The selector and the affinity's ORed terms intersect.
  pod.spec.affinity.emplace().node_affinity.emplace().required.emplace().terms = {
      ZoneTerm({"zone-b"}), ZoneTerm({"zone-c"})};
  EXPECT_EQ(EffectiveZone(pod), "none");
  pod.spec.node_selector.clear();
  EXPECT_EQ(EffectiveZone(pod), "flexible");
  pod.spec.affinity->node_affinity->required->terms = {ZoneTerm({"zone-b", "zone-c"}),
                                                       ZoneTerm({"zone-c"})};
  pod.spec.affinity->node_affinity->required->terms[0].match_expressions.push_back(
      ZoneTerm({"zone-c", "zone-d"}).match_expressions[0]);
  EXPECT_EQ(EffectiveZone(pod), "zone-c");
}

TEST(SchedulerMetricsTest, SimulationsQueueDepthUnfinishedWorkAndZones) {
  metrics::Registry registry;
  FakeClock clock;
  SchedulerMetrics m(&registry, "provisioner", clock);
  m.SolveStarted("id-1", 7);
  clock.Advance(absl::Seconds(3));
  std::string text = registry.Expose();
  EXPECT_THAT(text, HasSubstr("karpenter_scheduler_queue_depth{controller=\"provisioner\","
                              "scheduling_id=\"id-1\"} 7\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_scheduler_unfinished_work_seconds{controller="
                              "\"provisioner\",scheduling_id=\"id-1\"} 3\n"));
  m.SolveFinished("id-1", absl::Seconds(3), 2, {{"zone-a", 5}, {"flexible", 2}});
  text = registry.Expose();
  EXPECT_THAT(text, Not(HasSubstr("karpenter_scheduler_unfinished_work_seconds{")));
  EXPECT_THAT(text, HasSubstr("karpenter_scheduler_queue_depth{controller=\"provisioner\","
                              "scheduling_id=\"id-1\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_scheduler_unschedulable_pods_count{controller="
                              "\"provisioner\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_scheduler_pending_pods_by_effective_zone_count{"
                              "controller=\"provisioner\",zone=\"zone-a\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_scheduler_scheduling_duration_seconds_sum{controller="
                              "\"provisioner\"} 3\n"));
  // The next simulation drops the last one's depth and zones it no longer has.
  m.SolveStarted("id-2", 1);
  m.SolveFinished("id-2", absl::Seconds(1), 0, {{"flexible", 1}});
  text = registry.Expose();
  EXPECT_THAT(text, Not(HasSubstr("scheduling_id=\"id-1\"")));
  EXPECT_THAT(text, Not(HasSubstr("zone=\"zone-a\"")));
  m.SetIgnoredPods(4);
  m.ObserveDecisions({absl::Seconds(2), absl::Seconds(4)});
  text = registry.Expose();
  EXPECT_THAT(text, HasSubstr("karpenter_scheduler_ignored_pods_count 4\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_pods_scheduling_decision_duration_seconds_sum 6\n"));
}

}  // namespace
}  // namespace dovetail::controllers::launch
