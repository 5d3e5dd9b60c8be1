#include "dovetail/controllers/termination/drain.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::controllers::termination {
namespace {

namespace core = apis::core;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);

// A running pod with a name; chainable setters for what drain looks at.
class PodBuilder {
 public:
  explicit PodBuilder(std::string name) {
    pod_.metadata.namespace_ = "ns";
    pod_.metadata.name = name;
    pod_.metadata.uid = "uid-" + name;
    pod_.metadata.creation_timestamp = kNow - absl::Hours(1);
    pod_.status.phase = core::PodPhase::kRunning;
    pod_.status.start_time = kNow - absl::Hours(1);
  }
  PodBuilder& DaemonSet() {
    pod_.metadata.owner_references.push_back(
        {.api_version = "apps/v1", .kind = "DaemonSet", .name = "ds", .uid = "ds-uid"});
    return *this;
  }
  PodBuilder& Priority(std::string class_name) {
    pod_.spec.priority_class_name = std::move(class_name);
    return *this;
  }
  PodBuilder& Annotation(std::string key, std::string value) {
    pod_.metadata.annotations[std::move(key)] = std::move(value);
    return *this;
  }
  PodBuilder& Phase(core::PodPhase phase) {
    pod_.status.phase = phase;
    return *this;
  }
  PodBuilder& Deleted(absl::Time at) {
    pod_.metadata.deletion_timestamp = at;
    return *this;
  }
  PodBuilder& Grace(int64_t seconds) {
    pod_.spec.termination_grace_period_seconds = seconds;
    return *this;
  }
  PodBuilder& Tolerate(core::Toleration toleration) {
    pod_.spec.tolerations.push_back(std::move(toleration));
    return *this;
  }
  PodBuilder& OwnedByNode() {
    pod_.metadata.owner_references.push_back(
        {.api_version = "v1", .kind = "Node", .name = "n", .uid = "node-uid"});
    return *this;
  }
  operator core::Pod() const { return pod_; }  // NOLINT(google-explicit-constructor)

 private:
  core::Pod pod_;
};

std::vector<std::string> Names(const std::vector<PodRef>& pods) {
  std::vector<std::string> out;
  for (const PodRef& p : pods) out.push_back(p.name);
  return out;
}

std::vector<std::string> Names(const std::vector<ForceDelete>& pods) {
  std::vector<std::string> out;
  for (const ForceDelete& p : pods) out.push_back(p.pod.name);
  return out;
}

TEST(DrainTest, ClassifiesTiersByPriorityClassAndDaemonSetOwner) {
  EXPECT_EQ(TierOf(PodBuilder("a")), DrainTier::kNonCritical);
  EXPECT_EQ(TierOf(PodBuilder("a").DaemonSet()), DrainTier::kNonCriticalDaemonSet);
  EXPECT_EQ(TierOf(PodBuilder("a").Priority("system-cluster-critical")), DrainTier::kCritical);
  EXPECT_EQ(TierOf(PodBuilder("a").Priority("system-node-critical").DaemonSet()),
            DrainTier::kCriticalDaemonSet);
  // Only the two system classes are critical, whatever a user class is called.
  EXPECT_EQ(TierOf(PodBuilder("a").Priority("high-priority")), DrainTier::kNonCritical);
}

TEST(DrainTest, EvictsTiersInUpstreamOrderOneTierAtATime) {
  std::vector<core::Pod> pods = {
      PodBuilder("critical-ds").Priority("system-node-critical").DaemonSet(),
      PodBuilder("critical").Priority("system-cluster-critical"),
      PodBuilder("ds").DaemonSet(),
      PodBuilder("app-b"),
      PodBuilder("app-a"),
  };
  std::vector<std::vector<std::string>> order;
  while (true) {
    const DrainPlan plan = PlanDrain(pods, kNow, std::nullopt);
    if (plan.drained) break;
    ASSERT_FALSE(plan.evict.empty());
    EXPECT_EQ(plan.waiting, static_cast<int>(pods.size()));
    order.push_back(Names(plan.evict));
    // The evicted pods go away.
    std::erase_if(pods, [&](const core::Pod& p) {
      for (const PodRef& e : plan.evict) {
        if (e.name == p.metadata.name) return true;
      }
      return false;
    });
  }
  EXPECT_THAT(order, ElementsAre(ElementsAre("app-a", "app-b"), ElementsAre("ds"),
                                 ElementsAre("critical"), ElementsAre("critical-ds")));
}

