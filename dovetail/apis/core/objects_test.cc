// Round trips of realistic manifests through the typed structs: decode then encode must give back
// the same JSON, from YAML and from JSON input alike.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/csi_node.h"
#include "dovetail/apis/core/manifest.h"
#include "dovetail/apis/core/namespace.h"
#include "dovetail/apis/core/node.h"
#include "dovetail/apis/core/persistent_volume.h"
#include "dovetail/apis/core/persistent_volume_claim.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/apis/core/pod_disruption_budget.h"
#include "dovetail/apis/core/storage_class.h"
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

template <typename T>
json RoundTrip(const json& in) {
  T object;
  const absl::Status status = DecodeJson(in, object);
  EXPECT_TRUE(status.ok()) << status;
  return EncodeJson(object);
}

json RoundTripByKind(const Manifest& m) {
  if (m.kind == "Pod") return RoundTrip<Pod>(m.json);
  if (m.kind == "Node") return RoundTrip<Node>(m.json);
  if (m.kind == "Namespace") return RoundTrip<Namespace>(m.json);
  if (m.kind == "PodDisruptionBudget") return RoundTrip<PodDisruptionBudget>(m.json);
  if (m.kind == "PersistentVolumeClaim") return RoundTrip<PersistentVolumeClaim>(m.json);
  if (m.kind == "PersistentVolume") return RoundTrip<PersistentVolume>(m.json);
  if (m.kind == "StorageClass") return RoundTrip<StorageClass>(m.json);
  if (m.kind == "CSINode") return RoundTrip<CSINode>(m.json);
  if (m.kind == "Deployment") return RoundTrip<Deployment>(m.json);
  if (m.kind == "ReplicaSet") return RoundTrip<ReplicaSet>(m.json);
  if (m.kind == "DaemonSet") return RoundTrip<DaemonSet>(m.json);
  if (m.kind == "StatefulSet") return RoundTrip<StatefulSet>(m.json);
  if (m.kind == "Job") return RoundTrip<Job>(m.json);
  ADD_FAILURE() << "no codec for " << m.kind;
  return nullptr;
}

void ExpectLosslessRoundTrips(const std::string& file, size_t expected_count) {
  absl::StatusOr<std::vector<Manifest>> manifests = ReadManifests(TestData(file));
  ASSERT_TRUE(manifests.ok()) << manifests.status();
  ASSERT_EQ(manifests->size(), expected_count);
  for (const Manifest& m : *manifests) {
    const json encoded = RoundTripByKind(m);
    EXPECT_EQ(encoded, m.json) << m.Describe() << " differs: " << json::diff(m.json, encoded);
    // The same object written as JSON text decodes to the same thing.
    absl::StatusOr<std::vector<Manifest>> from_json = ParseManifests(m.json.dump(2), "as.json");
    ASSERT_TRUE(from_json.ok()) << from_json.status();
    EXPECT_EQ(RoundTripByKind((*from_json)[0]), encoded) << m.Describe();
  }
}

TEST(ObjectsTest, ClusterObjectsRoundTripLosslessly) {
  ExpectLosslessRoundTrips("cluster_objects.yaml", 10);
}

TEST(ObjectsTest, WorkloadsRoundTripLosslessly) { ExpectLosslessRoundTrips("workloads.yaml", 5); }

template <typename T>
T DecodeManifest(const std::string& file, const std::string& kind, const std::string& name) {
  absl::StatusOr<std::vector<Manifest>> manifests = ReadManifests(TestData(file));
  EXPECT_TRUE(manifests.ok()) << manifests.status();
  T object;
  if (!manifests.ok()) return object;
  for (const Manifest& m : *manifests) {
    if (m.kind == kind && m.name == name) {
      const absl::Status status = DecodeJson(m.json, object);
      EXPECT_TRUE(status.ok()) << status;
      return object;
    }
  }
  ADD_FAILURE() << kind << "/" << name << " not in " << file;
  return object;
}

