// The on-demand base of a NodePool (Dovetail's, opt-in; docs/scheduling.md "On-demand base"): the
// NodePool annotation dovetail.sh/on-demand-base asks that, among the pool's NodeClaims that are
// not going away (launched or in flight; not deleting, not marked for deletion), at least
//   "N"  -> min(N, total) NodeClaims, or
//   "P%" -> ceil(P × total / 100) NodeClaims
// run on karpenter.sh/capacity-type on-demand, so that a spot reclaim cannot take the whole pool.
// `total` counts the pool's NodeClaims after the change being decided (a launch or a disruption).
//
// The base only changes a NodeClaim that admits both spot and on-demand: which capacity type a
// launch gets is the cloud provider's choice among the offerings the NodeClaim's requirements
// allow (spot is preferred when allowed), so narrowing the requirement to on-demand is enough.
// Reserved capacity does not count towards the base.
//
// Callers: the provisioner narrows the first new NodeClaims of a pool with a deficit
// (ApplyOnDemandBase, after the solve, before the NodeClaims are built); disruption keeps
// consolidation from taking a pool below its base (disruption/methods.cc), narrowing a
// replacement with the same NarrowToOnDemand. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/scheduling/requirements.h"
#include "dovetail/solver/solver.h"
#include "dovetail/state/state_node.h"

namespace dovetail::controllers::launch {

inline constexpr std::string_view kOnDemandBaseAnnotationKey = "dovetail.sh/on-demand-base";

struct OnDemandBase {
  int64_t count = 0;               // "N"
  std::optional<int64_t> percent;  // "P%" (0-100); when set, `count` is unused

  // The on-demand NodeClaims a pool of `total` NodeClaims needs.
  int64_t Required(int64_t total) const;
  // The annotation's value: "2" or "25%".
  std::string String() const;
};

// "N" (a decimal integer >= 0) or "P%" (a decimal integer 0-100 followed by %); surrounding
// whitespace is ignored. Errors: InvalidArgument naming the value and the expected forms.
absl::StatusOr<OnDemandBase> ParseOnDemandBase(std::string_view value);

// The pool's base: nullopt without the annotation. Errors: those of ParseOnDemandBase, prefixed
// with the NodePool's name.
absl::StatusOr<std::optional<OnDemandBase>> OnDemandBaseOf(const apis::v1::NodePool& node_pool);

// The karpenter.sh/capacity-type requirement admits on-demand and spot.
bool AllowsSpotAndOnDemand(const scheduling::Requirements& requirements);
// The karpenter.sh/capacity-type requirement admits on-demand and nothing else.
bool OnDemandOnly(const scheduling::Requirements& requirements);

// The machine is (or, in flight, will be) on on-demand capacity: its karpenter.sh/capacity-type
// label (the Node's, else the NodeClaim's), else its NodeClaim's requirement admits on-demand only.
bool IsOnDemand(const state::StateNode& node);

struct CapacityCount {
  int64_t total = 0;
  int64_t on_demand = 0;
};

// Per NodePool name: the managed machines (NodeClaims, launched or in flight) that are neither
// deleting nor marked for deletion, and how many of them are on-demand (IsOnDemand).
absl::flat_hash_map<std::string, CapacityCount> CountCapacityTypes(
    std::span<const state::StateNode> nodes);

// Narrows a planned NodeClaim to on-demand: capacity-type In [on-demand]; the instance types cut
// to those with an available on-demand offering compatible with the claim's other requirements
// (zone, ...), cheapest first by that offering; the instance-type In list to match (minValues
// kept); the priced offering (instance_type, zone, capacity_type, price) to the cheapest one.
// Errors (the claim is left unchanged): FailedPrecondition when the claim does not admit
// on-demand, no instance type keeps a compatible on-demand offering, or minValues would no longer
// hold.
absl::Status NarrowToOnDemand(solver::NewNodeClaim& claim);

struct OnDemandBaseOutcome {
  std::string pool;
  OnDemandBase base;
  int64_t total = 0;      // the pool's NodeClaims after the launch (existing + new)
  int64_t required = 0;   // base.Required(total)
  int64_t on_demand = 0;  // on-demand NodeClaims after the launch, narrowed ones included
  int64_t narrowed = 0;   // new NodeClaims narrowed to on-demand
  // Why new NodeClaims that admit spot and on-demand could not be narrowed (hostname: reason).
  std::vector<std::string> failures;
  bool Met() const { return on_demand >= required; }
};

// For each pool of `bases` that has new NodeClaims in `claims`: total = existing.total + the new
// ones; on-demand = existing.on_demand + the new ones that admit on-demand only; while on-demand is
// below base.Required(total), narrows the next new NodeClaim of the pool (plan order) that admits
// both spot and on-demand (NarrowToOnDemand; a failure is recorded and the next one is tried).
// Pools absent from `existing` have no NodeClaims yet. Outcomes are sorted by pool name.
std::vector<OnDemandBaseOutcome> ApplyOnDemandBase(
    std::span<solver::NewNodeClaim> claims,
    const absl::flat_hash_map<std::string, OnDemandBase>& bases,
    const absl::flat_hash_map<std::string, CapacityCount>& existing);

}  // namespace dovetail::controllers::launch
