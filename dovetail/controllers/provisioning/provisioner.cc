#include "dovetail/controllers/provisioning/provisioner.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/instance_type.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/log.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/common/thread_entry.h"
#include "dovetail/controllers/launch/node_claim_builder.h"
#include "dovetail/controllers/launch/on_demand_base.h"
#include "dovetail/kube/resource.h"
#include "dovetail/scenario/from_cluster.h"
#include "dovetail/scenario/pod_filter.h"
#include "dovetail/solver/solver.h"
#include "dovetail/state/snapshot.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::provisioning {

using launch::ApplyOnDemandBase;
using launch::BuildNodeClaim;
using launch::CountCapacityTypes;
using launch::EffectiveZone;
using launch::kDecisionIdAnnotationKey;
using launch::OnDemandBase;
using launch::OnDemandBaseOf;
using launch::OnDemandBaseOutcome;
using launch::WithDecisionId;
using scenario::IsProvisionable;

namespace {

namespace core = apis::core;
namespace v1 = apis::v1;

constexpr char kLogger[] = "provisioner";
constexpr char kNominated[] = "Nominated";
constexpr char kFailedScheduling[] = "FailedScheduling";

// True when usage exceeds any of the pool's limits (strictly, as upstream's ExceededBy).
bool LimitsExceeded(const v1::NodePool& pool, const ResourceList& usage) {
  for (const auto& [name, limit] : pool.spec.limits) {
    auto it = usage.find(name);
    if (it != usage.end() && it->second > limit) return true;
  }
  return false;
}

// Nodes being disrupted or terminated trigger provisioning for their pods (upstream's node
// trigger).
bool IsDisrupted(const kube::NodeInfo& node) {
  for (const kube::CompactTaint& taint : node.taints) {
    if (taint.key != nullptr && *taint.key == v1::kDisruptedTaintKey &&
        taint.effect == static_cast<uint8_t>(core::TaintEffect::kNoSchedule)) {
      return true;
    }
  }
  return false;
}

std::string FormatResources(const ResourceList& list) {
  std::string out;
  for (const auto& [name, quantity] : list) {
    absl::StrAppend(&out, out.empty() ? "" : ",", name, "=", quantity.ToString());
  }
  return out;
}

}  // namespace

Provisioner::Provisioner(const Dependencies& deps, Options options)
    : deps_(deps),
      options_(options),
      batcher_(std::make_shared<Batcher>(deps.clock,
                                         BatcherOptions{.idle = options_.batch_idle_duration,
                                                        .max = options_.batch_max_duration})),
      node_pools_(deps.informers.node_pools()),
      daemon_sets_(deps.informers.daemon_sets()),
      namespaces_(deps.informers.namespaces()),
      scheduler_metrics_(deps.metrics, "provisioner", deps.clock),
      pods_(deps.pod_cache != nullptr ? deps.pod_cache : &own_pods_) {
  using PodPtr = std::shared_ptr<const kube::PodInfo>;
  std::shared_ptr<Batcher> batcher = batcher_;
  registrations_.push_back(deps_.informers.pods().AddHandler({
      .on_add =
          [batcher](const PodPtr& pod) {
            if (IsProvisionable(*pod)) batcher->Trigger(pod->meta.uid);
          },
      .on_update =
          [batcher](const PodPtr&, const PodPtr& pod) {
            if (IsProvisionable(*pod)) batcher->Trigger(pod->meta.uid);
          },
      .on_delete = nullptr,
  }));
  using NodePtr = std::shared_ptr<const kube::NodeInfo>;
  registrations_.push_back(deps_.informers.nodes().AddHandler({
      .on_add =
          [batcher](const NodePtr& node) {
            if (IsDisrupted(*node)) batcher->Trigger(node->meta.uid);
          },
      .on_update =
          [batcher](const NodePtr&, const NodePtr& node) {
            if (IsDisrupted(*node)) batcher->Trigger(node->meta.uid);
          },
      .on_delete = nullptr,
  }));
  if (deps_.metrics != nullptr) {
    node_claims_created_metric_ = &deps_.metrics->NewCounter(
        "karpenter_nodeclaims_created_total", "Number of nodeclaims created in total.",
        {"reason", "nodepool", "min_values_relaxed"});
  }
}

