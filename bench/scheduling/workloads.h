// Workload generators for the scheduling benchmarks (and for tests that want the same shapes):
// upstream Karpenter's benchmark catalog and pod mixes, reproduced from their description, and a
// few Dovetail-specific workloads. Everything is deterministic: the same arguments give the same
// pods and instance types on every run and platform (a local SplitMix64 generator, no
// <random> distributions, whose output is implementation-defined).
//
// Shapes:
//   LinearCatalog(400)   type i (0-based) has i+1 vCPU, 2(i+1) GiB, 10(i+1) pods, no overhead;
//                        on-demand in zones a, b, c and spot in a, b; price linear in size
//                        (on-demand kLinearOnDemandPerVcpu per vCPU-hour, spot kLinearSpotFactor
//                        of that).
//   DiversePods(n)       five equal fifths (contiguous blocks of the index range):
//                        generic; zonal spread maxSkew 1; hostname spread maxSkew 1; zonal pod
//                        self-affinity by a label with 7 values; hostname anti-affinity of every
//                        pod of the fifth against every other. Requests drawn independently from
//                        kCpuChoices and kMemoryChoices.
//   PreferencePods(n)    three equal thirds, preferences only (PREFERENCE_POLICY=Respect makes
//                        the solver treat them as required, then relax): preferred node affinity
//                        (an unsatisfiable arch term of weight 100, then a zone term of weight
//                        50); preferred hostname anti-affinity within 10 groups; ScheduleAnyway
//                        zonal spread maxSkew 1.
//   AntiAffinityPods(n)  every pod has required hostname anti-affinity against every other: one
//                        pod per node.
//   MixedPods(n)         unconstrained pods with the diverse mix's requests (no topology, no
//                        selectors): the shape for comparing plan cost with the lower bound.
//
// Free functions; thread-safe. Pods are owned by the returned PodSet.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/cloudprovider/catalog.h"
#include "dovetail/solver/solver.h"

namespace dovetail::bench {

inline constexpr int kLinearCatalogSize = 400;
inline constexpr double kLinearOnDemandPerVcpu = 0.04;  // USD per vCPU-hour
inline constexpr double kLinearSpotFactor = 0.7;
inline constexpr const char* kLinearZones[] = {"test-zone-a", "test-zone-b", "test-zone-c"};
inline constexpr int kLinearSpotZones = 2;  // spot in the first two zones only

// Millicores and MiB the diverse mix draws requests from.
inline constexpr int64_t kCpuChoices[] = {100, 250, 500, 1000, 1500};
inline constexpr int64_t kMemoryChoices[] = {100, 256, 512, 1024, 2048, 4096};

inline constexpr int kAffinityLabelValues = 7;
inline constexpr int kPreferenceAntiGroups = 10;

// Pods and the pointers the solver takes.
struct PodSet {
  std::vector<std::unique_ptr<apis::core::Pod>> pods;

  std::vector<const apis::core::Pod*> Pointers() const;
  // Appends `other`'s pods (moved).
  void Append(PodSet other);
  size_t size() const { return pods.size(); }
};

// The upstream-shaped synthetic catalog (see above), smallest type first; names
// "linear-0001" ... so that name order is size order.
std::vector<cloudprovider::InstanceTypePtr> LinearCatalog(int count = kLinearCatalogSize);

// A NodePool with no requirements beyond karpenter.sh/nodepool In [name], offering `types`.
solver::PoolTemplate UnconstrainedPool(const std::string& name,
                                       std::vector<cloudprovider::InstanceTypePtr> types);

// The real AWS catalog compiled into Dovetail (cloudprovider/aws_static_data.h: us-east-1, zones
// a/b/c, on-demand prices from data/aws, spot from the aws_catalog.h model).
absl::StatusOr<cloudprovider::Catalog> AwsCatalog();

// Pod generators (see above). `seed` varies the requests; names are "<prefix>-<index>" in
// namespace "default" with unique UIDs.
PodSet DiversePods(int n, uint64_t seed = 1);
PodSet PreferencePods(int n, uint64_t seed = 2);
PodSet AntiAffinityPods(int n, uint64_t seed = 3);
PodSet MixedPods(int n, uint64_t seed = 4);

}  // namespace dovetail::bench
