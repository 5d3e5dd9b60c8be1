// The one solver input of a Scenario (scenario.h): what provisioning solves every pass, what the
// disruption simulator prepares its session from and what `dovetail explain pod` asks.
//
// Nodes: every launched, active StateNode, with its bound pods (solver_nodes.h).
// Pods to place, ordered by namespace/name: the pending pods that are not ignored (pod_filter.h;
// the ignored ones are returned, in the same order, with their reason for the caller's events),
// then the reschedulable pods of nodes going away (marked for deletion or deleting: their room is
// made ahead of the drain), with spec.nodeName cleared.
//
// NodePools, by name: a pool is left out, with the reason, when it is being deleted, static
// (spec.replicas), not Ready (Ready=False/Unknown, or no Ready condition when
// `require_ready_node_pools`), its instance types are unknown, its template does not parse, or no
// instance type is compatible with its requirements and has an available offering they allow.
// Every other pool becomes a solver::PoolTemplate holding exactly its compatible types and the
// room left under its limits.
//
// DaemonSets, by namespace/name (except those with DRA requirements, as upstream), become the pods
// they run on a new node; namespaces give their labels.
//
// Volume topology (volume_topology.h) constrains the pods to place and the bound pods (which
// disruption may move).
//
// Pods are converted from the compact PodInfo (state/pod_conversion.h) once per pod version when
// the options name a PodCache (pod_cache.h), which the build sweeps at its end; else each build
// converts every pod it reads.
//
// Pure but for the cache; thread-compatible. SolverQuestion holds everything its `input` points
// into; moving it keeps the pointers valid (heap objects), copying it is not allowed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/scenario/pod_cache.h"
#include "dovetail/scenario/scenario.h"
#include "dovetail/scenario/solver_nodes.h"
#include "dovetail/solver/solver.h"

namespace dovetail::scenario {

struct InputOptions {
  // Only NodePools with Ready=True; when false, a pool without a Ready condition is used too.
  bool require_ready_node_pools = false;
  // Copied into the input's options.
  solver::Options solver;
  // Keeps the converted pods between builds; null converts every pod each build. Not owned.
  PodCache* pods = nullptr;
};

// A NodePool the question leaves out, and why.
struct SkippedNodePool {
  enum class Why {
    kDeleting,
    kStatic,
    kNotReady,
    kInstanceTypes,  // GetInstanceTypes failed (`error`)
    kInvalid,        // the template does not parse (`error`)
    kNoCompatibleInstanceTypes,
  };
  std::string name;
  Why why = Why::kDeleting;
  std::string reason;  // for people: `dovetail explain pod` prints it
  absl::Status error;  // kInstanceTypes, kInvalid
};

// The event note provisioning records on a pool skipped for kNoCompatibleInstanceTypes.
inline constexpr char kNoCompatibleInstanceTypesMessage[] =
    "NodePool requirements filtered out all compatible available instance types";

// A pending pod the question leaves out (pod_filter.h).
struct IgnoredPod {
  SharedPod pod;
  std::string message;  // the FailedScheduling note's reason, "" when `silent`
  bool silent = false;  // the pod opted out: no event
};

struct SolverQuestion {
  SolverNodes existing;
  std::vector<SharedPod> pods;                                // to place, in `input.pods` order
  std::vector<std::unique_ptr<apis::core::Pod>> daemon_pods;  // in `input.daemon_sets` order
  solver::Input input;
  std::vector<SkippedNodePool> skipped;
  std::vector<IgnoredPod> ignored;
  // The pods of nodes going away, among `pods`.
  absl::flat_hash_set<const apis::core::Pod*> rescheduled;
};

SolverQuestion BuildSolverInput(const Scenario& scenario, const InputOptions& options);

}  // namespace dovetail::scenario
