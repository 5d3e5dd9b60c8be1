// Where pods go: an existing node (NodeState), a NodeClaim the solver is building (Claim: its
// pool, requirements, remaining instance types and offerings, usage), and a pool with its types,
// DaemonSet overhead and remaining limits (PoolInfo). Value types; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dovetail/scheduling/taints.h"
#include "dovetail/solver/internal/names.h"
#include "dovetail/solver/internal/offerings.h"
#include "dovetail/solver/internal/pod_class.h"
#include "dovetail/solver/internal/resources.h"
#include "dovetail/solver/solver.h"
#include "dovetail/solver/type_set.h"

namespace dovetail::solver::internal {

struct NodeState {
  const ExistingNode* node = nullptr;
  Requirements label_reqs;
  Amounts allocatable;
  Amounts used;
  std::vector<HostPort> ports;
  std::vector<Taint> effective_taints;
  StringMap labels;
  std::vector<const Pod*> placed;
};

struct Claim {
  int pool = 0;
  int hostname_domain = 0;
  std::string hostname;
  Requirements reqs;
  PairMask pairs;
  TypeSet types;
  // Summaries of `types`: the element-wise largest room a type offers (after DaemonSet overhead),
  // kept in step; every pair some type has an available offering in, recomputed when needed.
  Amounts max_room;
  mutable PairMask offered;
  mutable bool offered_stale = true;
  Amounts used;
  std::vector<HostPort> ports;
  std::vector<int> variants;  // variants already on the claim (requirements merged)
  std::vector<const Pod*> pods;
  bool min_values_relaxed = false;
  double price = -1;  // ClaimPrice(types, pairs) for the price guard; -1 when not known
};

struct PoolInfo {
  const PoolTemplate* t = nullptr;
  TypeSet types;                  // types new NodeClaims may use (after the improvement pass's cap)
  TypeSet all_types;              // every type of the pool: where topology domains come from
  std::vector<Amounts> overhead;  // per global type index (only pool types are meaningful)
  std::vector<Amounts> effective;  // allocatable minus overhead, per global type index
  std::vector<HostPort> ds_ports;
  std::optional<Amounts> remaining;  // limits
  std::optional<int64_t> remaining_nodes;
  bool has_prefer_no_schedule = false;
  // FitForPool's label and offering filters by the requirements they were computed for (variants
  // of different pod classes usually share requirements).
  struct LabelFit {
    Requirements reqs;
    TypeSet label_match;  // types whose requirements intersect `reqs`
    TypeSet offered;      // ... that also have an available offering `reqs` allows
    PairMask pairs;       // the offerings `reqs` allows
  };
  std::vector<LabelFit> label_fits;
};

}  // namespace dovetail::solver::internal
