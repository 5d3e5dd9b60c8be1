#include "dovetail/scenario/pod_filter.h"

#include "dovetail/apis/core/codec.h"
#include "dovetail/state/state_test_util.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dovetail::scenario {
namespace {

nlohmann::json PendingPod(const std::string& name) {
  nlohmann::json pod = state::testing::PodJson("default", name, "", "500m");
  pod["status"]["conditions"] = {{{"type", "PodScheduled"},
                                  {"status", "False"},
                                  {"reason", "Unschedulable"},
                                  {"message", "0/3 nodes are available"}}};
  return pod;
}

class PodFilterTest : public ::testing::Test {
 protected:
  bool Provisionable(const nlohmann::json& json) { return IsProvisionable(*objects_.Pod(json)); }
  apis::core::Pod ApiPod(const nlohmann::json& json) {
    auto pod = apis::core::DecodeAs<apis::core::Pod>(json);
    EXPECT_TRUE(pod.ok()) << pod.status();
    return pod.ok() ? *pod : apis::core::Pod{};
  }
  state::testing::Objects objects_;
};

TEST_F(PodFilterTest, PendingPodMarkedUnschedulableIsProvisionable) {
  EXPECT_TRUE(Provisionable(PendingPod("a")));
}

TEST_F(PodFilterTest, DraRequirementsOfAPodSpecAreFound) {
  nlohmann::json pod = PendingPod("a");
  EXPECT_FALSE(HasDraRequirements(ApiPod(pod).spec));
  nlohmann::json claimed = pod;
  claimed["spec"]["resourceClaims"] = {{{"name", "gpu"}, {"resourceClaimName", "gpu-0"}}};
  EXPECT_TRUE(HasDraRequirements(ApiPod(claimed).spec));
  nlohmann::json container = pod;
  container["spec"]["containers"][0]["resources"]["claims"] = {{{"name", "gpu"}}};
  EXPECT_TRUE(HasDraRequirements(ApiPod(container).spec));
  container["spec"]["containers"][0]["resources"]["claims"] = nlohmann::json::array();
  EXPECT_FALSE(HasDraRequirements(ApiPod(container).spec));
}

TEST_F(PodFilterTest, PodTheSchedulerHasNotTriedIsNotProvisionable) {
  nlohmann::json pod = PendingPod("a");
  pod["status"].erase("conditions");
  EXPECT_FALSE(Provisionable(pod));
}

TEST_F(PodFilterTest, OtherSchedulersReasonIsNotProvisionable) {
  nlohmann::json pod = PendingPod("a");
  pod["status"]["conditions"][0]["reason"] = "SchedulerError";
  EXPECT_FALSE(Provisionable(pod));
}

TEST_F(PodFilterTest, BoundPodIsNotProvisionable) {
  nlohmann::json pod = PendingPod("a");
  pod["spec"]["nodeName"] = "node-1";
  EXPECT_FALSE(Provisionable(pod));
}

TEST_F(PodFilterTest, PreemptingPodWithNominatedNodeIsNotProvisionable) {
  nlohmann::json pod = PendingPod("a");
  pod["status"]["nominatedNodeName"] = "node-1";
  EXPECT_FALSE(Provisionable(pod));
}

TEST_F(PodFilterTest, TerminalAndTerminatingPodsAreNotProvisionable) {
  nlohmann::json failed = PendingPod("a");
  failed["status"]["phase"] = "Failed";
  EXPECT_FALSE(Provisionable(failed));
  nlohmann::json deleting = PendingPod("b");
  deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  EXPECT_FALSE(Provisionable(deleting));
}

TEST_F(PodFilterTest, DaemonSetAndMirrorPodsAreNotProvisionable) {
  nlohmann::json ds = PendingPod("a");
  ds["metadata"]["ownerReferences"] = {
      {{"apiVersion", "apps/v1"}, {"kind", "DaemonSet"}, {"name", "ds"}, {"uid", "u1"}}};
  EXPECT_FALSE(Provisionable(ds));
  nlohmann::json mirror = PendingPod("b");
  mirror["metadata"]["ownerReferences"] = {
      {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "n"}, {"uid", "u2"}}};
  EXPECT_FALSE(Provisionable(mirror));
  nlohmann::json replica = PendingPod("c");
  replica["metadata"]["ownerReferences"] = {
      {{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "rs"}, {"uid", "u3"}}};
  EXPECT_TRUE(Provisionable(replica));
}