void Provisioner::RecordDecisions(const solver::Plan& plan) {
  std::vector<std::string> placed, unplaceable;
  auto key = [](const core::Pod& pod) {
    return absl::StrCat(pod.metadata.namespace_, "/", pod.metadata.name);
  };
  // Pods of nodes going away are running: only pending pods are decided about.
  auto pending = [](const core::Pod* pod) { return pod->status.phase == core::PodPhase::kPending; };
  for (const solver::NewNodeClaim& claim : plan.node_claims) {
    for (const core::Pod* pod : claim.pods) {
      if (pending(pod)) placed.push_back(key(*pod));
    }
  }
  for (const solver::ExistingPlacement& existing : plan.existing) {
    for (const core::Pod* pod : existing.pods) {
      if (pending(pod)) placed.push_back(key(*pod));
    }
  }
  for (const solver::Unschedulable& u : plan.unschedulable) {
    if (pending(u.pod)) unplaceable.push_back(key(*u.pod));
  }
  scheduler_metrics_.ObserveDecisions(
      deps_.cluster.pod_scheduling_times().Decide(placed, unplaceable, deps_.clock.Now()));
}

Provisioner::~Provisioner() { Stop(); }

bool Provisioner::WaitForInformers(absl::Time deadline) {
  return node_pools_.WaitForSync(deadline) && daemon_sets_.WaitForSync(deadline) &&
         namespaces_.WaitForSync(deadline) && deps_.informers.VolumesSynced(deadline);
}

void Provisioner::Start() {
  if (running_.exchange(true)) return;
  batcher_->Reset();
  thread_ = StartThread("provisioner", [this] { Loop(); });
}

void Provisioner::Stop() {
  if (!running_.exchange(false)) return;
  batcher_->Stop();
  if (thread_.joinable()) thread_.join();
}

Stats Provisioner::stats() const {
  absl::MutexLock lock(&stats_mu_);
  return stats_;
}

void Provisioner::AddError(const absl::Status& status) {
  log::Error(kLogger, "provisioning failed", {{"error", status.ToString()}});
  absl::MutexLock lock(&stats_mu_);
  stats_.last_error = status.ToString();
}

void Provisioner::TriggerPending() {
  deps_.informers.pods().store().ForEach([this](const kube::PodInfo& pod) {
    if (IsProvisionable(pod)) batcher_->Trigger(pod.meta.uid);
  });
  deps_.informers.nodes().store().ForEach([this](const kube::NodeInfo& node) {
    if (IsDisrupted(node)) batcher_->Trigger(node.meta.uid);
  });
}

void Provisioner::Loop() {
  // Pods already pending when we start (their add events may have come before Start).
  TriggerPending();
  absl::Time next_requeue = deps_.clock.Now() + options_.requeue;
  while (running_.load()) {
    std::optional<Batch> batch = batcher_->Wait(std::min(options_.requeue, absl::Seconds(1)));
    if (deps_.clock.Now() >= next_requeue) {
      TriggerPending();
      next_requeue = deps_.clock.Now() + options_.requeue;
    }
    if (!batch.has_value()) continue;
    // Upstream's pass waits for the cluster state to sync (informers listed, every NodeClaim
    // launched) and for the shared informers it reads.
    while (running_.load() && !(deps_.cluster.Synced() && node_pools_.HasSynced() &&
                                daemon_sets_.HasSynced() && deps_.informers.VolumesSynced())) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    if (!running_.load()) break;
    absl::StatusOr<PassResult> result;
    {
      WorkInProgress::Scope pass(pass_work_);
      result = RunOnce();
    }
    if (!result.ok()) AddError(result.status());
  }
}

void Provisioner::RecordPodEvent(const core::Pod& pod, std::string_view type,
                                 std::string_view reason, std::string_view action,
                                 std::string_view note) {
  kube::ObjectReference ref{.api_version = "v1",
                            .kind = "Pod",
                            .ns = pod.metadata.namespace_,
                            .name = pod.metadata.name,
                            .uid = pod.metadata.uid};
  // Rate limited or failed events are dropped (the recorder counts them); the pass goes on.
  (void)deps_.events.Record(ref, type, reason, action, note);
}

