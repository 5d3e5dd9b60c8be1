// DisruptionController: voluntary disruption (docs/disruption.md, "The loop"): a singleton loop
// that finds nodes to remove or replace (the pure decisions of disruption.h) and carries them out
// through the orchestration queue (queue.h).
//
// Start():
//   - waits for the cluster state (deps.cluster.Synced()) and the shared informers it reads
//     (NodePools, policy/v1 PodDisruptionBudgets, DaemonSets, Namespaces);
//   - crash recovery (RemoveStaleMarks): every karpenter.sh/disrupted taint and DisruptionReason
//     condition on nodes and NodeClaims that the queue does not hold, that are neither being
//     deleted nor marked for deletion and that record no involuntary command
//     (involuntary_record.h) is removed (a kill -9 between tainting and deleting leaves
//     them behind); retried every poll_interval until it succeeds;
//   - then passes (RunOnce) back to back while they start commands, else every poll_interval,
//     or sooner (but not within min_pass_interval of the previous pass) when a NodeClaim is
//     added, deleted or changes its conditions or status.lastPodEventTime (a node may have become
//     Consolidatable, Drifted or empty: upstream waits the whole 10 s); each pass first waits for
//     the cluster state to be synced again (replacement NodeClaims that have not launched yet
//     hold it).
// A pass builds a ClusterView (BuildView: the state snapshot first, then the provisionable pending
// pods from the shared pod informer, the NodePools with defaults applied and their instance types
// from deps.cloud, PDBs, DaemonSets, namespace labels and the queue's held keys), creates a
// Simulator and, for each method in kMethodOrder, builds the BudgetMapping for its reason and
// calls ComputeCommands. Consolidation and emptiness commands are validated: after
// validation_delay a fresh view and Simulator are taken and ValidateCommand is asked (in the
// loop's passes without blocking: the commands wait in a deferred list, their candidates held like
// queued ones, while later passes go on; Dovetail's, upstream blocks its loop); a failure
// is a ConsolidationRejected event on the candidates and
// karpenter_voluntary_disruption_failed_validations_total. Drift commands are not validated.
// Valid commands go to Queue::StartCommand; the pass stops after the first method that started at
// least one command.
//
// Events (deps.events): for every Explanation with an event reason (Unconsolidatable,
// DisruptionBlocked) an event on its Node and NodeClaim with the message; for every started
// command a DisruptionDecision event (Dovetail's) on each candidate Node and NodeClaim with
// Command::Summary() and the command's decision ID ("... (decision=ID)"; the ID is also the
// dovetail.sh/decision-id annotation the queue puts on the candidate and replacement NodeClaims,
// and the "decisionId" field of the queue's log lines). The latest Explanation per node is kept
// (explanations()) for `dovetail explain node` and /disruption/explanations on the metrics
// endpoint.
//
// Metrics (when deps.metrics is set): karpenter_voluntary_disruption_decisions_total{decision,
// reason, consolidation_type} and _decisions_by_nodepool_total{nodepool, ...} (one per NodePool
// of the command's candidates), _failed_validations_total{consolidation_type},
// _decision_evaluation_duration_seconds{reason, consolidation_type}, _eligible_nodes{reason} (the
// method's candidates), _consolidation_timeouts_total{consolidation_type} (searches stopped at
// their time limit), karpenter_nodepools_allowed_disruptions{nodepool, reason} (what the pass may
// still start: allowed minus disrupting), karpenter_nodepools_nodes_consuming_budgets{nodepool,
// reason} (the disrupting nodes), karpenter_consolidation_moves_total{decision, nodepool, policy}
// and karpenter_consolidation_score{...} (Balanced pools; disruption.h's ConsolidationMove),
// upstream's karpenter_scheduler_* families with controller="disruption" (each simulation of the
// passes, validations and replacements; launch/scheduler_metrics.h), and the queue's.
//
// Involuntary replacement (Replacer, replacer.h; replace.cc): Replace() runs under the same lock
// as the passes. It takes the node by NodeClaim name, with none of the voluntary filters
// (do-not-disrupt, PDBs, budgets, nomination, node age), simulates the removal of the node alone
// and starts an involuntary queue command (CommandOptions::involuntary) with the simulation's new
// NodeClaims; a node the queue already holds has its command upgraded (Queue::MakeInvoluntary).
// The cluster state's sync gate is waited for at most replace_sync_timeout (replacements that have
// not launched hold it); after that the view is built from the unsynced state as long as the
// informers have listed (unlaunched NodeClaims count with their requests). Events: request.reason
// on the candidate Node and NodeClaim. No voluntary metric counts it.
//
// API errors are logged and the pass retried later; nothing here crashes the loop.
// Thread-safety: Start/Stop from one thread; RunOnce, Replace, explanations() and stats() from any
// thread (passes and replacements are serialised).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "dovetail/apis/core/namespace.h"
#include "dovetail/apis/core/pod_disruption_budget.h"
#include "dovetail/apis/core/workloads.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/common/work_in_progress.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/disruption/disruption.h"
#include "dovetail/controllers/disruption/queue.h"
#include "dovetail/controllers/disruption/replacer.h"
#include "dovetail/controllers/launch/decision_id.h"
#include "dovetail/controllers/launch/scheduler_metrics.h"
#include "dovetail/kube/handler_registration.h"
#include "dovetail/kube/informer.h"
#include "dovetail/metrics/registry.h"