TEST(DrainTest, ATerminatingPodHoldsItsTierWithoutBeingEvictedAgain) {
  const std::vector<core::Pod> pods = {
      PodBuilder("leaving").Deleted(kNow + absl::Seconds(20)),
      PodBuilder("ds").DaemonSet(),
  };
  const DrainPlan plan = PlanDrain(pods, kNow, std::nullopt);
  EXPECT_FALSE(plan.drained);
  EXPECT_EQ(plan.tier, DrainTier::kNonCritical);
  EXPECT_THAT(plan.evict, IsEmpty());
  EXPECT_EQ(plan.waiting, 2);
}

TEST(DrainTest, SkipsStaticTerminalTolerantAndStuckPods) {
  const std::vector<core::Pod> pods = {
      PodBuilder("mirror").Annotation("kubernetes.io/config.mirror", "abc"),
      PodBuilder("static").OwnedByNode(),
      PodBuilder("done").Phase(core::PodPhase::kSucceeded),
      PodBuilder("failed").Phase(core::PodPhase::kFailed),
      PodBuilder("tolerates")
          .Tolerate({.key = "karpenter.sh/disrupted", .op = core::TolerationOperator::kExists}),
      PodBuilder("tolerates-all").Tolerate({.op = core::TolerationOperator::kExists}),
      PodBuilder("stuck").Deleted(kNow - absl::Minutes(1) - absl::Seconds(1)),
  };
  const DrainPlan plan = PlanDrain(pods, kNow, std::nullopt);
  EXPECT_TRUE(plan.drained);
  EXPECT_EQ(plan.waiting, 0);
  EXPECT_THAT(plan.evict, IsEmpty());
}

TEST(DrainTest, TolerationOfAnotherEffectOrKeyDoesNotSkip) {
  const std::vector<core::Pod> pods = {
      PodBuilder("noexecute")
          .Tolerate({.key = "karpenter.sh/disrupted",
                     .op = core::TolerationOperator::kExists,
                     .effect = core::TaintEffect::kNoExecute}),
      PodBuilder("other").Tolerate(
          {.key = "example.com/x", .op = core::TolerationOperator::kExists}),
      PodBuilder("recently-deleted").Deleted(kNow - absl::Seconds(59)),
  };
  const DrainPlan plan = PlanDrain(pods, kNow, std::nullopt);
  EXPECT_FALSE(plan.drained);
  EXPECT_EQ(plan.waiting, 3);
  EXPECT_THAT(Names(plan.evict), ElementsAre("noexecute", "other"));
}

TEST(DrainTest, DoNotDisruptBlocksEvictionWithoutADeadline) {
  const std::vector<core::Pod> pods = {
      PodBuilder("dnd").Annotation("karpenter.sh/do-not-disrupt", "true"),
      PodBuilder("app"),
      PodBuilder("ds").DaemonSet(),
  };
  const DrainPlan plan = PlanDrain(pods, kNow, std::nullopt);
  EXPECT_THAT(Names(plan.evict), ElementsAre("app"));
  EXPECT_THAT(Names(plan.do_not_disrupt), ElementsAre("dnd"));
  EXPECT_THAT(plan.force_delete, IsEmpty());
  // Alone, it still blocks the next tiers, forever.
  const DrainPlan later = PlanDrain({pods[0], pods[2]}, kNow + absl::Hours(100), std::nullopt);
  EXPECT_THAT(later.evict, IsEmpty());
  EXPECT_EQ(later.tier, DrainTier::kNonCritical);
}

TEST(DrainTest, DoNotDisruptDurationCountsFromPodStart) {
  const core::Pod active = PodBuilder("a").Annotation("karpenter.sh/do-not-disrupt", "2h");
  const core::Pod elapsed = PodBuilder("b").Annotation("karpenter.sh/do-not-disrupt", "30m");
  bool invalid = true;
  EXPECT_TRUE(HasActiveDoNotDisrupt(active, kNow, &invalid));
  EXPECT_FALSE(invalid);
  EXPECT_FALSE(HasActiveDoNotDisrupt(elapsed, kNow, &invalid));
  EXPECT_FALSE(invalid);
  EXPECT_FALSE(HasActiveDoNotDisrupt(PodBuilder("c"), kNow));
  EXPECT_FALSE(HasActiveDoNotDisrupt(
      PodBuilder("d").Annotation("karpenter.sh/do-not-disrupt", "false"), kNow, &invalid));
  EXPECT_TRUE(invalid);  // neither "true" nor a duration: not protected, reported
  const core::Pod typo = PodBuilder("e").Annotation("karpenter.sh/do-not-disrupt", "ture");
  const DrainPlan plan = PlanDrain({active, elapsed, typo}, kNow, std::nullopt);
  EXPECT_THAT(Names(plan.evict), ElementsAre("b", "e"));
  EXPECT_THAT(Names(plan.do_not_disrupt), ElementsAre("a"));
  EXPECT_THAT(Names(plan.invalid_do_not_disrupt), ElementsAre("e"));
}

