// Volume topology: the nodes a pod's PersistentVolumeClaims let it run on, as the kube-scheduler's
// VolumeBinding filter reads them. A claim bound to a PersistentVolume (spec.volumeName) follows
// the volume's required node affinity (its kubernetes.io/hostname terms left out: a new node has
// no name yet); an unbound claim follows its StorageClass's allowedTopologies. A pod may use any
// combination of one alternative per constrained claim, so its alternatives are the pairwise
// intersections. When no combination intersects (e.g. two claims bound in different zones), the one
// alternative is the first conflicting pair intersected, which no node meets (zone In ∅): the pod
// fits nowhere and the solver's reason names it (the solver reads an empty list as unconstrained).
// Claims that are missing, or whose volume or class is missing or unconstrained, constrain nothing.
//
// Pure; thread-compatible. VolumeTopology points into the Volumes it indexes, which must outlive
// it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "dovetail/apis/core/persistent_volume.h"
#include "dovetail/apis/core/persistent_volume_claim.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/apis/core/storage_class.h"
#include "dovetail/scheduling/requirements.h"

namespace dovetail::scenario {

struct Volumes {
  std::vector<apis::core::PersistentVolumeClaim> claims;
  std::vector<apis::core::PersistentVolume> volumes;
  std::vector<apis::core::StorageClass> storage_classes;
};

class VolumeTopology {
 public:
  explicit VolumeTopology(const Volumes& volumes);

  // The alternatives of `pod` (each a set of requirements a node must meet for all its volumes),
  // or nullopt when no volume constrains it.
  std::optional<std::vector<scheduling::Requirements>> Alternatives(
      const apis::core::Pod& pod) const;

 private:
  // The alternatives one claim allows (empty: it constrains nothing).
  std::vector<scheduling::Requirements> OfClaim(
      const apis::core::PersistentVolumeClaim& claim) const;

  absl::flat_hash_map<std::string, const apis::core::PersistentVolumeClaim*> claims_;  // ns/name
  absl::flat_hash_map<std::string, const apis::core::PersistentVolume*> volumes_;
  absl::flat_hash_map<std::string, const apis::core::StorageClass*> storage_classes_;
};

}  // namespace dovetail::scenario