namespace dovetail::controllers::disruption {

// Dovetail's event on the candidates of a started command (upstream has none with the decision).
inline constexpr std::string_view kEventDisruptionDecision = "DisruptionDecision";
inline constexpr std::string_view kEventConsolidationRejected = "ConsolidationRejected";

struct ControllerOptions {
  absl::Duration poll_interval = absl::Seconds(10);  // a pass that started nothing waits this
  // ... unless a NodeClaim changes (see above), but never less than this between passes.
  absl::Duration min_pass_interval = absl::Seconds(1);
  absl::Duration validation_delay = absl::Seconds(15);  // before consolidation commands validate
  // After the delay, how long validation waits for the cluster state to be synced again.
  absl::Duration validation_sync_timeout = absl::Minutes(1);
  Options decisions;  // disruption.h (feature gate, guards)
  QueueOptions queue;
  // How long Replace waits for the cluster state's sync gate before building its view anyway.
  absl::Duration replace_sync_timeout = absl::Seconds(10);
};

struct PassResult {
  std::optional<Method> method;      // the method whose commands were started
  std::vector<std::string> started;  // queue command ids
  int rejected = 0;                  // commands that failed validation or StartCommand
  int deferred = 0;  // commands waiting for their validation (the loop's passes only)
};

struct ControllerStats {
  int64_t passes = 0;
  int64_t commands_started = 0;
  int64_t validation_failures = 0;
  int64_t stale_marks_removed = 0;
  int64_t replacements_started = 0;  // Replace calls that started a command (not already held)
  std::string last_error;
};

class DisruptionController : public Controller, public Replacer {
 public:
  using NodePoolInformer = state::ClusterInformers::NodePoolInformer;
  using PdbInformer = state::ClusterInformers::PdbInformer;
  using DaemonSetInformer = state::ClusterInformers::DaemonSetInformer;
  using NamespaceInformer = state::ClusterInformers::NamespaceInformer;

  // `deps` must outlive this object.
  explicit DisruptionController(const Dependencies& deps, ControllerOptions options = {});
  ~DisruptionController() override;
  DisruptionController(const DisruptionController&) = delete;
  DisruptionController& operator=(const DisruptionController&) = delete;

  std::string_view Name() const override { return "disruption"; }
  void Start() override;
  void Stop() override;
  // The older of the loop's work in flight (crash recovery, a pass with its due validations) and
  // the orchestration queue's reconcile in flight; nullopt when neither runs.
  std::optional<absl::Time> OldestWorkStart() const override;

  // Waits for the shared NodePool, PDB, DaemonSet and Namespace informers it reads to list (tests
  // that drive RunOnce; deps.informers must have been started).
  bool WaitForInformers(absl::Time deadline);
  // Crash recovery (see above). Returns how many taints and conditions were removed; errors: the
  // first write that failed (the others are still tried).
  absl::StatusOr<int> RemoveStaleMarks();
  // One pass. Errors: Unavailable while the cluster state or the informers have not synced.
  absl::StatusOr<PassResult> RunOnce();
  absl::StatusOr<ClusterView> BuildView();
  // As BuildView, but the candidates of deferred validations other than `validating_now` count as
  // queued (they are neither candidates again nor free budget).
  absl::StatusOr<ClusterView> BuildView(const absl::flat_hash_set<std::string>& validating_now);
  // As BuildView, requiring only that the informers have listed (in-flight NodeClaims count with
  // their requests): `dovetail explain node`, which must not wait for launches.
  absl::StatusOr<ClusterView> BuildViewForExplain();

  // Replacer (see above and replacer.h).
  absl::StatusOr<ReplaceResult> Replace(const ReplaceRequest& request) override;

  // The latest Explanation per node name (copy).
  absl::flat_hash_map<std::string, Explanation> explanations() const;
  // explanations() as a JSON array sorted by node name.
  std::string ExplanationsJson() const;

  Queue& queue() { return queue_; }
  ControllerStats stats() const;

