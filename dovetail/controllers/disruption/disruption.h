// The decisions of voluntary disruption (docs/disruption.md), as pure functions over one
// ClusterView so they are unit-tested without a cluster. The DisruptionController
// (disruption_controller.h) builds the view from cluster state and informers each pass, asks
// ComputeCommands for each method in order, validates consolidation commands after the delay
// (ValidateCommand) and carries commands out through the orchestration queue (queue.h).
//
// Methods, in upstream's (v1.5+) order: Emptiness (budget reason Empty), Drift (Drifted),
// multi-node consolidation and single-node consolidation (Underutilized).
//
// Candidates: a managed StateNode with Node and NodeClaim, initialized, not deleting, not
// marked for deletion, not held by the orchestration queue, not nominated, Node not annotated
// karpenter.sh/do-not-disrupt=true, with a karpenter.sh/nodepool label whose NodePool and instance
// type resolve; no pod with an active karpenter.sh/do-not-disrupt (DaemonSet and mirror pods
// count) and no evictable pod blocked by a PodDisruptionBudget (matched by more than one, or by
// one with disruptionsAllowed 0, unless AlwaysAllow and the pod is not ready). Drift ignores the
// pod-level blocks when the NodeClaim has terminationGracePeriod. Method predicates: Emptiness:
// consolidateAfter not Never, empty, Consolidatable=True (all policies); Drift: Drifted=True;
// consolidation: instance type, zone and capacity type known, consolidateAfter not Never, not
// empty, policy not WhenEmpty, Consolidatable=True. Every node that fails is explained.
//
// Beyond upstream (opt-in, defaults keep upstream behaviour): a global multi-node search, a
// minimum savings per hour and a minimum node age for consolidation (Options, overridable per
// NodePool by the annotations below), an Explanation for every node looked at.
//
// Pure: no I/O; time comes from ClusterView::now (and the search time limits, measured with the
// clock passed in). Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dovetail/apis/core/namespace.h"
#include "dovetail/apis/core/pod_disruption_budget.h"
#include "dovetail/apis/core/workloads.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/cloudprovider/instance_type.h"
#include "dovetail/common/clock.h"
#include "dovetail/scenario/pod_cache.h"
#include "dovetail/scenario/scenario.h"
#include "dovetail/solver/solver.h"
#include "dovetail/state/snapshot.h"