TEST(DrainTest, DeletesEachPodItsOwnGracePeriodBeforeTheDeadline) {
  const absl::Time deadline = kNow + absl::Seconds(60);
  const std::vector<core::Pod> pods = {
      PodBuilder("dnd-short").Annotation("karpenter.sh/do-not-disrupt", "true").Grace(10),
      PodBuilder("dnd-long").Annotation("karpenter.sh/do-not-disrupt", "true").Grace(300),
      PodBuilder("dnd-default").Annotation("karpenter.sh/do-not-disrupt", "true"),  // 30 s
  };
  DrainPlan plan = PlanDrain(pods, kNow, deadline);
  // Its grace exceeds the time left: deleted now, with the time left.
  ASSERT_THAT(Names(plan.force_delete), ElementsAre("dnd-long"));
  EXPECT_EQ(plan.force_delete[0].grace_seconds, 60);
  EXPECT_THAT(Names(plan.do_not_disrupt), ElementsAre("dnd-default", "dnd-short"));

  plan = PlanDrain(pods, deadline - absl::Seconds(29), deadline);
  EXPECT_THAT(Names(plan.force_delete), ElementsAre("dnd-default", "dnd-long"));
  plan = PlanDrain(pods, deadline - absl::Seconds(9), deadline);
  EXPECT_THAT(Names(plan.force_delete), ElementsAre("dnd-default", "dnd-long", "dnd-short"));
  EXPECT_EQ(plan.force_delete[2].grace_seconds, 9);
  EXPECT_THAT(plan.evict, IsEmpty());
  EXPECT_THAT(plan.do_not_disrupt, IsEmpty());
  // Past the deadline the grace is the minimum, one second.
  plan = PlanDrain(pods, deadline + absl::Seconds(5), deadline);
  EXPECT_EQ(plan.force_delete[0].grace_seconds, 1);
}

TEST(DrainTest, PastDeadlinePodsAreNotGatedBehindEarlierTiers) {
  const absl::Time deadline = kNow + absl::Seconds(5);
  const std::vector<core::Pod> pods = {
      PodBuilder("app").Annotation("karpenter.sh/do-not-disrupt", "true").Grace(1),
      PodBuilder("critical-ds").Priority("system-node-critical").DaemonSet().Grace(30),
  };
  const DrainPlan plan = PlanDrain(pods, kNow, deadline);
  EXPECT_THAT(Names(plan.force_delete), ElementsAre("critical-ds"));
  EXPECT_EQ(plan.tier, DrainTier::kNonCritical);
  EXPECT_THAT(Names(plan.do_not_disrupt), ElementsAre("app"));
}

TEST(DrainTest, ATerminatingPodIsDeletedAgainWhenItsGraceOutlastsTheDeadline) {
  const absl::Time deadline = kNow + absl::Seconds(10);
  const std::vector<core::Pod> pods = {
      PodBuilder("slow").Deleted(kNow + absl::Seconds(100)).Grace(120),
      PodBuilder("fast").Deleted(kNow + absl::Seconds(5)).Grace(120),
  };
  const DrainPlan plan = PlanDrain(pods, kNow, deadline);
  ASSERT_THAT(Names(plan.force_delete), ElementsAre("slow"));
  EXPECT_EQ(plan.force_delete[0].grace_seconds, 10);
  EXPECT_THAT(plan.evict, IsEmpty());
}

TEST(DrainTest, WithoutADeadlineNothingIsForceDeleted) {
  EXPECT_FALSE(PodDeleteTime(PodBuilder("a"), std::nullopt).has_value());
  EXPECT_FALSE(NeedsForceDelete(PodBuilder("a").Grace(100000), kNow, std::nullopt));
  EXPECT_EQ(ForceDeleteGraceSeconds(kNow, kNow - absl::Hours(1)), 1);
  EXPECT_EQ(ForceDeleteGraceSeconds(kNow, kNow + absl::Milliseconds(2500)), 2);
}

}  // namespace
}  // namespace dovetail::controllers::termination
