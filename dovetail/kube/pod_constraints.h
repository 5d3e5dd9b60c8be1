// A pod's scheduling constraints that are structured rather than flat (spec.affinity and
// spec.topologySpreadConstraints), decoded once into the dovetail/apis types when the informer
// decodes the pod, so that no later reader (the solver's question is built from every pending and
// bound pod on every pass) parses JSON again.
//
// PodConstraintPool shares one immutable decoded value among the pods whose constraint JSON is the
// same text: the replicas of one workload carry the same affinity, so a cluster of many pods holds
// a few decoded values rather than one per pod. Entries are weak: a value lives as long as a pod
// holds it, and the index forgets expired texts as it grows.
// Thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "dovetail/apis/core/pod.h"

namespace dovetail::kube {

using AffinityPtr = std::shared_ptr<const apis::core::Affinity>;
using TopologySpreadPtr = std::shared_ptr<const std::vector<apis::core::TopologySpreadConstraint>>;

// Decodes `json`, the text of spec.affinity / spec.topologySpreadConstraints. Errors:
// InvalidArgument naming the field, for malformed JSON or a field of the wrong type.
absl::StatusOr<AffinityPtr> DecodeAffinity(std::string_view json);
absl::StatusOr<TopologySpreadPtr> DecodeTopologySpread(std::string_view json);

class PodConstraintPool {
 public:
  // The shared decoded value of `json`; decodes it when no live value has that text. Errors: as
  // DecodeAffinity / DecodeTopologySpread (nothing is kept for a text that fails).
  absl::StatusOr<AffinityPtr> Affinity(std::string_view json);
  absl::StatusOr<TopologySpreadPtr> TopologySpread(std::string_view json);

  // Texts indexed, expired ones included until the next sweep (tests).
  size_t size() const;

 private:
  template <typename T>
  struct Index {
    absl::flat_hash_map<std::string, std::weak_ptr<const T>> values;
    size_t sweep_at = 64;  // sweep expired entries when the index reaches this size
  };

  // `index` names one of the indexes below, read and written under mu_.
  template <typename T, typename Decode>
  absl::StatusOr<std::shared_ptr<const T>> Get(Index<T> PodConstraintPool::*index,
                                               std::string_view json, Decode decode)
      ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;
  Index<apis::core::Affinity> affinities_ ABSL_GUARDED_BY(mu_);
  Index<std::vector<apis::core::TopologySpreadConstraint>> spreads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dovetail::kube