absl::StatusOr<scenario::Scenario> Provisioner::ReadScenario() {
  if (!node_pools_.HasSynced() || !daemon_sets_.HasSynced() || !namespaces_.HasSynced()) {
    return absl::UnavailableError("NodePool, DaemonSet or Namespace informer has not synced");
  }
  if (!deps_.informers.VolumesSynced()) {
    return absl::UnavailableError(
        "PersistentVolumeClaim, PersistentVolume or StorageClass informer has not synced");
  }
  return scenario::FromCluster(deps_.cluster, deps_.informers, deps_.cloud, deps_.clock.Now());
}

scenario::InputOptions Provisioner::InputOptions() const {
  return {.require_ready_node_pools = options_.require_ready_node_pools,
          .solver = {.respect_preferences = options_.respect_preferences,
                     .min_values_strict = options_.min_values_strict,
                     .max_instance_types = options_.max_instance_types,
                     .lower_bound = false}};  // the LP bound is for simulate only
}

absl::flat_hash_map<std::string, OnDemandBase> Provisioner::ReportNodePools(
    const scenario::Scenario& scenario, const scenario::SolverQuestion& question) {
  auto ref = [](const std::string& name, const std::string& uid) {
    return kube::ObjectReference{.api_version = std::string(v1::kApiVersion),
                                 .kind = std::string(v1::kNodePoolKind),
                                 .ns = "",
                                 .name = name,
                                 .uid = uid};
  };
  for (const scenario::SkippedNodePool& skipped : question.skipped) {
    using Why = scenario::SkippedNodePool::Why;
    if (skipped.why == Why::kInstanceTypes || skipped.why == Why::kInvalid) {
      AddError(skipped.error);
    } else if (skipped.why == Why::kNoCompatibleInstanceTypes) {
      auto pool = scenario.node_pools.find(skipped.name);
      const std::string uid = pool == scenario.node_pools.end() ? "" : pool->second.metadata.uid;
      (void)deps_.events.Record(ref(skipped.name, uid), "Warning", "NoCompatibleInstanceTypes",
                                "Provisioning", scenario::kNoCompatibleInstanceTypesMessage);
    }
  }
  absl::flat_hash_map<std::string, OnDemandBase> bases;
  for (const solver::PoolTemplate& t : question.input.pools) {
    auto pool = scenario.node_pools.find(t.name);
    if (pool == scenario.node_pools.end()) continue;
    absl::StatusOr<std::optional<OnDemandBase>> base = OnDemandBaseOf(pool->second);
    if (!base.ok()) {
      log::Error(kLogger, "ignoring the on-demand base",
                 {{"NodePool", t.name}, {"error", base.status().ToString()}});
      (void)deps_.events.Record(ref(t.name, pool->second.metadata.uid), "Warning",
                                "InvalidOnDemandBase", "Provisioning",
                                absl::StrCat(base.status().message(), "; ignored"));
    } else if (base->has_value()) {
      bases[t.name] = **base;
    }
  }
  return bases;
}

std::string Provisioner::EventDecision(const core::Pod& pod, std::string_view reason,
                                       std::string_view note, const std::string& pass_id) {
  const std::string key = Cat(reason, "\n", note);
  EventDecisionEntry& entry = event_decisions_[pod.metadata.uid];
  if (entry.key != key || entry.id.empty()) {
    entry.key = key;
    entry.id = pass_id;
  }
  entry.pass = pass_number_;
  return entry.id;
}

absl::StatusOr<PassResult> Provisioner::RunOnce() {
  absl::MutexLock lock(&pass_mu_);
  return RunOnceLocked();
}

