// A Scenario (scenario.h) read from Kubernetes manifests, as `dovetail simulate` reads them:
// NodePools, EC2NodeClasses, NodeClaims, Pods, the pods of Deployments, ReplicaSets, StatefulSets
// and Jobs, DaemonSets, Nodes, PersistentVolumeClaims, PersistentVolumes, StorageClasses and
// Namespaces; kinds that do not affect provisioning (Services, RBAC, PDBs, ...) are skipped. Older
// Karpenter API versions are converted to v1 first, as `dovetail convert` does, and every NodePool,
// NodeClaim and EC2NodeClass must validate as the CRD schemas would have it.
//
// Each object becomes what a cluster would hold once the API server admitted it and the workload
// controllers ran:
//   - a namespaced object without a namespace is in "default";
//   - a Deployment, ReplicaSet, Job (min(parallelism, completions)) or StatefulSet becomes
//     its pods, named <workload>-<ordinal> and owned by it; a StatefulSet's pod also gets its
//     statefulset.kubernetes.io/pod-name label and one claim per volumeClaimTemplate
//     (<template>-<statefulset>-<ordinal>);
//   - every namespace an object names has the kubernetes.io/metadata.name label.
// Pods and Nodes go through the informers' own decoders (kube/objects.h) into a state::Cluster,
// whose snapshot is the Scenario's, exactly as FromCluster reads them. A pod without spec.nodeName
// counts as marked Unschedulable by the kube-scheduler (simulate asks where pending pods would go);
// the controller's filter (pod_filter.h IsProvisionable) then decides which are pending.
// `objects()` are those objects as JSON: created in an API server, FromCluster reads the same
// Scenario from them (test/integration/scenario).
//
// The Scenario has no instance types: the caller gives each NodePool its own, as the cloud
// provider's GetInstanceTypes would (simulate: a catalog, shaped by the pool's EC2NodeClass).
// Errors: InvalidArgument naming "<file>:<line>: Kind/name" (an unknown kind, an undecodable or
// invalid object); NotFound for a missing file. Thread-compatible.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/apis/core/manifest.h"
#include "dovetail/kube/pod_constraints.h"
#include "dovetail/kube/string_pool.h"
#include "dovetail/scenario/scenario.h"
#include "nlohmann/json.hpp"

namespace dovetail::scenario {

class ManifestScenario {
 public:
  // `now` is the Scenario's instant (do-not-disrupt durations of pods on deleting nodes).
  static absl::StatusOr<std::unique_ptr<ManifestScenario>> FromManifests(
      const std::vector<apis::core::Manifest>& manifests, absl::Time now);
  // The manifests of `paths` in order; a directory stands for every .yaml, .yml and .json file
  // below it, in name order (as `kubectl apply -f DIR -R`); "-" is standard input.
  static absl::StatusOr<std::unique_ptr<ManifestScenario>> FromFiles(
      const std::vector<std::string>& paths, absl::Time now);

  ManifestScenario(const ManifestScenario&) = delete;
  ManifestScenario& operator=(const ManifestScenario&) = delete;

  const Scenario& scenario() const { return scenario_; }
  Scenario& scenario() { return scenario_; }
  const std::vector<apis::aws::v1::EC2NodeClass>& node_classes() const { return node_classes_; }
  // Every object read, in input order (a workload as its pods and claims, after conversion and
  // the namespace default), as an API server would be given it.
  const std::vector<nlohmann::json>& objects() const { return objects_; }

 private:
  ManifestScenario() = default;

  kube::StringPool strings_;  // interned by the pods and nodes of `scenario_`; declared first
  kube::PodConstraintPool constraints_;  // shares the pods' decoded affinity and spread
  Scenario scenario_;
  std::vector<apis::aws::v1::EC2NodeClass> node_classes_;
  std::vector<nlohmann::json> objects_;
};

}  // namespace dovetail::scenario
