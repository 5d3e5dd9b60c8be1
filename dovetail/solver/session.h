// Session: the solver prepared once for a cluster (existing nodes with their bound pods, NodePool
// templates, DaemonSets, pending pods) and then asked many what-if questions of one shape: "if
// these existing nodes were gone, where would their pods, and the pending pods, go?" — the
// simulations of disruption (docs/scheduling.md), one per candidate or candidate set.
//
// Contract: Simulate(removed, moved) returns exactly the Plan that
//   Solve(input') returns, where input' is the base input with
//     - nodes[i] erased for every i in `removed`,
//     - every bound pod whose spec.node_name names an erased node erased,
//     - pods = base.pods followed by `moved` (in that order).
// Questions are independent: each runs on a copy-on-write view of the prepared state (classes,
// pool fits, topology counts, node usage are built once in Create; a question records what it
// changes and undoes it), so the answers do not depend on the order questions are asked in.
//
// Options: the base input's options apply to every question (disruption uses improve=false and
// lower_bound=false).
//
// Pods are not owned: every pointer in the base input and in `moved` must outlive the Session.
// `moved` pods are placed regardless of their spec.node_name.
//
// Thread-compatible: Simulate is const but a Session is used by one thread at a time.
#pragma once

#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "dovetail/solver/solver.h"

namespace dovetail::solver {

class Session {
 public:
  // Errors: as Solve (InvalidArgument for inconsistent input).
  static absl::StatusOr<std::unique_ptr<Session>> Create(Input base);

  virtual ~Session() = default;

  // Errors: InvalidArgument for an index out of range or a null pod; otherwise as Solve.
  virtual absl::StatusOr<Plan> Simulate(std::span<const size_t> removed_nodes,
                                        std::span<const Pod* const> moved_pods) const = 0;

  virtual const Input& base() const = 0;
};

}  // namespace dovetail::solver