absl::StatusOr<PassResult> Provisioner::RunOnceLocked() {
  // 1. Synced.
  if (!deps_.cluster.Synced()) return absl::UnavailableError("cluster state has not synced");
  if (!node_pools_.HasSynced() || !daemon_sets_.HasSynced() || !namespaces_.HasSynced()) {
    return absl::UnavailableError("NodePool, DaemonSet or Namespace informer has not synced");
  }
  {
    absl::MutexLock l(&stats_mu_);
    ++stats_.passes;
  }
  PassResult result;

  // 2-3. The scenario (nodes first, then pending pods: cluster.h) and its solver input.
  ASSIGN_OR_RETURN(const scenario::Scenario scenario, ReadScenario());
  scenario::InputOptions input_options = InputOptions();
  input_options.pods = pods_;  // converted once per pod version, across passes
  scenario::SolverQuestion question = scenario::BuildSolverInput(scenario, input_options);
  const state::Snapshot& snapshot = scenario.snapshot;
  const std::vector<scenario::SharedPod>& pending = question.pods;
  ReportPods(question);
  ++pass_number_;
  if (pending.empty()) {
    event_decisions_.clear();
    return result;
  }
  const std::string decision = decision_ids_.Next();
  result.decision_id = decision;
  log::Info(kLogger, "found provisionable pod(s)",
            {{"count", std::to_string(pending.size())}, {"decisionId", decision}});

  // 4-5. The NodePools' events and errors, and their on-demand bases.
  const absl::flat_hash_map<std::string, OnDemandBase> on_demand_bases =
      ReportNodePools(scenario, question);

  // 6. Solve.
  ASSIGN_OR_RETURN(solver::Plan plan, SolvePass(question.input, pending, decision));
  RecordDecisions(plan);
  result.pods = static_cast<int>(pending.size());
  if (!plan.node_claims.empty()) {
    size_t pods = 0;
    for (const solver::NewNodeClaim& planned : plan.node_claims) pods += planned.pods.size();
    log::Info(kLogger, "computed new nodeclaim(s) to fit pod(s)",
              {{"nodeclaims", std::to_string(plan.node_claims.size())},
               {"pods", std::to_string(pods)},
               {"decisionId", decision}});
  }
  NarrowToOnDemandBase(on_demand_bases, snapshot, plan);

  // 7. New NodeClaims, nominations and events.
  PassCounts counts;
  std::vector<ClaimToCreate> to_create =
      AcceptWithinLimits(plan, decision, &counts.limit_rejections);
  SendCreates(to_create);
  RecordCreates(to_create, decision, &counts, &result);
  NominateExisting(plan, snapshot, decision, &counts.nominated);
  ReportUnschedulable(plan, decision);
  // Forget the outcomes of pods this pass did not decide about (bound, deleted, no longer pending).
  const int64_t this_pass = pass_number_;
  absl::erase_if(event_decisions_,
                 [this_pass](const auto& kv) { return kv.second.pass != this_pass; });
  result.unschedulable = static_cast<int>(plan.unschedulable.size());

  absl::MutexLock l(&stats_mu_);
  stats_.pods_considered += static_cast<int64_t>(pending.size());
  stats_.pods_nominated += counts.nominated;
  stats_.pods_unschedulable += static_cast<int64_t>(plan.unschedulable.size());
  stats_.node_claims_created += counts.created;
  stats_.node_claim_create_errors += counts.create_errors;
  stats_.limit_rejections += counts.limit_rejections;
  return result;
}

void Provisioner::ReportPods(const scenario::SolverQuestion& question) {
  for (const scenario::IgnoredPod& ignored : question.ignored) {
    if (ignored.silent) continue;
    RecordPodEvent(*ignored.pod, "Warning", kFailedScheduling, "Scheduling",
                   absl::StrCat("Failed to schedule pod, ", ignored.message));
  }
  const auto ignored = static_cast<int64_t>(question.ignored.size());
  scheduler_metrics_.SetIgnoredPods(ignored);
  std::vector<std::string> keys;
  for (const auto& pod : question.pods) {
    if (question.rescheduled.contains(pod.get())) continue;  // of a node going away
    keys.push_back(absl::StrCat(pod->metadata.namespace_, "/", pod->metadata.name));
  }
  deps_.cluster.pod_scheduling_times().Ack(keys, deps_.clock.Now());
  absl::MutexLock l(&stats_mu_);
  stats_.pods_ignored += ignored;
  stats_.last_pass_pods = static_cast<int64_t>(question.pods.size());
  stats_.pods_reschedulable += static_cast<int64_t>(question.rescheduled.size());
}