TEST_F(PodFilterTest, PodsOfADeletingNodeAreReschedulableUnlessProtected) {
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  nlohmann::json bound = state::testing::PodJson("default", "a", "node-1", "500m");
  bound["status"]["startTime"] = "2027-01-15T08:00:00Z";  // 1,800,000,000 s is 08:00 Jan 15 2027
  EXPECT_TRUE(IsReschedulable(*objects_.Pod(bound), now));

  nlohmann::json pinned = bound;
  pinned["metadata"]["annotations"] = {{"karpenter.sh/do-not-disrupt", "true"}};
  EXPECT_FALSE(IsReschedulable(*objects_.Pod(pinned), now));
  pinned["metadata"]["annotations"] = {{"karpenter.sh/do-not-disrupt", "1h"}};
  EXPECT_FALSE(IsReschedulable(*objects_.Pod(pinned), now + absl::Minutes(59)));
  EXPECT_TRUE(IsReschedulable(*objects_.Pod(pinned), now + absl::Minutes(61)));

  nlohmann::json done = bound;
  done["status"]["phase"] = "Succeeded";
  EXPECT_FALSE(IsReschedulable(*objects_.Pod(done), now));

  nlohmann::json leaving = bound;
  leaving["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z";
  EXPECT_FALSE(IsReschedulable(*objects_.Pod(leaving), now));
  leaving["metadata"]["ownerReferences"] = {
      {{"apiVersion", "apps/v1"}, {"kind", "StatefulSet"}, {"name", "db"}, {"uid", "u1"}}};
  EXPECT_TRUE(IsReschedulable(*objects_.Pod(leaving), now));

  nlohmann::json daemon = bound;
  daemon["metadata"]["ownerReferences"] = {
      {{"apiVersion", "apps/v1"}, {"kind", "DaemonSet"}, {"name", "ds"}, {"uid", "u2"}}};
  EXPECT_FALSE(IsReschedulable(*objects_.Pod(daemon), now));
}

TEST_F(PodFilterTest, PodSelectingHostnameIsIgnoredWithAReason) {
  nlohmann::json pod = PendingPod("a");
  pod["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", "node-1"}};
  auto why = IgnoredReason(ApiPod(pod));
  ASSERT_TRUE(why.has_value());
  EXPECT_FALSE(why->silent);
  EXPECT_NE(why->message.find("kubernetes.io/hostname"), std::string::npos) << why->message;
}

TEST_F(PodFilterTest, PodOptingOutOfNodePoolsIsIgnoredSilently) {
  nlohmann::json pod = PendingPod("a");
  pod["spec"]["affinity"] = {
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         {{"nodeSelectorTerms",
           {{{"matchExpressions",
              {{{"key", "karpenter.sh/nodepool"}, {"operator", "DoesNotExist"}}}}}}}}}}}};
  auto why = IgnoredReason(ApiPod(pod));
  ASSERT_TRUE(why.has_value());
  EXPECT_TRUE(why->silent);
}

TEST_F(PodFilterTest, MatchFieldsIsIgnored) {
  nlohmann::json pod = PendingPod("a");
  pod["spec"]["affinity"] = {
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         {{"nodeSelectorTerms",
           {{{"matchFields",
              {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {"n1"}}}}}}}}}}}}};
  EXPECT_TRUE(IgnoredReason(ApiPod(pod)).has_value());
}

TEST_F(PodFilterTest, UnknownCustomKeysAndWellKnownKeysAreStillConsidered) {
  nlohmann::json pod = PendingPod("a");
  pod["spec"]["nodeSelector"] = {{"team", "a"},
                                 {"topology.kubernetes.io/zone", "test-zone-a"},
                                 {"karpenter.sh/capacity-type", "spot"}};
  EXPECT_FALSE(IgnoredReason(ApiPod(pod)).has_value());
}

}  // namespace
}  // namespace dovetail::scenario
