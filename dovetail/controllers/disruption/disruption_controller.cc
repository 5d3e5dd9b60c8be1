#include "dovetail/controllers/disruption/disruption_controller.h"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/errors.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/log.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/common/thread_entry.h"
#include "dovetail/controllers/nodeclaim/conditions.h"
#include "dovetail/kube/resource.h"
#include "dovetail/scenario/from_cluster.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::disruption {
namespace {

namespace v1 = apis::v1;

constexpr char kLogger[] = "disruption";

kube::ObjectReference CandidateNodeRef(const Candidate& c) {
  kube::ObjectReference ref = NodeRef(c.node);
  if (ref.name.empty()) ref.name = c.name;
  return ref;
}

kube::ObjectReference CandidateClaimRef(const Candidate& c) {
  kube::ObjectReference ref = NodeClaimRef(c.node);
  if (ref.name.empty()) ref.name = c.node_claim;
  return ref;
}

// A Simulator whose every simulation is measured (karpenter_scheduler_*, controller
// "disruption"): its pods are the candidates' reschedulable ones.
class MeteredSimulator : public Simulator {
 public:
  MeteredSimulator(std::unique_ptr<Simulator> inner, launch::SchedulerMetrics& metrics,
                   const Clock& clock)
      : inner_(std::move(inner)), metrics_(metrics), clock_(clock) {}

  absl::StatusOr<Result> Simulate(std::span<const Candidate> candidates) const override {
    static std::atomic<uint64_t> next_id{0};
    const std::string id = absl::StrCat("disruption-", next_id.fetch_add(1) + 1);
    size_t pods = 0;
    for (const Candidate& c : candidates) pods += c.reschedulable.size();
    const absl::Time start = clock_.Now();
    metrics_.SolveStarted(id, pods);
    absl::StatusOr<Result> result = inner_->Simulate(candidates);
    metrics_.SolveFinished(id, clock_.Now() - start, result.ok() ? result->unschedulable.size() : 0,
                           {});
    return result;
  }