TEST(ObjectsTest, NodeFieldsAreDecoded) {
  const Node node = DecodeManifest<Node>("cluster_objects.yaml", "Node",
                                         "ip-192-168-71-87.us-west-2.compute.internal");
  EXPECT_EQ(node.spec.provider_id, "aws:///us-west-2b/i-0123456789abcdef0");
  EXPECT_TRUE(node.spec.unschedulable);
  ASSERT_EQ(node.spec.taints.size(), 2);
  EXPECT_EQ(node.spec.taints[0].key, "karpenter.sh/disrupted");
  EXPECT_EQ(node.spec.taints[0].effect, TaintEffect::kNoSchedule);
  EXPECT_EQ(node.spec.taints[1].time_added, absl::FromUnixSeconds(1748775600));
  EXPECT_EQ(node.status.allocatable.at("cpu").MilliValue(), 3920);
  EXPECT_EQ(node.status.capacity.at("memory").Value(), 7577LL * 1024 * 1024);
  EXPECT_TRUE(IsReady(node));
  EXPECT_EQ(node.status.addresses[0].address, "192.168.71.87");
  EXPECT_EQ(node.metadata.labels.at("topology.kubernetes.io/zone"), "us-west-2b");
  EXPECT_TRUE(node.status.unknown_fields.contains("nodeInfo"));
}

TEST(ObjectsTest, StorageObjectsAreDecoded) {
  const StorageClass sc =
      DecodeManifest<StorageClass>("cluster_objects.yaml", "StorageClass", "gp3");
  EXPECT_EQ(sc.provisioner, "ebs.csi.aws.com");
  EXPECT_EQ(sc.volume_binding_mode, VolumeBindingMode::kWaitForFirstConsumer);
  ASSERT_EQ(sc.allowed_topologies.size(), 1);
  EXPECT_EQ(sc.allowed_topologies[0].match_label_expressions[0].key,
            "topology.ebs.csi.aws.com/zone");
  EXPECT_THAT(sc.allowed_topologies[0].match_label_expressions[0].values,
              ElementsAre("us-west-2a", "us-west-2b"));

  const PersistentVolumeClaim pvc = DecodeManifest<PersistentVolumeClaim>(
      "cluster_objects.yaml", "PersistentVolumeClaim", "web-data");
  EXPECT_EQ(pvc.spec.storage_class_name, "gp3");
  EXPECT_EQ(pvc.spec.volume_name, "pvc-4b1c2d3e-5f6a-7b8c-9d0e-1f2a3b4c5d6e");
  EXPECT_EQ(pvc.status.phase, PersistentVolumeClaimPhase::kBound);
  EXPECT_EQ(pvc.spec.resources.requests.at("storage").Value(), 20LL << 30);

  const PersistentVolume pv = DecodeManifest<PersistentVolume>(
      "cluster_objects.yaml", "PersistentVolume", "pvc-4b1c2d3e-5f6a-7b8c-9d0e-1f2a3b4c5d6e");
  ASSERT_TRUE(pv.spec.csi.has_value());
  EXPECT_EQ(pv.spec.csi->driver, "ebs.csi.aws.com");
  ASSERT_TRUE(pv.spec.node_affinity.has_value() && pv.spec.node_affinity->required.has_value());
  EXPECT_EQ(pv.spec.node_affinity->required->terms[0].match_expressions[0].values,
            std::vector<std::string>{"us-west-2b"});
  EXPECT_EQ(pv.spec.claim_ref->name, "web-data");
  EXPECT_EQ(pv.status.phase, PersistentVolumePhase::kBound);

  const PersistentVolume local =
      DecodeManifest<PersistentVolume>("cluster_objects.yaml", "PersistentVolume", "local-pv-1");
  ASSERT_TRUE(local.spec.local.has_value());
  EXPECT_EQ(local.spec.local->path, "/mnt/disks/ssd1");

  const CSINode csi = DecodeManifest<CSINode>("cluster_objects.yaml", "CSINode",
                                              "ip-192-168-71-87.us-west-2.compute.internal");
  ASSERT_EQ(csi.spec.drivers.size(), 2);
  EXPECT_EQ(csi.spec.drivers[0].allocatable->count, 25);
  EXPECT_FALSE(csi.spec.drivers[1].allocatable.has_value());
}

