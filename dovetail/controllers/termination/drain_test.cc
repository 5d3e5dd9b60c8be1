#include "dovetail/controllers/termination/drain.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dovetail/apis/core/pod.h"
#include "dovetail/kube/objects.h"
#include "dovetail/kube/string_pool.h"
#include "dovetail/state/pod_predicates.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::controllers::termination {
namespace {

namespace core = apis::core;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);

// The interned strings of the test pods; it outlives them all.
kube::StringPool& Pool() {
  static kube::StringPool pool;
  return pool;
}

// A running pod with a name, as kube::DecodePod leaves it; chainable setters for what drain
// looks at.
class PodBuilder {
 public:
  explicit PodBuilder(const std::string& name) {
    pod_.meta.namespace_ = Pool().Intern("ns");
    pod_.meta.name = name;
    pod_.meta.uid = "uid-" + name;
    pod_.meta.creation = kNow - absl::Hours(1);
    pod_.scheduler_name = Pool().Intern("default-scheduler");
    pod_.priority_class_name = Pool().Intern("");
    pod_.phase = core::PodPhase::kRunning;
    pod_.start_time = kNow - absl::Hours(1);
  }
  PodBuilder& DaemonSet() { return Owner("apps/v1", "DaemonSet", "ds", "ds-uid"); }
  PodBuilder& Priority(std::string_view class_name) {
    pod_.priority_class_name = Pool().Intern(class_name);
    return *this;
  }
  PodBuilder& Annotation(std::string_view key, std::string value) {
    for (kube::KeyValue& kv : pod_.meta.annotations) {
      if (*kv.key == key) {
        kv.value = std::move(value);
        return *this;
      }
    }
    pod_.meta.annotations.push_back({.key = Pool().Intern(key), .value = std::move(value)});
    return *this;
  }
  PodBuilder& Phase(core::PodPhase phase) {
    pod_.phase = phase;
    return *this;
  }
  PodBuilder& Deleted(absl::Time at) {
    pod_.meta.deletion = at;
    return *this;
  }
  PodBuilder& Grace(int64_t seconds) {
    pod_.termination_grace_period_seconds = seconds;
    return *this;
  }
  // Stored as the decoder stores spec.tolerations (kube/objects.h CompactToleration).
  PodBuilder& Tolerate(const core::Toleration& toleration) {
    pod_.tolerations.push_back(
        {.key = Pool().Intern(toleration.key),
         .value = toleration.value,
         .op = static_cast<uint8_t>(toleration.op == core::TolerationOperator::kExists ? 1 : 0),
         .effect = static_cast<int8_t>(
             toleration.effect.has_value() ? static_cast<int>(*toleration.effect) : -1),
         .seconds = toleration.toleration_seconds});
    return *this;
  }
  PodBuilder& OwnedByNode() { return Owner("v1", "Node", "n", "node-uid"); }
  operator kube::PodInfo() const { return pod_; }  // NOLINT(google-explicit-constructor)

 private:
  PodBuilder& Owner(std::string_view api_version, std::string_view kind, std::string name,
                    std::string uid) {
    pod_.meta.owners.push_back({.api_version = Pool().Intern(api_version),
                                .kind = Pool().Intern(kind),
                                .name = std::move(name),
                                .uid = std::move(uid)});
    return *this;
  }

  kube::PodInfo pod_;
};

std::vector<std::string> Names(const std::vector<PodRef>& pods) {
  std::vector<std::string> out;
  out.reserve(pods.size());
  for (const PodRef& p : pods) out.push_back(p.name);
  return out;
}

std::vector<std::string> Names(const std::vector<ForceDelete>& pods) {
  std::vector<std::string> out;
  out.reserve(pods.size());
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
  std::vector<kube::PodInfo> pods = {
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
    std::erase_if(pods, [&](const kube::PodInfo& p) {
      for (const PodRef& e : plan.evict) {
        if (e.name == p.meta.name) return true;
      }
      return false;
    });
  }
  EXPECT_THAT(order, ElementsAre(ElementsAre("app-a", "app-b"), ElementsAre("ds"),
                                 ElementsAre("critical"), ElementsAre("critical-ds")));
}

TEST(DrainTest, ATerminatingPodHoldsItsTierWithoutBeingEvictedAgain) {
  const std::vector<kube::PodInfo> pods = {
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
  const std::vector<kube::PodInfo> pods = {
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
  const std::vector<kube::PodInfo> pods = {
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
  const std::vector<kube::PodInfo> pods = {
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
  const kube::PodInfo active = PodBuilder("a").Annotation("karpenter.sh/do-not-disrupt", "2h");
  const kube::PodInfo elapsed = PodBuilder("b").Annotation("karpenter.sh/do-not-disrupt", "30m");
  bool invalid = true;
  EXPECT_TRUE(state::HasActiveDoNotDisrupt(active, kNow, &invalid));
  EXPECT_FALSE(invalid);
  EXPECT_FALSE(state::HasActiveDoNotDisrupt(elapsed, kNow, &invalid));
  EXPECT_FALSE(invalid);
  EXPECT_FALSE(state::HasActiveDoNotDisrupt(PodBuilder("c"), kNow));
  EXPECT_FALSE(state::HasActiveDoNotDisrupt(
      PodBuilder("d").Annotation("karpenter.sh/do-not-disrupt", "false"), kNow, &invalid));
  EXPECT_TRUE(invalid);  // neither "true" nor a duration: not protected, reported
  const kube::PodInfo typo = PodBuilder("e").Annotation("karpenter.sh/do-not-disrupt", "ture");
  const DrainPlan plan = PlanDrain({active, elapsed, typo}, kNow, std::nullopt);
  EXPECT_THAT(Names(plan.evict), ElementsAre("b", "e"));
  EXPECT_THAT(Names(plan.do_not_disrupt), ElementsAre("a"));
  EXPECT_THAT(Names(plan.invalid_do_not_disrupt), ElementsAre("e"));
}

TEST(DrainTest, DeletesEachPodItsOwnGracePeriodBeforeTheDeadline) {
  const absl::Time deadline = kNow + absl::Seconds(60);
  const std::vector<kube::PodInfo> pods = {
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
  const std::vector<kube::PodInfo> pods = {
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
  const std::vector<kube::PodInfo> pods = {
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