absl::StatusOr<solver::Plan> Provisioner::SolvePass(const solver::Input& input,
                                                    const std::vector<scenario::SharedPod>& pending,
                                                    const std::string& decision) {
  const absl::Time solve_start = deps_.clock.Now();
  scheduler_metrics_.SolveStarted(decision, pending.size());
  absl::StatusOr<solver::Plan> solved = solver::Solve(input);
  std::map<std::string, int> pending_by_zone;
  for (const auto& pod : pending) {
    if (pod->status.phase == core::PodPhase::kPending) ++pending_by_zone[EffectiveZone(*pod)];
  }
  scheduler_metrics_.SolveFinished(decision, deps_.clock.Now() - solve_start,
                                   solved.ok() ? solved->unschedulable.size() : pending.size(),
                                   pending_by_zone);
  return solved;
}

void Provisioner::NarrowToOnDemandBase(
    const absl::flat_hash_map<std::string, OnDemandBase>& on_demand_bases,
    const state::Snapshot& snapshot, solver::Plan& plan) {
  if (!on_demand_bases.empty() && !plan.node_claims.empty()) {
    for (const OnDemandBaseOutcome& o :
         ApplyOnDemandBase(plan.node_claims, on_demand_bases, CountCapacityTypes(snapshot.nodes))) {
      if (o.narrowed > 0) {
        log::Info(kLogger, "narrowed nodeclaim(s) to on-demand for the on-demand base",
                  {{"NodePool", o.pool},
                   {"base", o.base.String()},
                   {"narrowed", std::to_string(o.narrowed)},
                   {"on-demand", std::to_string(o.on_demand)},
                   {"required", std::to_string(o.required)}});
      }
      if (!o.Met()) {
        log::Error(kLogger, "on-demand base not met",
                   {{"NodePool", o.pool},
                    {"base", o.base.String()},
                    {"on-demand", std::to_string(o.on_demand)},
                    {"required", std::to_string(o.required)},
                    {"reasons", absl::StrJoin(o.failures, "; ")}});
      }
    }
  }
}

absl::Duration Provisioner::NominationDuration() const {
  return options_.nomination_duration > absl::ZeroDuration()
             ? options_.nomination_duration
             : std::max(2 * options_.batch_max_duration, absl::Seconds(10));
}

std::vector<Provisioner::ClaimToCreate> Provisioner::AcceptWithinLimits(const solver::Plan& plan,
                                                                        const std::string& decision,
                                                                        int64_t* limit_rejections) {
  std::vector<ClaimToCreate> to_create;
  absl::flat_hash_map<std::string, ResourceList> usage;
  absl::flat_hash_map<std::string, std::shared_ptr<const v1::NodePool>> pools;
  for (const auto& pool : node_pools_.store().List()) pools[pool->metadata.name] = pool;
  for (const solver::NewNodeClaim& planned : plan.node_claims) {
    auto pool_it = pools.find(planned.pool);
    if (pool_it == pools.end()) continue;  // deleted since the scenario was read
    const v1::NodePool& pool = *pool_it->second;
    auto [u, inserted] = usage.try_emplace(pool.metadata.name);
    if (inserted) u->second = deps_.cluster.NodePoolUsage(pool.metadata.name);
    if (LimitsExceeded(pool, u->second)) {
      ++*limit_rejections;
      continue;
    }
    v1::NodeClaim claim =
        BuildNodeClaim(pool, planned, {.min_values_strict = options_.min_values_strict});
    claim.metadata.annotations[std::string(kDecisionIdAnnotationKey)] = decision;
    u->second = cloudprovider::AddResources(u->second, claim.spec.resources.requests);
    u->second["nodes"] += Quantity::FromUnits(1);
    to_create.push_back({&planned, pool_it->second, std::move(claim)});
  }
  return to_create;
}

void Provisioner::SendCreates(std::vector<ClaimToCreate>& to_create) {
  constexpr size_t kMaxParallelCreates = 16;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < to_create.size(); i = next++) {
      to_create[i].response = deps_.client.Create(kube::resources::kNodeClaims, "",
                                                  core::EncodeJson(to_create[i].claim).dump());
    }
  };
  std::vector<std::thread> threads;
  const size_t n = std::min(kMaxParallelCreates, to_create.size());
  for (size_t t = 1; t < n; ++t) threads.push_back(StartThread("provisioner.create", worker));
  worker();
  for (std::thread& t : threads) t.join();
}

