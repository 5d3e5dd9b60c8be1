#include "dovetail/scenario/from_manifests.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "dovetail/apis/core/manifest.h"
#include "gtest/gtest.h"

namespace dovetail::scenario {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

absl::StatusOr<std::unique_ptr<ManifestScenario>> Read(const std::string& yaml) {
  absl::StatusOr<std::vector<apis::core::Manifest>> manifests =
      apis::core::ParseManifests(yaml, "in.yaml");
  if (!manifests.ok()) return manifests.status();
  return ManifestScenario::FromManifests(*manifests, kNow);
}

constexpr char kCluster[] = R"(apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]
---
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {team: web}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx, resources: {requests: {cpu: 500m}}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: c, image: pg}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec: {accessModes: [ReadWriteOnce], storageClassName: fast,
             resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Node
metadata: {name: node-a, labels: {kubernetes.io/hostname: node-a}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}, allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: running, namespace: shop}
spec:
  nodeName: node-a
  containers: [{name: c, image: nginx, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata:
  name: agent-x
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: agent, uid: u, controller: true}]
spec:
  containers: [{name: c, image: agent}]
---
apiVersion: v1
kind: Service
metadata: {name: skipped}
)";

TEST(FromManifestsTest, ReadsTheObjectsAClusterWouldHold) {
  auto read = Read(kCluster);
  ASSERT_TRUE(read.ok()) << read.status();
  const Scenario& s = (*read)->scenario();
  EXPECT_EQ(s.now, kNow);
  ASSERT_EQ(s.node_pools.count("general"), 1u);
  EXPECT_TRUE(s.instance_types.empty());  // the caller's
  // The workloads' pods are pending; the DaemonSet's pod is not the controller's to place.
  std::vector<std::string> pending;
  for (const auto& pod : s.pending_pods) pending.push_back(pod->meta.Key());
  std::sort(pending.begin(), pending.end());
  EXPECT_EQ(pending, (std::vector<std::string>{"default/db-0", "shop/web-0", "shop/web-1"}));
  // The bound pod is on its node in the snapshot.
  ASSERT_EQ(s.snapshot.nodes.size(), 1u);
  EXPECT_EQ(s.snapshot.nodes[0].Name(), "node-a");
  ASSERT_EQ(s.snapshot.pods_by_node.at("node-a").size(), 1u);
  EXPECT_EQ(s.snapshot.pods_by_node.at("node-a")[0]->meta.Key(), "shop/running");
  // The StatefulSet's claim, and its pod's volume.
  ASSERT_EQ(s.volumes.claims.size(), 1u);
  EXPECT_EQ(s.volumes.claims[0].metadata.name, "data-db-0");
  EXPECT_EQ(s.volumes.claims[0].metadata.namespace_, "default");
  // Every namespace has its name label; declared labels are kept.
  EXPECT_EQ(s.namespace_labels.at("shop").at("team"), "web");
  EXPECT_EQ(s.namespace_labels.at("shop").at("kubernetes.io/metadata.name"), "shop");
  EXPECT_EQ(s.namespace_labels.at("default").at("kubernetes.io/metadata.name"), "default");
  // objects(): the workloads as their pods (and claims), the Service skipped.
  std::vector<std::string> kinds;
  for (const auto& o : (*read)->objects()) kinds.push_back(o["kind"]);
  EXPECT_EQ(kinds,
            (std::vector<std::string>{"NodePool", "Namespace", "Pod", "Pod",
                                      "PersistentVolumeClaim", "Pod", "Node", "Pod", "Pod"}));
}

TEST(FromManifestsTest, ErrorsNameTheObjectAndItsPosition) {
  auto unknown = Read("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("in.yaml:1: Widget/w: unknown kind"), std::string::npos)
      << unknown.status();

  auto bad_pool = Read(
      "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\nspec:\n  template:\n"
      "    spec:\n      requirements: [{key: a, operator: Gt, values: [x]}]\n");
  ASSERT_FALSE(bad_pool.ok());
  EXPECT_NE(bad_pool.status().message().find("invalid objects"), std::string::npos)
      << bad_pool.status();

  auto bad_affinity = Read(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  affinity: {nodeAffinity: 3}\n"
      "  containers: [{name: c, image: i}]\n");
  ASSERT_FALSE(bad_affinity.ok());
  EXPECT_NE(bad_affinity.status().message().find("in.yaml:1: Pod/p"), std::string::npos)
      << bad_affinity.status();
}

TEST(FromManifestsTest, AbsurdReplicaCountsAreAnErrorNotAnAllocation) {
  auto huge = Read(
      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 2000000000\n"
      "  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n"
      "    spec: {containers: [{name: c, image: i}]}\n");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("more than 1000000 pods"), std::string::npos)
      << huge.status();
}

}  // namespace
}  // namespace dovetail::scenario
