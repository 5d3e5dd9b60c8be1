#include "dovetail/apis/core/pod_requests.h"

#include <string>

#include "absl/status/statusor.h"
#include "dovetail/apis/core/codec.h"
#include "gtest/gtest.h"

namespace dovetail::apis::core {
namespace {

using ::nlohmann::json;

Pod PodFrom(const char* spec_json) {
  absl::StatusOr<Pod> pod = DecodeAs<Pod>(json::parse(spec_json));
  EXPECT_TRUE(pod.ok()) << pod.status();
  return pod.ok() ? *pod : Pod{};
}

// Formats a ResourceList as {"cpu": "1500m", ...} for readable comparisons.
json AsJson(const ResourceList& list) {
  json out = json::object();
  for (const auto& [name, quantity] : list) out[name] = quantity.ToString();
  return out;
}

TEST(PodRequestsTest, SumsContainersAndCountsThePod) {
  const Pod pod = PodFrom(R"({"spec": {"containers": [
      {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                                  "limits": {"cpu": "4"}}},
      {"name": "b", "resources": {"requests": {"cpu": "250m", "nvidia.com/gpu": "1"}}},
      {"name": "c"}]}})");
  EXPECT_EQ(AsJson(PodRequests(pod)),
            json::parse(R"({"cpu": "750m", "memory": "1Gi", "nvidia.com/gpu": "1", "pods": "1"})"));
}

TEST(PodRequestsTest, LargestInitContainerDominatesPerResource) {
  // cpu: init 2 > containers 1; memory: containers 3Gi > init 1Gi.
  const Pod pod = PodFrom(R"({"spec": {
      "initContainers": [
        {"name": "i1", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}},
        {"name": "i2", "resources": {"requests": {"cpu": "1500m"}}}],
      "containers": [
        {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
        {"name": "b", "resources": {"requests": {"cpu": "500m", "memory": "2Gi"}}}]}})");
  EXPECT_EQ(AsJson(PodRequests(pod)), json::parse(R"({"cpu": "2", "memory": "3Gi", "pods": "1"})"));
}

TEST(PodRequestsTest, SidecarsRunAlongsideContainersAndLaterInitContainers) {
  // The sidecar (restartPolicy Always) is counted with the regular containers (1 + 0.5) and with
  // every init container that starts after it (init2: 1.2 + 0.5 = 1.7, the maximum); init1 starts
  // before the sidecar and needs only its own 1.6.
  const Pod pod = PodFrom(R"({"spec": {
      "initContainers": [
        {"name": "init1", "resources": {"requests": {"cpu": "1600m"}}},
        {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
        {"name": "init2", "resources": {"requests": {"cpu": "1200m"}}}],
      "containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]}})");
  EXPECT_EQ(AsJson(PodRequests(pod)), json::parse(R"({"cpu": "1700m", "pods": "1"})"));
}

TEST(PodRequestsTest, SidecarsAccumulateDuringInitialisation) {
  // Two sidecars then a big init container: during it both sidecars run (0.3 + 0.4 + 1 = 1.7);
  // afterwards containers plus sidecars need 0.1 + 0.7 = 0.8.
  const Pod pod = PodFrom(R"({"spec": {
      "initContainers": [
        {"name": "s1", "restartPolicy": "Always", "resources": {"requests": {"cpu": "300m",
                                                                             "memory": "64Mi"}}},
        {"name": "s2", "restartPolicy": "Always", "resources": {"requests": {"cpu": "400m"}}},
        {"name": "big", "resources": {"requests": {"cpu": "1", "memory": "32Mi"}}}],
      "containers": [{"name": "app", "resources": {"requests": {"cpu": "100m",
                                                                "memory": "16Mi"}}}]}})");
  EXPECT_EQ(AsJson(PodRequests(pod)),
            json::parse(R"({"cpu": "1700m", "memory": "96Mi", "pods": "1"})"));
}

