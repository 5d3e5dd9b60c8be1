// SessionShortcut: the solver's build phase (resources, instance types, pools, existing nodes,
// pod classes for the pending pods and for every bound pod, topology groups and counts) done once
// for a base input, then asked Session's questions: which nodes are gone and which pods move.
// Each question runs the placement on the prepared state with an undo log (node usage, topology
// counts, domains, NodeClaims, cursors, pool limits) and restores it before returning.
//
// Internal to dovetail/solver: only Session (session.cc) uses it. Simulate answers nullopt when
// the shortcut cannot promise the plan Solve gives on the reduced input (a removed node that
// shapes the topology domains or a resource dimension, a moved pod of an unknown class, a
// selector key only the removed pods read, ...); the caller then solves the reduced input.
// Create returns null when no question can take the shortcut (the improvement pass or the lower
// bound is on, duplicate node names, ...).
//
// Thread-compatible: Simulate mutates the prepared state while it runs.
#pragma once

#include <memory>
#include <optional>
#include <span>

#include "absl/status/statusor.h"
#include "dovetail/solver/solver.h"

namespace dovetail::solver::internal {

class SessionShortcut {
 public:
  // `base` must outlive the SessionShortcut.
  static std::unique_ptr<SessionShortcut> Create(const Input& base);

  virtual ~SessionShortcut() = default;

  // Indices must be in range and pods non-null (Session checks).
  virtual std::optional<absl::StatusOr<Plan>> Simulate(std::span<const size_t> removed_nodes,
                                                       std::span<const Pod* const> moved_pods) = 0;
};

}  // namespace dovetail::solver::internal