namespace dovetail::controllers::disruption {

// NodePool annotations (Dovetail's, opt-in): consolidation commands whose savings are below the
// value ($/h, decimal) are not taken; nodes younger than the duration (Go duration) are not
// consolidation candidates.
inline constexpr std::string_view kMinSavingsAnnotationKey =
    "dovetail.sh/consolidation-min-savings";
inline constexpr std::string_view kMinNodeAgeAnnotationKey =
    "dovetail.sh/consolidation-min-node-age";

// Upstream's: at least this many cheaper spot types for single-node spot-to-spot replacement,
// and the launch list is cut to that many.
inline constexpr size_t kMinInstanceTypesForSpotToSpot = 15;

enum class Method { kEmptiness, kDrift, kMultiNodeConsolidation, kSingleNodeConsolidation };
inline constexpr Method kMethodOrder[] = {Method::kEmptiness, Method::kDrift,
                                          Method::kMultiNodeConsolidation,
                                          Method::kSingleNodeConsolidation};
// "emptiness", "drift", "multi-node-consolidation", "single-node-consolidation".
std::string_view MethodName(Method method);
// ConsolidationType and ReasonOf are inline: the queue (queue.h, its own library) uses them
// without the decision layer's definitions.
// The metrics' consolidation_type label: "empty", "" (drift), "multi", "single".
inline std::string_view ConsolidationType(Method method) {
  switch (method) {
    case Method::kEmptiness:
      return "empty";
    case Method::kDrift:
      return "";
    case Method::kMultiNodeConsolidation:
      return "multi";
    case Method::kSingleNodeConsolidation:
      return "single";
  }
  return "";
}
// The reason of a method's commands: Empty, Drifted, Underutilized (consolidation).
inline apis::v1::DisruptionReason ReasonOf(Method method) {
  switch (method) {
    case Method::kEmptiness:
      return apis::v1::DisruptionReason::kEmpty;
    case Method::kDrift:
      return apis::v1::DisruptionReason::kDrifted;
    case Method::kMultiNodeConsolidation:
    case Method::kSingleNodeConsolidation:
      return apis::v1::DisruptionReason::kUnderutilized;
  }
  return apis::v1::DisruptionReason::kUnderutilized;
}
// Graceful methods are validated after the delay; drift (eventual) is not.
bool IsConsolidation(Method method);  // emptiness, multi, single

struct Options {
  bool spot_to_spot = false;  // feature gate SpotToSpotConsolidation
  bool respect_preferences = true;
  bool min_values_strict = true;
  // Multi-node: evaluate every prefix size instead of upstream's binary search (opt-in).
  bool global_multi_node_search = false;
  size_t max_multi_node_batch = 100;
  absl::Duration multi_node_timeout = absl::Minutes(1);
  absl::Duration single_node_timeout = absl::Minutes(3);
  // Churn guards (defaults: off); NodePool annotations override per pool.
  double min_savings_per_hour = 0;
  absl::Duration min_node_age = absl::ZeroDuration();
};

// Everything a pass reads, taken at one instant: the solver question's objects
// (scenario/scenario.h: snapshot, pending pods, NodePools with their instance types, DaemonSets,
// namespaces) plus what only disruption reads.
struct ClusterView : scenario::Scenario {
  std::vector<apis::core::PodDisruptionBudget> pdbs;
  absl::flat_hash_set<std::string> queued;  // StateNode keys held by the orchestration queue
};

struct Candidate {
  state::StateNode node;
  std::string name;        // Node name
  std::string node_claim;  // NodeClaim name
  std::string node_pool;
  std::string instance_type;
  std::string zone;
  std::string capacity_type;
  // The effective price (cloudprovider::Offering::EffectivePrice) of the offering for the node's
  // zone and capacity type: what consolidation saves by removing it.
  double price = 0;
  // Upstream's DisruptionCost, Σ evictionCost(pod) × lifetime remaining, and its
  // RescheduleDisruptionCost, 1 + Σ max(0, evictionCost) over the reschedulable pods.
  double disruption_cost = 0;
  double reschedule_disruption_cost = 1;
  std::vector<state::PodPtr> pods;           // every pod bound to the node
  std::vector<state::PodPtr> reschedulable;  // the pods that must find room elsewhere
  bool empty = false;
  std::optional<absl::Time> drifted_since;  // Drifted=True transition time
};

// Why a node was or was not disrupted by a method in a pass (read by `dovetail explain node`).
struct Explanation {
  std::string node;
  std::string node_claim;
  std::string node_pool;
  Method method = Method::kEmptiness;
  bool disrupted = false;
  // Event reason when the explanation deserves one: "DisruptionBlocked" (candidate filtering),
  // "Unconsolidatable" (a consolidation simulation refused), "" (no event).
  std::string event_reason;
  std::string message;      // e.g. `pdb "default/web" prevents pod evictions`
  std::string decision_id;  // of the started command (disrupted), launch/decision_id.h
};

struct Command {
  Method method = Method::kEmptiness;
  std::vector<Candidate> candidates;
  // 0: delete; else the NodeClaims to launch first (consolidation: at most 1). Their `pods`
  // pointers are cleared (they pointed into the simulation).
  std::vector<solver::NewNodeClaim> replacements;
  // Existing nodes the simulation puts the moved pods on; nominated while the command runs so
  // that no other command removes them (docs/disruption.md, "The orchestration queue").
  std::vector<std::string> destinations;
  double savings_per_hour = 0;  // Σ candidate prices − Σ replacement prices
  int pods_moved = 0;
  // Set when the command is started (launch/decision_id.h): annotation
  // dovetail.sh/decision-id on the candidate and replacement NodeClaims, `decision=ID` in the
  // DisruptionDecision event and the queue's log lines.
  std::string decision_id;
  apis::v1::DisruptionReason reason() const { return ReasonOf(method); }
  std::string_view Decision() const { return replacements.empty() ? "delete" : "replace"; }
  // One line for events and logs: "replace 2 nodes (...) with 1 (m5.large, spot), saving
  // $0.0912/h, moving 17 pods".
  std::string Summary() const;
};

// Per NodePool, the disruptions a method may still start this pass (docs/disruption.md,
// "Budgets"): AllowedDisruptions over the pool's managed initialized nodes minus the nodes already
// disrupting (NotReady, deleting, marked for deletion or queued). Pools absent from `remaining`
// have no nodes.
struct BudgetMapping {
  absl::flat_hash_map<std::string, int64_t> remaining;
  // Nodes of the pool already disrupting (not ready, deleting, marked or queued), which the
  // remaining budget excludes (karpenter_nodepools_nodes_consuming_budgets).
  absl::flat_hash_map<std::string, int64_t> consuming;
  std::vector<std::string> errors;  // invalid budgets, "nodepool/name: ..."
  int64_t Remaining(std::string_view pool) const;
  void Take(std::string_view pool);  // one fewer (never below 0)
};
BudgetMapping BuildBudgetMapping(const ClusterView& view, apis::v1::DisruptionReason reason);

// The method's candidates in its order (emptiness/consolidation: descending price /
// RescheduleDisruptionCost; drift: oldest Drifted first, empty ones first); nodes that fail
// are appended to `*explanations` (if not null).
std::vector<Candidate> GetCandidates(const ClusterView& view, Method method, const Options& options,
                                     std::vector<Explanation>* explanations);

// The scheduling simulation of disruption, prepared once per view (solver::Session).
class Simulator {
 public:
  struct Result {
    solver::Plan plan;
    // Pods that were not pending before (candidates' pods, pods of deleting nodes) and found no
    // room, with the solver's reason.
    std::vector<std::pair<std::string, std::string>> unschedulable;  // pod key, reason
    // Pods the plan puts on an existing node that is not initialized (consolidation refuses).
    bool uses_uninitialized_nodes = false;
  };
  // `pods`, when not null, keeps the solver's pod conversions between simulators (one per pass:
  // scenario/pod_cache.h). Errors: InvalidArgument for a view the solver cannot take.
  static absl::StatusOr<std::unique_ptr<Simulator>> Create(const ClusterView& view,
                                                           const Options& options,
                                                           scenario::PodCache* pods = nullptr);
  virtual ~Simulator() = default;
  // Removes the candidates' nodes and places their reschedulable pods plus the pending pods and
  // the pods of deleting nodes.
  virtual absl::StatusOr<Result> Simulate(std::span<const Candidate> candidates) const = 0;
};

// A consolidation move a method settled on, per NodePool of its candidates (what upstream's
// karpenter_consolidation_moves_total and karpenter_consolidation_score count).
struct ConsolidationMove {
  std::string node_pool;
  std::string policy;           // the pool's consolidationPolicy
  bool approved = true;         // the move as a whole
  std::optional<double> score;  // a Balanced pool's score
  bool score_approved = true;   // that pool's verdict
};

struct MethodResult {
  std::vector<Command> commands;
  std::vector<Explanation> explanations;
  size_t eligible = 0;  // the method's candidates (karpenter_voluntary_disruption_eligible_nodes)
  bool timed_out = false;  // a consolidation search stopped at its time limit
  std::vector<ConsolidationMove> moves;
};

// Runs one method, taking budget from `budgets` for every command it returns.
// `clock` measures the search time limits. Errors: those of the simulation.
absl::StatusOr<MethodResult> ComputeCommands(Method method, const ClusterView& view,
                                             const Simulator& simulator, BudgetMapping& budgets,
                                             const Options& options, const Clock& clock);

// Re-checks a consolidation or emptiness command against a fresh view taken after the validation
// delay (docs/disruption.md, "Validation"). OK, or FailedPrecondition with the reason (a candidate
// is no longer one, is nominated, over budget, the pods no longer fit, the replacement changed
// shape or its types are no longer a subset of the fresh simulation's).
absl::Status ValidateCommand(const Command& command, const ClusterView& fresh,
                             const Simulator& fresh_simulator, const Options& options);

// Emptiness after the delay keeps its still-valid subset, as upstream's does: the command with
// only the candidates that are still empty candidates (not nominated) within the fresh budget, in
// order. FailedPrecondition when none is left.
absl::StatusOr<Command> ValidEmptinessSubset(const Command& command, const ClusterView& fresh,
                                             const Options& options);

}  // namespace dovetail::controllers::disruption
