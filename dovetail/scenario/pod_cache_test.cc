#include "dovetail/scenario/pod_cache.h"

#include "dovetail/state/state_test_util.h"
#include "gtest/gtest.h"

namespace dovetail::scenario {
namespace {

using state::testing::PodJson;

TEST(PodCacheTest, OneConversionPerPodInfoUntilASweepFindsItUnused) {
  state::testing::Objects objects;
  const state::PodPtr v1 = objects.Pod(PodJson("default", "web", "n1", "250m"));
  const state::PodPtr v2 = objects.Pod(PodJson("default", "web", "n1", "500m"));
  PodCache cache;

  const SharedPod first = cache.Get(v1);
  EXPECT_EQ(cache.Get(v1), first);
  EXPECT_EQ(first->metadata.name, "web");
  const SharedPod other = cache.Get(v2);  // another version: another conversion
  EXPECT_NE(other, first);
  EXPECT_EQ(cache.size(), 2u);

  cache.Sweep();  // both were asked for since the last sweep
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Get(v2), other);
  cache.Sweep();  // v1 was not
  EXPECT_EQ(cache.size(), 1u);
  const SharedPod again = cache.Get(v1);
  EXPECT_NE(again, first);  // converted anew; the old one lives on while held
  EXPECT_EQ(first->metadata.name, "web");
  cache.Sweep();
  cache.Sweep();
  EXPECT_EQ(cache.size(), 0u);
}

TEST(PodCacheTest, WithoutACacheEveryCallConverts) {
  state::testing::Objects objects;
  const state::PodPtr info = objects.Pod(PodJson("default", "web", "n1", "250m"));
  const SharedPod a = ConvertPod(info, nullptr);
  const SharedPod b = ConvertPod(info, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(a->metadata.name, b->metadata.name);
}

}  // namespace
}  // namespace dovetail::scenario