TEST(ObjectsTest, PodDisruptionBudgetsAreDecoded) {
  const PodDisruptionBudget web =
      DecodeManifest<PodDisruptionBudget>("cluster_objects.yaml", "PodDisruptionBudget", "web");
  EXPECT_EQ(web.spec.max_unavailable, IntOrString::FromString("20%"));
  EXPECT_FALSE(web.spec.min_available.has_value());
  EXPECT_EQ(web.spec.unhealthy_pod_eviction_policy, UnhealthyPodEvictionPolicy::kAlwaysAllow);
  ASSERT_TRUE(web.status.has_value());
  EXPECT_EQ(web.status->disruptions_allowed, 0);
  EXPECT_EQ(web.status->expected_pods, 6);

  const PodDisruptionBudget db =
      DecodeManifest<PodDisruptionBudget>("cluster_objects.yaml", "PodDisruptionBudget", "db");
  EXPECT_EQ(db.spec.min_available, IntOrString::FromInt(2));
  EXPECT_FALSE(db.status.has_value());
  EXPECT_EQ(db.spec.selector->match_expressions[0].op, LabelSelectorOperator::kIn);
}

TEST(ObjectsTest, WorkloadsExposeReplicasTemplatesAndClaimTemplates) {
  const Deployment web = DecodeManifest<Deployment>("workloads.yaml", "Deployment", "web");
  EXPECT_EQ(web.spec.replicas, 6);
  EXPECT_EQ(web.spec.selector->match_labels.at("app"), "web");
  EXPECT_EQ(web.spec.template_.metadata.labels.at("app"), "web");
  EXPECT_TRUE(web.unknown_fields.contains("status"));
  EXPECT_TRUE(web.spec.unknown_fields.contains("strategy"));

  const StatefulSet db = DecodeManifest<StatefulSet>("workloads.yaml", "StatefulSet", "db");
  EXPECT_EQ(db.spec.replicas, 3);
  ASSERT_EQ(db.spec.volume_claim_templates.size(), 1);
  EXPECT_EQ(db.spec.volume_claim_templates[0].metadata.name, "pgdata");
  EXPECT_EQ(db.spec.volume_claim_templates[0].spec.storage_class_name, "gp3");

  const Job job = DecodeManifest<Job>("workloads.yaml", "Job", "report");
  EXPECT_EQ(job.spec.parallelism, 4);
  EXPECT_EQ(job.spec.completions, 20);

  const DaemonSet ds = DecodeManifest<DaemonSet>("workloads.yaml", "DaemonSet", "node-agent");
  EXPECT_EQ(ds.spec.template_.spec.tolerations[0].op, TolerationOperator::kExists);

  const ReplicaSet rs =
      DecodeManifest<ReplicaSet>("workloads.yaml", "ReplicaSet", "worker-5d9f8b7c6");
  EXPECT_EQ(rs.metadata.owner_references[0].controller, true);
  EXPECT_EQ(rs.spec.replicas, 2);
}

TEST(ObjectsTest, NamespaceKeepsSpecAndStatusAsUnknownFields) {
  const Namespace ns = DecodeManifest<Namespace>("cluster_objects.yaml", "Namespace", "shop");
  EXPECT_EQ(ns.metadata.labels.at("tier"), "backend");
  EXPECT_EQ(ns.unknown_fields, json::parse(R"({"spec": {"finalizers": ["kubernetes"]},
                                               "status": {"phase": "Active"}})"));
}

}  // namespace
}  // namespace dovetail::apis::core