 private:
  void Loop();
  // BuildView; without `require_synced` only the informers must have listed (Replace).
  absl::StatusOr<ClusterView> BuildViewImpl(const absl::flat_hash_set<std::string>& validating_now,
                                            bool require_synced);
  // Replace with pass_mu_ held.
  absl::StatusOr<ReplaceResult> ReplaceLocked(const ReplaceRequest& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(pass_mu_);
  // The steps of ReplaceLocked (replace.cc).
  // Step 2: the queued command holding the request's NodeClaim (`node`) made involuntary, and an
  // event on the NodeClaim. Errors: MakeInvoluntary's (NotFound when no command holds it).
  absl::StatusOr<ReplaceResult> MakeHeldInvoluntary(const ReplaceRequest& request,
                                                    const CommandOptions& command_options,
                                                    const state::StateNode& node,
                                                    const std::string& event_reason);
  // The view of a replacement, after waiting (bounded by replace_sync_timeout) for the sync gate.
  absl::StatusOr<ClusterView> ReplaceView();
  // After step 4: the started command's replacements into `result`, the count, the candidate's
  // events and the log line.
  void AnnounceReplacement(const ReplaceRequest& request, const Candidate& candidate,
                           const Command& command, ReplaceResult& result,
                           const std::string& event_reason);
  // One pass; with `defer_validation` (the loop), consolidation and emptiness commands are parked
  // until their validation is due instead of blocking the pass for validation_delay.
  absl::StatusOr<PassResult> RunOnceLocked(bool defer_validation)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(pass_mu_);
  bool InformersSynced() const;
  // Validates `commands` after the delay; returns the valid ones.
  std::vector<Command> Validate(Method method, std::vector<Command> commands, PassResult& result);
  // Validates `commands` against `fresh` now; returns the valid ones (rejections are reported).
  std::vector<Command> CheckCommands(Method method, std::vector<Command> commands,
                                     const absl::StatusOr<ClusterView>& fresh, PassResult& result);
  void StartCommands(Method method, const std::vector<Command>& commands, const ClusterView& view,
                     PassResult& result);
  // Validates and starts the deferred commands whose validation is due.
  void ValidateDue() ABSL_EXCLUSIVE_LOCKS_REQUIRED(pass_mu_);
  std::optional<absl::Time> NextValidationDue() const;
  void Record(const std::vector<Explanation>& explanations, const ClusterView& view);
  void CandidateEvents(const Candidate& candidate, std::string_view type, std::string_view reason,
                       const std::string& note);
  void AddError(const absl::Status& status);
  // Sleeps up to `d` unless stopped; false when stopped.
  bool Sleep(absl::Duration d);
  // Simulator::Create whose simulations are measured in scheduler_metrics_.
  absl::StatusOr<std::unique_ptr<Simulator>> CreateSimulator(const ClusterView& view);

  Dependencies deps_;
  const ControllerOptions options_;
  KubeQueueWriter writer_;
  Queue queue_;
  // The shared informers (deps.informers).
  NodePoolInformer& node_pools_;
  PdbInformer& pdbs_;
  DaemonSetInformer& daemon_sets_;
  NamespaceInformer& namespaces_;

  metrics::Counter* decisions_metric_ = nullptr;
  metrics::Counter* failed_validations_metric_ = nullptr;
  metrics::Histogram* evaluation_duration_metric_ = nullptr;
  metrics::Counter* decisions_by_pool_metric_ = nullptr;
  metrics::Gauge* eligible_nodes_metric_ = nullptr;
  metrics::Counter* consolidation_timeouts_metric_ = nullptr;
  metrics::Gauge* consuming_budgets_metric_ = nullptr;
  metrics::Counter* moves_metric_ = nullptr;
  metrics::Histogram* score_metric_ = nullptr;
  metrics::Gauge* allowed_disruptions_metric_ = nullptr;
  launch::SchedulerMetrics scheduler_metrics_;
  // The solver's pods, converted once per pod version across passes (scenario/pod_cache.h):
  // deps.pod_cache, else own_pods_.
  scenario::PodCache own_pods_;
  scenario::PodCache* pods_ = nullptr;

  absl::Mutex pass_mu_;
  launch::DecisionIds decision_ids_{launch::DecisionStream::kDisruption};
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Explanation> explanations_ ABSL_GUARDED_BY(mu_);
  ControllerStats stats_ ABSL_GUARDED_BY(mu_);
  struct Deferred {
    Method method;
    std::vector<Command> commands;
    absl::Time due;
  };
  std::vector<Deferred> deferred_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> validating_ ABSL_GUARDED_BY(mu_);  // their candidates' keys

  // Set by the NodeClaim handler (which the shared informer keeps after this object is gone),
  // taken by the loop.
  std::shared_ptr<std::atomic<bool>> poked_ = std::make_shared<std::atomic<bool>>(false);
  std::atomic<bool> running_{false};
  WorkInProgress loop_work_;  // the loop's recovery or pass in flight
  std::unique_ptr<absl::Notification> stop_;
  std::thread thread_;
  // After everything its handlers touch, so removed (each waiting for its handler's call in
  // progress) before any of it is destroyed.
  std::vector<kube::HandlerRegistration> registrations_;
};

}  // namespace dovetail::controllers::disruption
