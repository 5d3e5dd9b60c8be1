#include "dovetail/kube/pod_constraints.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::kube {
namespace {

constexpr char kAntiAffinity[] = R"({"podAntiAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname",
      "labelSelector": {"matchLabels": {"app": "web"}}}]}})";
constexpr char kSpread[] = R"([{"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone",
    "whenUnsatisfiable": "ScheduleAnyway"}])";

TEST(PodConstraintPoolTest, SharesOneValuePerText) {
  PodConstraintPool pool;
  absl::StatusOr<AffinityPtr> a = pool.Affinity(kAntiAffinity);
  absl::StatusOr<AffinityPtr> b = pool.Affinity(kAntiAffinity);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*a, *b);
  EXPECT_EQ((*a)->pod_anti_affinity->required[0].topology_key, "kubernetes.io/hostname");

  absl::StatusOr<AffinityPtr> other = pool.Affinity(R"({"podAffinity": {}})");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(*other, *a);

  absl::StatusOr<TopologySpreadPtr> spread = pool.TopologySpread(kSpread);
  ASSERT_TRUE(spread.ok()) << spread.status();
  ASSERT_EQ((*spread)->size(), 1u);
  EXPECT_EQ((**spread)[0].max_skew, 2);
  EXPECT_EQ((**spread)[0].when_unsatisfiable,
            apis::core::UnsatisfiableConstraintAction::kScheduleAnyway);
  EXPECT_EQ(pool.size(), 3u);
}

// A value lives as long as a pod holds it; the index forgets the texts nobody holds as it grows, so
// churning pods with ever new texts do not grow it without bound.
TEST(PodConstraintPoolTest, ForgetsValuesNoPodHolds) {
  PodConstraintPool pool;
  const AffinityPtr held = *pool.Affinity(kAntiAffinity);
  for (int i = 0; i < 1000; ++i) {
    const std::string text =
        R"({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": )" +
        std::to_string(i % 100 + 1) + R"(, "preference": {"matchExpressions": [{"key": "k)" +
        std::to_string(i) + R"(", "operator": "Exists"}]}}]}})";
    ASSERT_TRUE(pool.Affinity(text).ok());  // dropped at once
  }
  EXPECT_LT(pool.size(), 200u);
  EXPECT_EQ(*pool.Affinity(kAntiAffinity), held);  // still held, still shared
}

TEST(PodConstraintPoolTest, RefusesMalformedOrMistypedText) {
  PodConstraintPool pool;
  absl::StatusOr<AffinityPtr> malformed = pool.Affinity("{");
  EXPECT_EQ(malformed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(malformed.status().message(), ::testing::HasSubstr("spec.affinity"));
  absl::StatusOr<TopologySpreadPtr> mistyped = pool.TopologySpread(R"([{"maxSkew": "one"}])");
  EXPECT_EQ(mistyped.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mistyped.status().message(), ::testing::HasSubstr("spec.topologySpreadConstraints"));
  EXPECT_EQ(pool.size(), 0u);
}

TEST(PodConstraintPoolTest, DecodesWithoutAPool) {
  absl::StatusOr<AffinityPtr> a = DecodeAffinity(kAntiAffinity);
  absl::StatusOr<AffinityPtr> b = DecodeAffinity(kAntiAffinity);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);  // each its own
  EXPECT_EQ((**a).pod_anti_affinity->required.size(), 1u);
}

}  // namespace
}  // namespace dovetail::kube
