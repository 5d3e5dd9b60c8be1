#include "dovetail/state/pod_predicates.h"

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

}  // namespace
}  // namespace dovetail::state