 private:
  std::unique_ptr<Simulator> inner_;
  launch::SchedulerMetrics& metrics_;
  const Clock& clock_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Simulator>> DisruptionController::CreateSimulator(
    const ClusterView& view) {
  ASSIGN_OR_RETURN(std::unique_ptr<Simulator> simulator,
                   Simulator::Create(view, options_.decisions, pods_));
  return std::make_unique<MeteredSimulator>(std::move(simulator), scheduler_metrics_, deps_.clock);
}

DisruptionController::DisruptionController(const Dependencies& deps, ControllerOptions options)
    : deps_(deps),
      options_(options),
      writer_(deps.client, deps.events, deps.clock),
      queue_(deps.cluster, deps.clock, deps.metrics, writer_, options_.queue),
      node_pools_(deps.informers.node_pools()),
      pdbs_(deps.informers.pdbs()),
      daemon_sets_(deps.informers.daemon_sets()),
      namespaces_(deps.informers.namespaces()),
      scheduler_metrics_(deps.metrics, "disruption", deps.clock),
      pods_(deps.pod_cache != nullptr ? deps.pod_cache : &own_pods_) {
  // Wake the loop early when a NodeClaim may have become a candidate (or stopped being one).
  std::shared_ptr<std::atomic<bool>> poked = poked_;
  registrations_.push_back(deps_.informers.node_claims().AddHandler({
      .on_add = [poked](const auto&) { poked->store(true); },
      .on_update =
          [poked](const auto& old, const auto& now) {
            if (old->status.conditions != now->status.conditions ||
                old->status.last_pod_event_time != now->status.last_pod_event_time) {
              poked->store(true);
            }
          },
      .on_delete = [poked](const auto&) { poked->store(true); },
  }));
  if (deps_.metrics != nullptr) {
    decisions_metric_ = &deps_.metrics->NewCounter("karpenter_voluntary_disruption_decisions_total",
                                                   "Number of disruption decisions performed.",
                                                   {"decision", "reason", "consolidation_type"});
    failed_validations_metric_ = &deps_.metrics->NewCounter(
        "karpenter_voluntary_disruption_failed_validations_total",
        "Number of disruption commands that failed validation.", {"consolidation_type"});
    evaluation_duration_metric_ = &deps_.metrics->NewHistogram(
        "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
        "Duration of the disruption decision evaluation process in seconds.",
        {"reason", "consolidation_type"}, metrics::DurationBuckets());
    decisions_by_pool_metric_ = &deps_.metrics->NewCounter(
        "karpenter_voluntary_disruption_decisions_by_nodepool_total",
        "Number of disruption decisions performed, by the NodePool of the disrupted nodes.",
        {"nodepool", "decision", "reason", "consolidation_type"});
    eligible_nodes_metric_ = &deps_.metrics->NewGauge(
        "karpenter_voluntary_disruption_eligible_nodes",
        "Number of nodes eligible for disruption by Karpenter, by disruption reason.", {"reason"});
    consolidation_timeouts_metric_ = &deps_.metrics->NewCounter(
        "karpenter_voluntary_disruption_consolidation_timeouts_total",
        "Number of times the consolidation search stopped at its time limit.",
        {"consolidation_type"});
    for (Method m : {Method::kMultiNodeConsolidation, Method::kSingleNodeConsolidation}) {
      consolidation_timeouts_metric_->Inc({std::string(ConsolidationType(m))}, 0);
    }
    moves_metric_ = &deps_.metrics->NewCounter(
        "karpenter_consolidation_moves_total",
        "Consolidation moves evaluated, by decision (approved, rejected), NodePool and "
        "consolidation policy.",
        {"decision", "nodepool", "policy"});
    score_metric_ = &deps_.metrics->NewHistogram(
        "karpenter_consolidation_score",
        "Score of balanced consolidation moves. Labeled by decision, NodePool, and policy.",
        {"decision", "nodepool", "policy"}, {0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0});
    consuming_budgets_metric_ = &deps_.metrics->NewGauge(
        "karpenter_nodepools_nodes_consuming_budgets",
        "The number of nodes of a NodePool that are disrupting (not ready, deleting or marked) "
        "and so use up its disruption budget.",
        {"nodepool", "reason"});
    allowed_disruptions_metric_ = &deps_.metrics->NewGauge(
        "karpenter_nodepools_allowed_disruptions",
        "The number of nodes for a given NodePool that can be concurrently disrupting at a point "
        "in time.",
        {"nodepool", "reason"});
  }
}

DisruptionController::~DisruptionController() {
  Stop();
  queue_.Stop();
}

bool DisruptionController::WaitForInformers(absl::Time deadline) {
  return node_pools_.WaitForSync(deadline) && pdbs_.WaitForSync(deadline) &&
         daemon_sets_.WaitForSync(deadline) && namespaces_.WaitForSync(deadline) &&
         deps_.informers.VolumesSynced(deadline);
}

bool DisruptionController::InformersSynced() const {
  return node_pools_.HasSynced() && pdbs_.HasSynced() && daemon_sets_.HasSynced() &&
         namespaces_.HasSynced() && deps_.informers.VolumesSynced();
}

void DisruptionController::Start() {
  if (running_.exchange(true)) return;
  stop_ = std::make_unique<absl::Notification>();
  queue_.Start();
  thread_ = StartThread("disruption", [this] { Loop(); });
}

void DisruptionController::Stop() {
  if (!running_.exchange(false)) return;
  stop_->Notify();
  if (thread_.joinable()) thread_.join();
  queue_.Stop();
}

std::optional<absl::Time> DisruptionController::OldestWorkStart() const {
  std::optional<absl::Time> loop = loop_work_.OldestStart();
  std::optional<absl::Time> queue = queue_.OldestWorkStart();
  if (!loop.has_value()) return queue;
  if (!queue.has_value()) return loop;
  return std::min(*loop, *queue);
}

bool DisruptionController::Sleep(absl::Duration d) {
  return !stop_->WaitForNotificationWithTimeout(d);
}

ControllerStats DisruptionController::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void DisruptionController::AddError(const absl::Status& status) {
  log::Error(kLogger, "disruption pass failed", {{"error", status.ToString()}});
  absl::MutexLock lock(&mu_);
  stats_.last_error = status.ToString();
}

void DisruptionController::Loop() {
  while (running_.load() && !(deps_.cluster.Synced() && InformersSynced())) {
    if (!Sleep(absl::Milliseconds(50))) return;
  }
  // Crash recovery before the first pass.
  while (running_.load()) {
    absl::StatusOr<int> removed;
    {
      WorkInProgress::Scope recovery(loop_work_);
      removed = RemoveStaleMarks();
    }
    if (removed.ok()) break;
    AddError(removed.status());
    if (!Sleep(options_.poll_interval)) return;
  }
  while (running_.load()) {
    // Replacements just created hold the sync gate until they launch: wait quietly.
    while (running_.load() && !(deps_.cluster.Synced() && InformersSynced())) {
      if (!Sleep(absl::Milliseconds(50))) return;
    }
    poked_->store(false);
    absl::StatusOr<PassResult> result;
    {
      WorkInProgress::Scope pass(loop_work_);  // waiting for pass_mu_ (a Replace) included
      absl::MutexLock lock(&pass_mu_);
      ValidateDue();
      result = RunOnceLocked(/*defer_validation=*/true);
    }
    if (!result.ok()) AddError(result.status());
    const bool started = result.ok() && (!result->started.empty() || result->deferred > 0);
    if (started) continue;
    // Wait for poll_interval, or for a NodeClaim change once min_pass_interval has passed. Ticks
    // rather than clock reads, so a simulated clock in tests cannot stall the loop.
    constexpr absl::Duration kTick = absl::Milliseconds(100);
    for (absl::Duration waited; waited < options_.poll_interval; waited += kTick) {
      if (!Sleep(kTick)) return;
      if (waited + kTick >= options_.min_pass_interval && poked_->load()) break;
      std::optional<absl::Time> due = NextValidationDue();
      if (due.has_value() && deps_.clock.Now() >= *due) break;
    }
  }
}

absl::StatusOr<int> DisruptionController::RemoveStaleMarks() {
  absl::StatusOr<int> removed = RemoveStaleDisruptionMarks(deps_.cluster, queue_.Held(), writer_);
  if (removed.ok()) {
    absl::MutexLock lock(&mu_);
    stats_.stale_marks_removed += *removed;
  }
  return removed;
}

absl::StatusOr<ClusterView> DisruptionController::BuildView() { return BuildView({}); }

absl::StatusOr<ClusterView> DisruptionController::BuildView(
    const absl::flat_hash_set<std::string>& validating_now) {
  return BuildViewImpl(validating_now, /*require_synced=*/true);
}

absl::StatusOr<ClusterView> DisruptionController::BuildViewForExplain() {
  return BuildViewImpl({}, /*require_synced=*/false);
}

absl::StatusOr<ClusterView> DisruptionController::BuildViewImpl(
    const absl::flat_hash_set<std::string>& validating_now, bool require_synced) {
  if (require_synced && !deps_.cluster.Synced()) {
    return absl::UnavailableError("cluster state has not synced");
  }
  if (!require_synced &&
      !(deps_.informers.pods().HasSynced() && deps_.informers.nodes().HasSynced() &&
        deps_.informers.node_claims().HasSynced())) {
    return absl::UnavailableError("Pod, Node or NodeClaim informer has not synced");
  }
  if (!InformersSynced()) {
    return absl::UnavailableError(
        "NodePool, PDB, DaemonSet, Namespace, PersistentVolumeClaim, PersistentVolume or "
        "StorageClass informer has not synced");
  }
  ClusterView view{
      scenario::FromCluster(deps_.cluster, deps_.informers, deps_.cloud, deps_.clock.Now())};
  // A pool whose instance types do not resolve has no candidates (their instance type is unknown).
  // A node class that is not ready yet (e.g. still resolving at startup) is a state, not a failure.
  for (const auto& [pool, error] : view.instance_type_errors) {
    const bool not_ready = cloudprovider::IsNodeClassNotReady(error);
    log::Write(not_ready ? log::Level::kInfo : log::Level::kError, kLogger,
               not_ready ? "instance types unavailable: node class not ready"
                         : "failed to get instance types",
               {{"NodePool", pool}, {"error", error.ToString()}});
  }
  for (const auto& pdb : pdbs_.store().List()) view.pdbs.push_back(*pdb);
  view.queued = queue_.Held();
  absl::MutexLock l(&mu_);
  for (const std::string& key : validating_) {
    if (!validating_now.contains(key)) view.queued.insert(key);
  }
  return view;
}

absl::StatusOr<PassResult> DisruptionController::RunOnce() {
  absl::MutexLock lock(&pass_mu_);
  return RunOnceLocked(/*defer_validation=*/false);
}

absl::StatusOr<PassResult> DisruptionController::RunOnceLocked(bool defer_validation) {
  ASSIGN_OR_RETURN(ClusterView view, BuildView());
  {
    absl::MutexLock l(&mu_);
    ++stats_.passes;
  }
  PassResult result;
  ASSIGN_OR_RETURN(std::unique_ptr<Simulator> simulator, CreateSimulator(view));
  // Explanations of this pass replace those of nodes that are gone.
  {
    absl::flat_hash_set<std::string> names;
    for (const state::StateNode& n : view.snapshot.nodes) names.insert(n.Name());
    absl::MutexLock l(&mu_);
    absl::erase_if(explanations_, [&](const auto& kv) { return !names.contains(kv.first); });
  }
  for (const Method method : kMethodOrder) {
    const v1::DisruptionReason reason = ReasonOf(method);
    BudgetMapping budgets = BuildBudgetMapping(view, reason);
    for (const std::string& error : budgets.errors) {
      log::Error(kLogger, "invalid disruption budget", {{"error", error}});
    }
    if (allowed_disruptions_metric_ != nullptr) {
      for (const auto& [pool, remaining] : budgets.remaining) {
        allowed_disruptions_metric_->Set({pool, ReasonLabel(reason)},
                                         static_cast<double>(remaining));
      }
      for (const auto& [pool, busy] : budgets.consuming) {
        consuming_budgets_metric_->Set({pool, ReasonLabel(reason)}, static_cast<double>(busy));
      }
    }
    const absl::Time start = deps_.clock.Now();
    absl::StatusOr<MethodResult> computed =
        ComputeCommands(method, view, *simulator, budgets, options_.decisions, deps_.clock);
    if (evaluation_duration_metric_ != nullptr) {
      evaluation_duration_metric_->Observe(
          {ReasonLabel(reason), std::string(ConsolidationType(method))},
          absl::ToDoubleSeconds(deps_.clock.Now() - start));
    }
    if (computed.ok() && eligible_nodes_metric_ != nullptr) {
      eligible_nodes_metric_->Set({ReasonLabel(reason)}, static_cast<double>(computed->eligible));
      if (computed->timed_out) {
        consolidation_timeouts_metric_->Inc({std::string(ConsolidationType(method))});
      }
      for (const ConsolidationMove& move : computed->moves) {
        moves_metric_->Inc({move.approved ? "approved" : "rejected", move.node_pool, move.policy});
        if (move.score.has_value()) {
          score_metric_->Observe(
              {move.score_approved ? "approved" : "rejected", move.node_pool, move.policy},
              *move.score);
        }
      }
    }
    if (!computed.ok()) {
      AddError(computed.status());
      continue;
    }
    Record(computed->explanations, view);
    if (computed->commands.empty()) continue;
    std::vector<Command> commands = std::move(computed->commands);
    if (IsConsolidation(method) && defer_validation) {
      absl::MutexLock l(&mu_);
      for (const Command& command : commands) {
        for (const Candidate& c : command.candidates) validating_.insert(c.node.Key());
      }
      result.deferred += static_cast<int>(commands.size());
      deferred_.push_back({.method = method,
                           .commands = std::move(commands),
                           .due = deps_.clock.Now() + options_.validation_delay});
      result.method = method;
      return result;
    }
    if (IsConsolidation(method)) {
      commands = Validate(method, std::move(commands), result);
    }
    StartCommands(method, commands, view, result);
    if (!result.started.empty()) {
      result.method = method;
      return result;
    }
  }
  return result;
}

void DisruptionController::StartCommands(Method method, const std::vector<Command>& commands,
                                         const ClusterView& view, PassResult& result) {
  const v1::DisruptionReason reason = ReasonOf(method);
  for (const Command& decided : commands) {
    Command command = decided;
    command.decision_id = decision_ids_.Next();
    absl::StatusOr<std::string> id = queue_.StartCommand(command, view.node_pools);
    if (!id.ok()) {
      ++result.rejected;
      log::Error(kLogger, "failed to start disruption command",
                 {{"method", std::string(MethodName(method))}, {"error", id.status().ToString()}});
      continue;
    }
    result.started.push_back(*id);
    {
      absl::MutexLock l(&mu_);
      ++stats_.commands_started;
    }
    const std::string summary = command.Summary();
    if (decisions_metric_ != nullptr) {
      decisions_metric_->Inc({std::string(command.Decision()), ReasonLabel(reason),
                              std::string(ConsolidationType(method))});
      std::set<std::string> pools;
      for (const Candidate& c : command.candidates) pools.insert(c.node_pool);
      for (const std::string& pool : pools) {
        decisions_by_pool_metric_->Inc({pool, std::string(command.Decision()), ReasonLabel(reason),
                                        std::string(ConsolidationType(method))});
      }
    }
    std::vector<Explanation> disrupted;
    for (const Candidate& c : command.candidates) {
      CandidateEvents(
          c, "Normal", kEventDisruptionDecision,
          launch::WithDecisionId(Cat(MethodName(method), ": ", summary), command.decision_id));
      disrupted.push_back({.node = c.name,
                           .node_claim = c.node_claim,
                           .node_pool = c.node_pool,
                           .method = method,
                           .disrupted = true,
                           .event_reason = "",
                           .message = summary,
                           .decision_id = command.decision_id});
    }
    Record(disrupted, view);
  }
}

std::optional<absl::Time> DisruptionController::NextValidationDue() const {
  absl::MutexLock l(&mu_);
  std::optional<absl::Time> next;
  for (const Deferred& d : deferred_) {
    if (!next.has_value() || d.due < *next) next = d.due;
  }
  return next;
}

void DisruptionController::ValidateDue() {
  std::vector<Deferred> due;
  {
    absl::MutexLock l(&mu_);
    const absl::Time now = deps_.clock.Now();
    auto it = std::stable_partition(deferred_.begin(), deferred_.end(),
                                    [now](const Deferred& d) { return d.due > now; });
    std::move(it, deferred_.end(), std::back_inserter(due));
    deferred_.erase(it, deferred_.end());
  }
  for (Deferred& d : due) {
    absl::flat_hash_set<std::string> keys;
    for (const Command& command : d.commands) {
      for (const Candidate& c : command.candidates) keys.insert(c.node.Key());
    }
    PassResult result;
    absl::StatusOr<ClusterView> fresh = BuildView(keys);
    std::vector<Command> valid = CheckCommands(d.method, std::move(d.commands), fresh, result);
    if (fresh.ok()) StartCommands(d.method, valid, *fresh, result);
    absl::MutexLock l(&mu_);
    for (const std::string& key : keys) validating_.erase(key);
  }
}

std::vector<Command> DisruptionController::Validate(Method method, std::vector<Command> commands,
                                                    PassResult& result) {
  // In tests driving RunOnce without Start(), stop_ is null: wait with a plain sleep.
  if (stop_ != nullptr && running_.load()) {
    if (!Sleep(options_.validation_delay)) return {};
  } else {
    absl::SleepFor(options_.validation_delay);
  }
  // The fresh view needs the cluster state synced again (NodeClaims created meanwhile, e.g. by
  // provisioning, hold it until they launch): wait for it rather than reject the command.
  constexpr absl::Duration kSyncPoll = absl::Milliseconds(50);
  for (int64_t waits = options_.validation_sync_timeout / kSyncPoll;
       waits > 0 && !(deps_.cluster.Synced() && InformersSynced()); --waits) {
    if (stop_ != nullptr && running_.load()) {
      if (!Sleep(kSyncPoll)) return {};
    } else {
      absl::SleepFor(kSyncPoll);
    }
  }
  return CheckCommands(method, std::move(commands), BuildView(), result);
}

std::vector<Command> DisruptionController::CheckCommands(Method method,
                                                         std::vector<Command> commands,
                                                         const absl::StatusOr<ClusterView>& fresh,
                                                         PassResult& result) {
  absl::StatusOr<std::unique_ptr<Simulator>> simulator =
      fresh.ok() ? CreateSimulator(*fresh)
                 : absl::StatusOr<std::unique_ptr<Simulator>>(fresh.status());
  std::vector<Command> valid;
  for (Command& command : commands) {
    absl::Status status = simulator.ok()
                              ? ValidateCommand(command, *fresh, **simulator, options_.decisions)
                              : simulator.status();
    if (status.ok()) {
      valid.push_back(std::move(command));
      continue;
    }
    ++result.rejected;
    {
      absl::MutexLock l(&mu_);
      ++stats_.validation_failures;
    }
    if (failed_validations_metric_ != nullptr) {
      failed_validations_metric_->Inc({std::string(ConsolidationType(method))});
    }
    log::Info(kLogger, "abandoning disruption command, validation failed",
              {{"method", std::string(MethodName(method))}, {"reason", status.ToString()}});
    for (const Candidate& c : command.candidates) {
      CandidateEvents(c, "Normal", kEventConsolidationRejected,
                      Cat("Consolidation rejected: ", AsStd(status.message())));
    }
  }
  return valid;
}

void DisruptionController::CandidateEvents(const Candidate& candidate, std::string_view type,
                                           std::string_view reason, const std::string& note) {
  writer_.Event(CandidateNodeRef(candidate), type, reason, note);
  writer_.Event(CandidateClaimRef(candidate), type, reason, note);
}

void DisruptionController::Record(const std::vector<Explanation>& explanations,
                                  const ClusterView& view) {
  for (const Explanation& e : explanations) {
    if (e.event_reason.empty()) continue;
    // The references come from the snapshot (uids), else from the names alone.
    kube::ObjectReference node{
        .api_version = "v1", .kind = "Node", .ns = "", .name = e.node, .uid = ""};
    kube::ObjectReference claim{.api_version = std::string(v1::kApiVersion),
                                .kind = std::string(v1::kNodeClaimKind),
                                .ns = "",
                                .name = e.node_claim,
                                .uid = ""};
    for (const state::StateNode& n : view.snapshot.nodes) {
      if (n.Name() != e.node) continue;
      node = NodeRef(n);
      if (n.node_claim != nullptr) claim = NodeClaimRef(n);
      break;
    }
    if (!node.name.empty()) writer_.Event(node, "Normal", e.event_reason, e.message);
    if (!claim.name.empty()) writer_.Event(claim, "Normal", e.event_reason, e.message);
  }
  absl::MutexLock l(&mu_);
  for (const Explanation& e : explanations) {
    if (!e.node.empty()) explanations_[e.node] = e;
  }
}

absl::flat_hash_map<std::string, Explanation> DisruptionController::explanations() const {
  absl::MutexLock l(&mu_);
  return explanations_;
}

std::string DisruptionController::ExplanationsJson() const {
  std::map<std::string, Explanation> sorted;
  {
    absl::MutexLock l(&mu_);
    sorted.insert(explanations_.begin(), explanations_.end());
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, e] : sorted) {
    out.push_back({{"node", e.node},
                   {"nodeClaim", e.node_claim},
                   {"nodePool", e.node_pool},
                   {"method", std::string(MethodName(e.method))},
                   {"disrupted", e.disrupted},
                   {"eventReason", e.event_reason},
                   {"message", e.message},
                   {"decisionId", e.decision_id}});
  }
  return out.dump();
}

}  // namespace dovetail::controllers::disruption