void Provisioner::RecordCreates(const std::vector<ClaimToCreate>& to_create,
                                const std::string& decision, PassCounts* counts,
                                PassResult* result) {
  const absl::Duration nomination = NominationDuration();
  std::vector<std::pair<const core::Pod*, std::string>> nominated_events;
  for (const ClaimToCreate& p : to_create) {
    const solver::NewNodeClaim& planned = *p.planned;
    const v1::NodePool& pool = *p.pool;
    const absl::StatusOr<std::string>& response = p.response;
    if (!response.ok()) {
      ++counts->create_errors;
      AddError(response.status());
      continue;
    }
    const nlohmann::json json = nlohmann::json::parse(*response, nullptr, false);
    auto stored = std::make_shared<v1::NodeClaim>();
    if (json.is_discarded() || !core::DecodeJson(json, *stored).ok()) {
      ++counts->create_errors;
      AddError(absl::InternalError("created NodeClaim does not decode"));
      continue;
    }
    const std::string name = stored->metadata.name;
    ++counts->created;
    log::Info(kLogger, "created nodeclaim",
              {{"NodePool", pool.metadata.name},
               {"NodeClaim", name},
               {"requests", FormatResources(planned.requests)},
               {"instance-types", std::to_string(planned.instance_types.size())},
               {"decisionId", decision}});
    if (node_claims_created_metric_ != nullptr) {
      node_claims_created_metric_->Inc(
          {"provisioned", pool.metadata.name, planned.min_values_relaxed ? "true" : "false"});
    }
    result->created.push_back(name);
    // Into state at once (upstream does the same): the next pass sees the claim as capacity, and
    // the sync gate holds passes until it is launched. The informer's copy replaces this one.
    if (!deps_.cluster.GetByNodeClaimName(name).has_value()) deps_.cluster.UpdateNodeClaim(stored);
    deps_.cluster.Nominate(state::UnlaunchedNodeClaimKey(name), nomination);
    for (const core::Pod* pod : planned.pods) {
      ++counts->nominated;
      nominated_events.emplace_back(pod, absl::StrCat("Pod should schedule on: nodeclaim/", name));
    }
  }
  // Events after every NodeClaim exists: each is an API call, and launches should not wait.
  for (const auto& [pod, note] : nominated_events) {
    RecordPodEvent(*pod, "Normal", kNominated, "Nominate",
                   WithDecisionId(note, EventDecision(*pod, kNominated, note, decision)));
  }
}

void Provisioner::NominateExisting(const solver::Plan& plan, const state::Snapshot& snapshot,
                                   const std::string& decision, int64_t* nominated) {
  const absl::Duration nomination = NominationDuration();
  absl::flat_hash_map<std::string, const state::StateNode*> by_name;
  for (const state::StateNode& node : snapshot.nodes) by_name[node.Name()] = &node;
  for (const solver::ExistingPlacement& placement : plan.existing) {
    auto it = by_name.find(placement.node);
    if (it == by_name.end()) continue;
    const state::StateNode& node = *it->second;
    deps_.cluster.Nominate(node.Key(), nomination);
    std::vector<std::string> info;
    if (node.node_claim != nullptr)
      info.push_back(absl::StrCat("nodeclaim/", node.node_claim->metadata.name));
    if (node.node != nullptr) info.push_back(absl::StrCat("node/", node.node->meta.name));
    const std::string note = absl::StrCat("Pod should schedule on: ", absl::StrJoin(info, ", "));
    for (const core::Pod* pod : placement.pods) {
      ++*nominated;
      RecordPodEvent(*pod, "Normal", kNominated, "Nominate",
                     WithDecisionId(note, EventDecision(*pod, kNominated, note, decision)));
    }
  }
}

void Provisioner::ReportUnschedulable(const solver::Plan& plan, const std::string& decision) {
  // Pods that fit nowhere, with the solver's reason.
  for (const solver::Unschedulable& u : plan.unschedulable) {
    const std::string note = absl::StrCat("Failed to schedule pod, ", u.reason);
    RecordPodEvent(*u.pod, "Warning", kFailedScheduling, "Scheduling",
                   WithDecisionId(note, EventDecision(*u.pod, kFailedScheduling, note, decision)));
  }
  if (!plan.unschedulable.empty()) {
    log::Info(kLogger, "could not schedule pod(s)",
              {{"pods", std::to_string(plan.unschedulable.size())}, {"decisionId", decision}});
  }
}

}  // namespace dovetail::controllers::provisioning
