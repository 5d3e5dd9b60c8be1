// PlanValidator: an independent checker of solver plans. Given the solver's Input and a Plan, it
// materialises the cluster the plan describes (existing nodes with their bound pods, plus one node
// per new NodeClaim built from the chosen instance type's allocatable, the chosen offering and
// the claim's resolved labels and taints) and re-checks every constraint from that output alone,
// with Kubernetes' and Karpenter's semantics. It never calls into the solver (solver.cc,
// solver/internal/); it shares only the vocabulary (requirements, taints, label selectors, pod
// requests).
//
// What is checked (each violation names the pod, node, NodeClaim or NodePool it concerns):
//  - accounting: every input pod appears exactly once (placed or unschedulable, with a reason);
//    nothing else is placed; existing placements name input nodes;
//  - NodeClaims: the pool exists; the chosen instance type is one of the options; every option
//    belongs to the pool, intersects the pool's and the claim's requirements and has an available
//    offering compatible with them; the chosen offering (zone, capacity type) is available,
//    admitted by the claim's requirements, priced as reported and the cheapest of the claim's
//    options; labels agree with the type, offering, pool and requirements; taints include the
//    pool's; minValues; no more options than Options::max_instance_types; no empty claims; unique
//    hostnames; requests cover the pods and fit every option;
//  - per pod on its node: resources (bound pods + placed pods + DaemonSets that run there, per
//    resource, against allocatable), nodeSelector and required node affinity, NoSchedule/NoExecute
//    taints, volume topology, host ports (pods and DaemonSets);
//  - robustness of each NodeClaim: the cloud provider may launch any option in any available
//    offering the claim's requirements admit, so selectors, resources and host ports are re-checked
//    for every such launch variant; spread and affinity domains must be pinned to one value; for
//    anti-affinity a claim occupies every domain it may launch into;
//  - pod affinity and anti-affinity (required terms; namespaces, namespaceSelector, matchLabelKeys
//    and mismatchLabelKeys; existing pods' anti-affinity against new pods) and topology spread
//    (DoNotSchedule; maxSkew, minDomains, nodeAffinityPolicy, nodeTaintsPolicy, matchLabelKeys) in
//    kube-scheduler's semantics, extended as Karpenter does with the domains a NodePool could still
//    launch into. Because these depend on the order pods bind, the new pods are replayed: a pod
//    binds once its constraints hold against the pods bound so far (the self-affinity bootstrap
//    rule included); pods that never can are violations;
//  - NodePool limits (the largest option of each claim, as Karpenter accounts them, and the node
//    count) and the plan's total price.
// Semantic choices, where Kubernetes and Karpenter leave room: several required pod-affinity terms
// are checked term by term (the API's "all terms must be satisfied"; kube-scheduler's
// implementation only counts pods that match every term); a spread constraint's domains are those
// of the cluster's nodes plus every value a NodePool could still launch into (zone and capacity
// type from available offerings only; a fresh node for the hostname key), filtered by the node
// inclusion policies; a DaemonSet runs where its pod tolerates the NoSchedule/NoExecute taints and
// matches the node's labels.
// Soft constraints (preferred affinities, ScheduleAnyway, PreferNoSchedule) are not checked.
// Bound pods that are terminal do not use resources; terminal or terminating ones are not counted
// for topology. Violations among pods that were already bound are not the plan's and not reported.
//
// Used by the solver's tests (unit and property tests); its checks live in solver/plan_validator/.
// Stateless function; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dovetail/solver/solver.h"

namespace dovetail::solver {

enum class ViolationKind {
  kPodMissing,       // an input pod is neither placed nor unschedulable
  kPodDuplicated,    // a pod appears more than once
  kUnknownPod,       // a placed pod is not an input pod
  kUnknownNode,      // an existing placement names a node that is not in the input
  kMissingReason,    // an unschedulable pod without a reason
  kUnknownPool,      // a NodeClaim of a pool that is not in the input
  kInstanceType,     // chosen type not an option; option not in the pool or incompatible
  kOffering,         // chosen offering unavailable, inadmissible, or not the cheapest
  kPrice,            // claim price differs from its offering, or total differs from the sum
  kNodeMetadata,     // labels or taints inconsistent with type, offering, pool or requirements
  kMinValues,        // options cover fewer distinct values than minValues
  kLimits,           // NodePool limits exceeded
  kEmptyNodeClaim,   // a NodeClaim without pods
  kRequests,         // NodeClaim requests do not cover its pods or exceed an option
  kResources,        // requests + DaemonSet overhead exceed a node's allocatable
  kNodeAffinity,     // nodeSelector or required node affinity not satisfied
  kTaints,           // an untolerated NoSchedule/NoExecute taint
  kVolumeTopology,   // no volume topology alternative is satisfied
  kHostPorts,        // host port conflict
  kPodAffinity,      // required pod affinity not satisfied
  kPodAntiAffinity,  // required pod anti-affinity violated (either direction)
  kTopologySpread,   // DoNotSchedule topology spread violated
  kTopologyDomain,   // a NodeClaim's spread/affinity domain is not pinned to one value
};

std::string_view ViolationKindName(ViolationKind kind);

struct Violation {
  ViolationKind kind;
  std::string subject;  // "pod ns/name", "nodeclaim <hostname>", "node <name>", "nodepool <name>"
  std::string message;

  // "<Kind> <subject>: <message>".
  std::string ToString() const;
};

// Every violation of `plan` for `input`, in a deterministic order; empty when the plan is valid.
std::vector<Violation> ValidatePlan(const Input& input, const Plan& plan);

}  // namespace dovetail::solver
