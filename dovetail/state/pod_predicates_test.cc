#include "dovetail/state/pod_predicates.h"

#include <string>

#include "dovetail/state/state_test_util.h"
#include "gtest/gtest.h"

namespace dovetail::state {
namespace {

using testing::PodJson;

TEST(PodPredicatesTest, TerminalIsSucceededOrFailed) {
  testing::Objects objects;
  nlohmann::json pod = PodJson("ns", "p", "node-a", "1");
  EXPECT_FALSE(IsTerminal(*objects.Pod(pod)));
  for (const char* phase : {"Succeeded", "Failed"}) {
    pod["status"]["phase"] = phase;
    EXPECT_TRUE(IsTerminal(*objects.Pod(pod))) << phase;
  }
}

TEST(PodPredicatesTest, OwnedByAnyOwnerOfTheKind) {
  testing::Objects objects;
  nlohmann::json pod = PodJson("ns", "p", "node-a", "1");
  pod["metadata"]["ownerReferences"] = {
      {{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "r"}, {"uid", "u1"}},
      {{"apiVersion", "apps/v1"}, {"kind", "DaemonSet"}, {"name", "d"}, {"uid", "u2"}}};
  auto info = objects.Pod(pod);
  EXPECT_TRUE(OwnedBy(*info, "DaemonSet"));
  EXPECT_TRUE(OwnedBy(*info, "ReplicaSet"));
  EXPECT_FALSE(OwnedBy(*info, "Node"));
}

TEST(PodPredicatesTest, DoNotDisruptCountsFromTheStartElseTheCreation) {
  testing::Objects objects;
  nlohmann::json pod = PodJson("ns", "p", "node-a", "1");
  pod["metadata"]["annotations"] = {{"karpenter.sh/do-not-disrupt", "10m"}};
  pod["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z";
  const absl::Time created =
      absl::FromCivil(absl::CivilSecond(2026, 1, 1, 0, 0, 0), absl::UTCTimeZone());
  EXPECT_TRUE(HasActiveDoNotDisrupt(*objects.Pod(pod), created + absl::Minutes(9)));
  EXPECT_FALSE(HasActiveDoNotDisrupt(*objects.Pod(pod), created + absl::Minutes(11)));
  pod["status"]["startTime"] = "2026-01-01T00:05:00Z";
  EXPECT_TRUE(HasActiveDoNotDisrupt(*objects.Pod(pod), created + absl::Minutes(11)));

  pod["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] = "soon";
  bool invalid = false;
  EXPECT_FALSE(HasActiveDoNotDisrupt(*objects.Pod(pod), created, &invalid));
  EXPECT_TRUE(invalid);
}

const absl::Time kT0 = absl::FromCivil(absl::CivilSecond(2026, 1, 1, 0, 0, 0), absl::UTCTimeZone());

nlohmann::json Owner(const std::string& api_version, const std::string& kind) {
  nlohmann::json owner = {{"kind", kind}, {"name", "o"}, {"uid", "u-" + kind}};
  if (!api_version.empty()) owner["apiVersion"] = api_version;
  return owner;
}

nlohmann::json Toleration(const std::string& key, const std::string& op,
                          const std::string& effect = "", const std::string& value = "") {
  nlohmann::json t = {{"operator", op}};
  if (!key.empty()) t["key"] = key;
  if (!effect.empty()) t["effect"] = effect;
  if (!value.empty()) t["value"] = value;
  return t;
}

TEST(PodPredicatesTest, TerminatingIsADeletionTimestamp) {
  testing::Objects objects;
  nlohmann::json pod = PodJson("ns", "p", "node-a", "1");
  EXPECT_FALSE(IsTerminating(*objects.Pod(pod)));
  pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  EXPECT_TRUE(IsTerminating(*objects.Pod(pod)));
}

TEST(PodPredicatesTest, DaemonSetOwnerNeedsTheAppsGroupOrNoApiVersion) {
  testing::Objects objects;
  nlohmann::json pod = PodJson("ns", "p", "node-a", "1");
  EXPECT_FALSE(IsOwnedByDaemonSet(*objects.Pod(pod)));
  pod["metadata"]["ownerReferences"] = {Owner("apps/v1", "DaemonSet")};
  EXPECT_TRUE(IsOwnedByDaemonSet(*objects.Pod(pod)));
  pod["metadata"]["ownerReferences"] = {Owner("example.com/v1", "DaemonSet")};
  EXPECT_FALSE(IsOwnedByDaemonSet(*objects.Pod(pod)));
  EXPECT_TRUE(OwnedBy(*objects.Pod(pod), "DaemonSet"));  // by kind alone
  pod["metadata"]["ownerReferences"] = {Owner("", "DaemonSet")};
  EXPECT_TRUE(IsOwnedByDaemonSet(*objects.Pod(pod)));
  pod["metadata"]["ownerReferences"] = {Owner("apps/v1", "ReplicaSet")};
  EXPECT_FALSE(IsOwnedByDaemonSet(*objects.Pod(pod)));

  // Hand-built, its apiVersion left null.
  kube::StringPool pool;
  kube::PodInfo built;
  built.meta.owners.push_back({.kind = pool.Intern("DaemonSet")});
  EXPECT_TRUE(IsOwnedByDaemonSet(built));
}

TEST(PodPredicatesTest, StaticIsAMirrorPodOrOwnedByItsNode) {
  testing::Objects objects;
  nlohmann::json pod = PodJson("ns", "p", "node-a", "1");
  EXPECT_FALSE(IsMirrorPod(*objects.Pod(pod)));
  EXPECT_FALSE(IsStatic(*objects.Pod(pod)));

  nlohmann::json mirror = pod;
  mirror["metadata"]["annotations"] = {{"kubernetes.io/config.mirror", "abc"}};
  EXPECT_TRUE(IsMirrorPod(*objects.Pod(mirror)));
  EXPECT_TRUE(IsStatic(*objects.Pod(mirror)));

  nlohmann::json owned = pod;
  owned["metadata"]["ownerReferences"] = {Owner("v1", "Node")};
  EXPECT_TRUE(IsOwnedByNode(*objects.Pod(owned)));
  EXPECT_FALSE(IsMirrorPod(*objects.Pod(owned)));
  EXPECT_TRUE(IsStatic(*objects.Pod(owned)));
  owned["metadata"]["ownerReferences"] = {Owner("example.com/v1", "Node")};
  EXPECT_FALSE(IsStatic(*objects.Pod(owned)));
}

TEST(PodPredicatesTest, CriticalIsASystemPriorityClass) {
  testing::Objects objects;
  nlohmann::json pod = PodJson("ns", "p", "node-a", "1");
  EXPECT_FALSE(IsCritical(*objects.Pod(pod)));
  for (const char* name : {"system-cluster-critical", "system-node-critical"}) {
    pod["spec"]["priorityClassName"] = name;
    EXPECT_TRUE(IsCritical(*objects.Pod(pod))) << name;
  }
  pod["spec"]["priorityClassName"] = "high-priority";
  EXPECT_FALSE(IsCritical(*objects.Pod(pod)));
  EXPECT_FALSE(IsCritical(kube::PodInfo{}));  // never decoded: no class
}

TEST(PodPredicatesTest, ToleratesTheDisruptedTaintAsKubernetesMatchesIt) {
  testing::Objects objects;
  nlohmann::json pod = PodJson("ns", "p", "node-a", "1");
  EXPECT_FALSE(ToleratesDisruptedTaint(*objects.Pod(pod)));
  const std::string key = "karpenter.sh/disrupted";
  for (const nlohmann::json& t :
       {Toleration(key, "Exists"), Toleration(key, "Exists", "NoSchedule"),
        Toleration(key, "Equal"), Toleration("", "Exists"),
        Toleration("", "Exists", "NoSchedule")}) {
    pod["spec"]["tolerations"] = {t};
    EXPECT_TRUE(ToleratesDisruptedTaint(*objects.Pod(pod))) << t.dump();
  }
  for (const nlohmann::json& t :
       {Toleration(key, "Exists", "NoExecute"), Toleration(key, "Equal", "", "x"),
        Toleration("example.com/x", "Exists"), Toleration("", "Exists", "PreferNoSchedule")}) {
    pod["spec"]["tolerations"] = {t};
    EXPECT_FALSE(ToleratesDisruptedTaint(*objects.Pod(pod))) << t.dump();
  }
}

TEST(PodPredicatesTest, StuckTerminatingOnlyPastOneMinute) {
  testing::Objects objects;
  nlohmann::json pod = PodJson("ns", "p", "node-a", "1");
  EXPECT_FALSE(IsStuckTerminating(*objects.Pod(pod), kT0 + absl::Hours(1)));
  pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  auto deleted = objects.Pod(pod);
  EXPECT_FALSE(IsStuckTerminating(*deleted, kT0 + absl::Seconds(59)));
  EXPECT_FALSE(IsStuckTerminating(*deleted, kT0 + kStuckTerminatingAfter));
  EXPECT_TRUE(IsStuckTerminating(*deleted, kT0 + kStuckTerminatingAfter + absl::Nanoseconds(1)));
  EXPECT_TRUE(IsStuckTerminating(*deleted, kT0 + absl::Minutes(1) + absl::Seconds(1)));
}

TEST(PodPredicatesTest, DrainableWaitingEvictionAndEvictable) {
  testing::Objects objects;
  const absl::Time now = kT0;
  const nlohmann::json base = PodJson("ns", "p", "node-a", "1");
  auto running = objects.Pod(base);
  EXPECT_TRUE(IsDrainable(*running, now));
  EXPECT_TRUE(IsWaitingEviction(*running, now));
  EXPECT_TRUE(IsEvictable(*running));

  nlohmann::json json = base;
  json["status"]["phase"] = "Succeeded";
  auto done = objects.Pod(json);
  EXPECT_TRUE(IsDrainable(*done, now));
  EXPECT_FALSE(IsWaitingEviction(*done, now));
  EXPECT_FALSE(IsEvictable(*done));

  json = base;
  json["metadata"]["deletionTimestamp"] = "2025-12-31T23:59:30Z";  // 30 s ago
  auto leaving = objects.Pod(json);
  EXPECT_TRUE(IsWaitingEviction(*leaving, now));
  EXPECT_FALSE(IsEvictable(*leaving));
  json["metadata"]["deletionTimestamp"] = "2025-12-31T23:58:00Z";  // 2 min ago: stuck
  auto stuck = objects.Pod(json);
  EXPECT_FALSE(IsDrainable(*stuck, now));
  EXPECT_FALSE(IsWaitingEviction(*stuck, now));
  EXPECT_FALSE(IsEvictable(*stuck));

  // Left on the node (tolerates the disrupted taint, static) or evicted with the others.
  struct Case {
    const char* what;
    nlohmann::json json;
    bool drained;
  };
  nlohmann::json tolerant = base;
  tolerant["spec"]["tolerations"] = {Toleration("karpenter.sh/disrupted", "Exists")};
  nlohmann::json owned_by_node = base;
  owned_by_node["metadata"]["ownerReferences"] = {Owner("v1", "Node")};
  nlohmann::json daemon = base;
  daemon["metadata"]["ownerReferences"] = {Owner("apps/v1", "DaemonSet")};
  for (const Case& c : {Case{"tolerant", tolerant, false}, Case{"node's", owned_by_node, false},
                        Case{"daemon", daemon, true}}) {
    auto pod = objects.Pod(c.json);
    EXPECT_EQ(IsDrainable(*pod, now), c.drained) << c.what;
    EXPECT_EQ(IsWaitingEviction(*pod, now), c.drained) << c.what;
    EXPECT_EQ(IsEvictable(*pod), c.drained) << c.what;
  }
}

}  // namespace
}  // namespace dovetail::state