TEST(PodRequestsTest, SidecarsAloneCountOnceWithContainers) {
  const Pod pod = PodFrom(R"({"spec": {
      "initContainers": [
        {"name": "s1", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}],
      "containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]}})");
  EXPECT_EQ(AsJson(PodRequests(pod)), json::parse(R"({"cpu": "2", "pods": "1"})"));
}

TEST(PodRequestsTest, OverheadIsAddedAfterTheMaximum) {
  const Pod pod = PodFrom(R"({"spec": {
      "overhead": {"cpu": "250m", "memory": "120Mi"},
      "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
      "containers": [{"name": "app",
                      "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}})");
  EXPECT_EQ(AsJson(PodRequests(pod)),
            json::parse(R"({"cpu": "2250m", "memory": "1144Mi", "pods": "1"})"));
  EXPECT_EQ(AsJson(PodRequests(
                pod, PodRequestsOptions{.include_overhead = false, .include_pod_count = false})),
            json::parse(R"({"cpu": "2", "memory": "1Gi"})"));
}

TEST(PodRequestsTest, PodLevelRequestsReplaceCpuAndMemoryOnly) {
  const Pod pod = PodFrom(R"({"spec": {
      "resources": {"requests": {"cpu": "3", "memory": "4Gi", "nvidia.com/gpu": "9"}},
      "overhead": {"cpu": "100m"},
      "containers": [{"name": "app", "resources": {"requests": {"cpu": "1", "memory": "1Gi",
                                                                "nvidia.com/gpu": "1"}}}]}})");
  EXPECT_EQ(
      AsJson(PodRequests(pod)),
      json::parse(R"({"cpu": "3100m", "memory": "4Gi", "nvidia.com/gpu": "1", "pods": "1"})"));
  EXPECT_EQ(
      AsJson(PodRequests(pod, PodRequestsOptions{.use_pod_level_resources = false})),
      json::parse(R"({"cpu": "1100m", "memory": "1Gi", "nvidia.com/gpu": "1", "pods": "1"})"));
}

TEST(PodRequestsTest, AllocatedResourcesWinWhenLarger) {
  const Pod pod = PodFrom(R"({"spec": {
      "initContainers": [{"name": "side", "restartPolicy": "Always",
                          "resources": {"requests": {"cpu": "100m"}}}],
      "containers": [{"name": "app", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]},
    "status": {
      "initContainerStatuses": [{"name": "side", "allocatedResources": {"cpu": "300m"}}],
      "containerStatuses": [{"name": "app",
                             "allocatedResources": {"cpu": "2", "memory": "1Gi"}}]}})");
  EXPECT_EQ(AsJson(PodRequests(pod)),
            json::parse(R"({"cpu": "2300m", "memory": "2Gi", "pods": "1"})"));
  EXPECT_EQ(AsJson(PodRequests(pod, PodRequestsOptions{.use_status_resources = false})),
            json::parse(R"({"cpu": "1100m", "memory": "2Gi", "pods": "1"})"));
  EXPECT_EQ(AsJson(PodRequests(pod.spec)),
            json::parse(R"({"cpu": "1100m", "memory": "2Gi", "pods": "1"})"));
}

TEST(PodRequestsTest, EmptyPodStillCountsItself) {
  EXPECT_EQ(AsJson(PodRequests(Pod{})), json::parse(R"({"pods": "1"})"));
}

TEST(PodRequestsTest, DefaultRequestsFromLimitsFillsOnlyMissingRequests) {
  Pod pod = PodFrom(R"({"spec": {
      "initContainers": [{"name": "i", "resources": {"limits": {"cpu": "1"}}}],
      "containers": [{"name": "app", "resources": {"requests": {"cpu": "100m"},
                                                   "limits": {"cpu": "2", "memory": "1Gi"}}}]}})");
  DefaultRequestsFromLimits(pod.spec);
  EXPECT_EQ(AsJson(pod.spec.containers[0].resources.requests),
            json::parse(R"({"cpu": "100m", "memory": "1Gi"})"));
  EXPECT_EQ(AsJson(pod.spec.init_containers[0].resources.requests), json::parse(R"({"cpu": "1"})"));
}

}  // namespace
}  // namespace dovetail::apis::core
