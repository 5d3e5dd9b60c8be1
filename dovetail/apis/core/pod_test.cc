#include "dovetail/apis/core/pod.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/manifest.h"
#include "dovetail/apis/core/workloads.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::apis::core {
namespace {

using ::nlohmann::json;
using ::testing::ElementsAre;

std::string TestData(const std::string& name) {
  return std::string(DOVETAIL_APIS_TESTDATA) + "/" + name;
}

Pod PendingPodFromFixture() {
  absl::StatusOr<std::vector<Manifest>> manifests = ReadManifests(TestData("cluster_objects.yaml"));
  EXPECT_TRUE(manifests.ok()) << manifests.status();
  Pod pod;
  if (!manifests.ok()) return pod;
  for (const Manifest& m : *manifests) {
    if (m.kind == "Pod") {
      EXPECT_TRUE(DecodeJson(m.json, pod).ok());
    }
  }
  return pod;
}

PodSpec WebTemplateSpec() {
  absl::StatusOr<std::vector<Manifest>> manifests = ReadManifests(TestData("workloads.yaml"));
  EXPECT_TRUE(manifests.ok()) << manifests.status();
  Deployment deployment;
  if (manifests.ok()) {
    EXPECT_TRUE(DecodeJson((*manifests)[0].json, deployment).ok());
  }
  return deployment.spec.template_.spec;
}

TEST(PodTest, SchedulingConstraintsAreDecoded) {
  const PodSpec spec = WebTemplateSpec();
  EXPECT_EQ(spec.node_selector.at("kubernetes.io/os"), "linux");
  EXPECT_EQ(spec.priority_class_name, "high");
  EXPECT_EQ(spec.termination_grace_period_seconds, 60);
  ASSERT_EQ(spec.tolerations.size(), 2);
  EXPECT_EQ(spec.tolerations[1].toleration_seconds, 300);
  EXPECT_EQ(spec.tolerations[1].effect, TaintEffect::kNoExecute);

  ASSERT_TRUE(spec.affinity.has_value());
  const NodeAffinity& node_affinity = *spec.affinity->node_affinity;
  ASSERT_TRUE(node_affinity.required.has_value());
  const NodeSelectorRequirement& cpu = node_affinity.required->terms[0].match_expressions[1];
  EXPECT_EQ(cpu.key, "karpenter.k8s.aws/instance-cpu");
  EXPECT_EQ(cpu.op, SelectorOperator::kGt);
  EXPECT_THAT(cpu.values, ElementsAre("3"));
  EXPECT_EQ(node_affinity.preferred[0].weight, 50);

  const PodAffinity& anti = *spec.affinity->pod_anti_affinity;
  EXPECT_EQ(anti.required[0].topology_key, "kubernetes.io/hostname");
  EXPECT_EQ(anti.required[0].label_selector->match_labels.at("app"), "web");
  EXPECT_EQ(anti.preferred[0].weight, 100);
  EXPECT_THAT(anti.preferred[0].term.match_label_keys, ElementsAre("pod-template-hash"));
  const PodAffinityTerm& affinity = spec.affinity->pod_affinity->preferred[0].term;
  EXPECT_THAT(affinity.namespaces, ElementsAre("shop", "shared"));
  EXPECT_EQ(affinity.namespace_selector->match_labels.at("tier"), "backend");
  EXPECT_THAT(affinity.mismatch_label_keys, ElementsAre("tenant"));

  ASSERT_EQ(spec.topology_spread_constraints.size(), 2);
  const TopologySpreadConstraint& zone = spec.topology_spread_constraints[0];
  EXPECT_EQ(zone.max_skew, 1);
  EXPECT_EQ(zone.when_unsatisfiable, UnsatisfiableConstraintAction::kDoNotSchedule);
  EXPECT_EQ(zone.min_domains, 3);
  EXPECT_EQ(zone.node_affinity_policy, NodeInclusionPolicy::kHonor);
  EXPECT_EQ(zone.node_taints_policy, NodeInclusionPolicy::kIgnore);
  EXPECT_EQ(spec.topology_spread_constraints[1].when_unsatisfiable,
            UnsatisfiableConstraintAction::kScheduleAnyway);
  EXPECT_FALSE(spec.topology_spread_constraints[1].min_domains.has_value());
}

TEST(PodTest, ContainersPortsAndSidecarsAreDecoded) {
  const PodSpec spec = WebTemplateSpec();
  ASSERT_EQ(spec.init_containers.size(), 2);
  EXPECT_FALSE(IsRestartableInitContainer(spec.init_containers[0]));
  EXPECT_TRUE(IsRestartableInitContainer(spec.init_containers[1]));
  const Container& web = spec.containers[0];
  EXPECT_EQ(web.resources.requests.at("ephemeral-storage").Value(), 2LL << 30);
  ASSERT_EQ(web.ports.size(), 2);
  EXPECT_EQ(web.ports[0].protocol, Protocol::kTCP);
  EXPECT_FALSE(web.ports[1].protocol.has_value());
  EXPECT_EQ(web.ports[1].host_port, 9090);
  EXPECT_EQ(web.ports[1].host_ip, "0.0.0.0");
  EXPECT_TRUE(web.unknown_fields.contains("readinessProbe"));
}

TEST(PodTest, VolumesNameTheClaimsAPodUses) {
  const PodSpec spec = WebTemplateSpec();
  ASSERT_EQ(spec.volumes.size(), 6);
  EXPECT_EQ(spec.volumes[0].persistent_volume_claim->claim_name, "web-data");
  EXPECT_TRUE(spec.volumes[1].empty_dir.has_value());
  EXPECT_EQ(spec.volumes[2].empty_dir->medium, "Memory");
  EXPECT_EQ(spec.volumes[2].empty_dir->size_limit->Value(), 256LL << 20);
  EXPECT_TRUE(spec.volumes[3].unknown_fields.contains("configMap"));
  EXPECT_EQ(spec.volumes[4].host_path->type, "Directory");
  const PersistentVolumeClaimTemplate& tmpl = *spec.volumes[5].ephemeral->volume_claim_template;
  EXPECT_EQ(tmpl.spec.storage_class_name, "gp3");
  EXPECT_EQ(tmpl.metadata.labels.at("type"), "scratch");
}

TEST(PodTest, StatusFieldsAreDecoded) {
  const Pod pod = PendingPodFromFixture();
  EXPECT_EQ(pod.status.phase, PodPhase::kPending);
  EXPECT_EQ(pod.status.nominated_node_name, "ip-192-168-71-87.us-west-2.compute.internal");
  EXPECT_EQ(pod.status.start_time, absl::FromUnixSeconds(1748775604));
  EXPECT_EQ(pod.status.container_statuses[0].allocated_resources.at("cpu").MilliValue(), 500);
  EXPECT_EQ(pod.spec.priority, 1000);
  EXPECT_EQ(pod.spec.preemption_policy, PreemptionPolicy::kPreemptLowerPriority);
  EXPECT_EQ(pod.spec.scheduler_name, "default-scheduler");
  EXPECT_EQ(pod.spec.overhead.at("cpu").MilliValue(), 250);
  ASSERT_EQ(pod.spec.resource_claims.size(), 1);
  EXPECT_EQ(pod.spec.resource_claims[0].name, "gpu");
  EXPECT_TRUE(pod.metadata.unknown_fields.contains("managedFields"));
}

TEST(PodTest, LifecycleHelpers) {
  Pod pod;
  EXPECT_FALSE(IsTerminal(pod));
  pod.status.phase = PodPhase::kRunning;
  EXPECT_FALSE(IsTerminal(pod));
  pod.status.phase = PodPhase::kSucceeded;
  EXPECT_TRUE(IsTerminal(pod));
  pod.status.phase = PodPhase::kFailed;
  EXPECT_TRUE(IsTerminal(pod));

  EXPECT_FALSE(IsTerminating(pod));
  pod.metadata.deletion_timestamp = absl::FromUnixSeconds(1);
  EXPECT_TRUE(IsTerminating(pod));
}

TEST(PodTest, WrongTypeDeepInsideAffinityNamesThePath) {
  Pod pod;
  const absl::Status status = DecodeJson(json::parse(R"({"spec": {"affinity": {"nodeAffinity": {
      "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "a", "operator": "In", "values": ["x", 2]}]}]}}}}})"),
                                         pod);
  EXPECT_EQ(status.message(),
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
            "nodeSelectorTerms[0].matchExpressions[0].values[1]: expected string, got number");
}

}  // namespace
}  // namespace dovetail::apis::core
