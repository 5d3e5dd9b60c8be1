// The scheduling solver: given pods to place, existing nodes (and in-flight NodeClaims), NodePool
// templates with their instance types and DaemonSets, decide which pods go onto which existing
// node and which new NodeClaims to launch, at the lowest cost it can find, honouring every
// constraint upstream Karpenter's scheduling simulation honours (resources, node selectors and
// affinity, taints, pod (anti-)affinity, topology spread, host ports, volume topology, DaemonSet
// overhead, NodePool weights, limits and minValues). Pure: no I/O, no clock; the same input gives
// the same plan. Used by provisioning, every consolidation simulation, `dovetail simulate` and
// `dovetail explain`.
//
// Algorithm (docs/scheduling.md): pods are grouped into classes (same requests and constraints);
// classes are resolved once against every NodePool (requirements, taints, compatible instance
// types as a TypeSet bitset); pods are placed largest first onto existing nodes, then onto the
// NodeClaims opened in this pass, then onto a new NodeClaim of the first NodePool (by weight) that
// can host them, relaxing preferences one step at a time on failure as upstream does. New
// NodeClaims stay flexible (every instance type that still fits) until the end, when they are
// priced with the cheapest available offering. Several packings are tried and the cheapest kept.
//
// Thread-compatible: a Solver is used by one thread; distinct Solvers may run concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "dovetail/apis/core/meta.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/cloudprovider/catalog.h"
#include "dovetail/common/quantity.h"
#include "dovetail/scheduling/requirements.h"

namespace dovetail::solver {

using apis::core::Pod;
using apis::core::StringMap;
using cloudprovider::InstanceTypePtr;

// A NodePool as the solver sees it (upstream's NodeClaimTemplate).
struct PoolTemplate {
  std::string name;
  int32_t weight = 0;
  // The pool's requirements plus its template labels (as In); keys normalised.
  scheduling::Requirements requirements;
  StringMap labels;       // template labels
  StringMap annotations;  // template annotations
  std::vector<apis::core::Taint> taints;
  std::vector<apis::core::Taint> startup_taints;
  // Remaining room under spec.limits (limits minus what the pool's nodes already have); nullopt:
  // no limits. A resource absent from the list is unlimited; `nodes` counts nodes.
  std::optional<ResourceList> remaining_limits;
  // The types the pool may launch (already filtered by the NodeClass, in any order).
  std::vector<InstanceTypePtr> instance_types;
  // USD per hour each of the pool's NodeClaims adds to its offering's effective price (what the
  // user values per node: scenario/pool_template.h kNodeOverheadAnnotationKey). >= 0.
  double node_overhead_per_hour = 0;
};

// A node that exists or is being launched (an in-flight NodeClaim without a Node yet).
struct ExistingNode {
  std::string name;
  StringMap labels;
  std::vector<apis::core::Taint> taints;
  ResourceList allocatable;
  std::string node_pool;    // "" when not managed by Dovetail
  bool initialized = true;  // false: startup and known-ephemeral taints are ignored
  std::vector<std::string> startup_taint_keys;
};

// One DaemonSet, as the pod it would run on a new node.
struct DaemonSetPod {
  std::string name;  // namespace/name of the DaemonSet
  const Pod* pod = nullptr;
};

struct Options {
  // PREFERENCE_POLICY=Respect: preferred affinities and ScheduleAnyway spread constraints are
  // treated as required until relaxed. Ignore: they are dropped up front.
  bool respect_preferences = true;
  // MIN_VALUES_POLICY=Strict: a NodeClaim that cannot keep minValues distinct values is not used.
  // BestEffort: minValues is lowered to what is achievable and the claim is marked relaxed.
  bool min_values_strict = true;
  // Instance types listed on a NodeClaim (cheapest first).
  size_t max_instance_types = 600;
  // Try several packings (different node size caps) and keep the cheapest plan.
  bool improve = true;
  // Compute the LP lower bound of the plan's cost.
  bool lower_bound = true;
};

struct Input {
  std::vector<const Pod*> pods;           // pods to place
  std::vector<ExistingNode> nodes;        // existing nodes and in-flight NodeClaims
  std::vector<PoolTemplate> pools;        // in any order; tried by weight desc, name desc
  std::vector<const Pod*> bound_pods;     // pods already on `nodes` (requests and topology)
  std::vector<DaemonSetPod> daemon_sets;  // overhead on new nodes and missing on existing ones
  absl::flat_hash_map<std::string, StringMap> namespace_labels;
  // Per pod (by pointer): alternatives of volume topology requirements (PV node affinity terms or
  // StorageClass allowed topologies); the pod may use any one alternative.
  absl::flat_hash_map<const Pod*, std::vector<scheduling::Requirements>> volume_requirements;
  Options options;
};

struct NewNodeClaim {
  std::string pool;
  std::string hostname;  // placeholder, unique in the plan
  // Final requirements: pool ∩ pods ∩ topology, plus instance-type and capacity-type In lists.
  scheduling::Requirements requirements;
  std::vector<InstanceTypePtr> instance_types;  // launchable options, cheapest first
  // The offering the plan is priced with: the available compatible one of the lowest effective
  // price (cloudprovider::Offering::EffectivePrice). `price` is its offering price,
  // `effective_price` its effective price plus `node_overhead`, the pool's
  // (PoolTemplate::node_overhead_per_hour): whoever re-prices the claim keeps the overhead.
  std::string instance_type;
  std::string zone;
  std::string capacity_type;
  double price = 0;
  double effective_price = 0;
  double node_overhead = 0;
  ResourceList requests;  // pods' requests plus DaemonSet overhead
  StringMap labels;       // resolved node labels
  std::vector<apis::core::Taint> taints;
  std::vector<apis::core::Taint> startup_taints;
  std::vector<const Pod*> pods;
  bool min_values_relaxed = false;
};

struct ExistingPlacement {
  std::string node;
  std::vector<const Pod*> pods;
};

struct Unschedulable {
  const Pod* pod = nullptr;
  std::string reason;
};

struct Plan {
  std::vector<NewNodeClaim> node_claims;
  std::vector<ExistingPlacement> existing;  // only nodes that receive pods, in input order
  std::vector<Unschedulable> unschedulable;
  double total_price = 0;            // sum of node_claims' prices, per hour
  double total_effective_price = 0;  // sum of node_claims' effective prices: what plans minimise
  // LP bound on the effective cost of any plan for these pods.
  std::optional<double> lower_bound;
  std::string lower_bound_error;  // why there is no bound, when there is none
};

// Errors: InvalidArgument for inconsistent input (null pods, duplicate pool names); never for pods
// that cannot be placed (those are reported in Plan::unschedulable with a reason).
absl::StatusOr<Plan> Solve(const Input& input);

// The LP lower bound (lower_bound.h) on the cost of any plan that places the pods `plan` places
// (input.pods minus plan.unschedulable) next to the input's existing nodes: each pod's class taken
// at its most relaxed. Solve sets Plan::lower_bound with it when options.lower_bound is on; a
// caller that times the bound apart solves without it and calls this. Errors: InvalidArgument as
// Solve; the LP's error when it cannot be solved. Pure function; thread-safe.
absl::StatusOr<double> LowerBound(const Input& input, const Plan& plan);

}  // namespace dovetail::solver
