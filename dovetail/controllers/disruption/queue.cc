#include "dovetail/controllers/disruption/queue.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/log.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/common/thread_entry.h"
#include "dovetail/controllers/disruption/involuntary_record.h"
#include "dovetail/controllers/launch/decision_id.h"
#include "dovetail/controllers/launch/node_claim_builder.h"
#include "dovetail/controllers/nodeclaim/conditions.h"
#include "dovetail/kube/controller_util.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/resource.h"
#include "dovetail/kube/typed_client.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::disruption {
namespace {

namespace v1 = apis::v1;
using nlohmann::json;

constexpr char kLogger[] = "disruption.queue";

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

std::string Label(const state::StateNode& node, std::string_view key) {
  const apis::core::StringMap labels = node.Labels();
  auto it = labels.find(std::string(key));
  return it == labels.end() ? "" : it->second;
}

bool HasInitializedCondition(const v1::NodeClaim& claim) {
  const apis::core::Condition* c =
      v1::FindCondition(claim.status.conditions, nodeclaim::kConditionInitialized);
  return c != nullptr && c->status == apis::core::ConditionStatus::kTrue;
}

bool HasDisruptedTaint(const kube::NodeInfo& node) {
  for (const kube::CompactTaint& taint : node.taints) {
    if (taint.key != nullptr && *taint.key == v1::kDisruptedTaintKey) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<int> RemoveStaleDisruptionMarks(const state::Cluster& cluster,
                                               const absl::flat_hash_set<std::string>& held,
                                               QueueWriter& writer) {
  int removed = 0;
  absl::Status first_error;
  for (const state::StateNode& node : cluster.Nodes()) {
    if (held.contains(node.Key()) || node.marked_for_deletion || node.Deleting()) continue;
    // An involuntary command recorded on the NodeClaim is resumed by its controller
    // (involuntary_record.h): its marks are not stale.
    if (node.node_claim != nullptr &&
        node.node_claim->metadata.annotations.contains(kInvoluntaryDisruptionAnnotation)) {
      continue;
    }
    if (node.node != nullptr && HasDisruptedTaint(*node.node)) {
      const absl::Status s = writer.Untaint(node.node->meta.name);
      if (s.ok()) {
        ++removed;
        log::Info(kLogger, "removed stale disrupted taint", {{"Node", node.node->meta.name}});
      } else if (first_error.ok()) {
        first_error = s;
      }
    }
    if (node.node_claim != nullptr &&
        v1::FindCondition(node.node_claim->status.conditions,
                          nodeclaim::kConditionDisruptionReason) != nullptr) {
      const std::string& name = node.node_claim->metadata.name;
      const absl::Status s = writer.ClearDisruptionReason(name);
      if (s.ok()) {
        ++removed;
        log::Info(kLogger, "removed stale DisruptionReason condition", {{"NodeClaim", name}});
      } else if (first_error.ok()) {
        first_error = s;
      }
    }
  }
  if (!first_error.ok()) return first_error;
  return removed;
}

absl::Duration CommandTimeout(size_t queued_commands, const QueueOptions& options) {
  const absl::Duration t = options.timeout_per_command * static_cast<int64_t>(queued_commands);
  return std::clamp(t, options.min_timeout, options.max_timeout);
}

std::string_view ReasonName(v1::DisruptionReason reason) {
  switch (reason) {
    case v1::DisruptionReason::kUnderutilized:
      return "Underutilized";
    case v1::DisruptionReason::kEmpty:
      return "Empty";
    case v1::DisruptionReason::kDrifted:
      return "Drifted";
  }
  return "Underutilized";
}

std::string ReasonLabel(v1::DisruptionReason reason) {
  return absl::AsciiStrToLower(std::string(ReasonName(reason)));
}

QueueDecision Decide(std::span<const ReplacementState> replacements, absl::Time now,
                     absl::Time deadline) {
  bool all_initialized = true;
  bool all_launched = true;
  for (const ReplacementState& r : replacements) {
    if (!r.exists || r.deleting) {
      return {QueueAction::kRollback,
              absl::StrCat("replacement nodeclaim ", r.name, " was deleted")};
    }
    all_initialized = all_initialized && r.initialized;
    all_launched = all_launched && r.launched;
  }
  if (all_initialized) return {QueueAction::kTerminate, ""};
  if (now >= deadline) {
    return {QueueAction::kRollback, "timed out waiting for the replacements to initialize"};
  }
  return {all_launched ? QueueAction::kWaitReadiness : QueueAction::kWaitLaunch, ""};
}

QueueDecision DecideInvoluntary(std::span<const ReplacementState> replacements, absl::Time now,
                                absl::Time deadline, bool delete_when_ready) {
  if (now >= deadline) return {QueueAction::kTerminate, "deadline reached"};
  bool all_initialized = true;
  bool all_launched = true;
  std::string gone;
  for (const ReplacementState& r : replacements) {
    if (!r.exists || r.deleting) {
      if (gone.empty()) gone = r.name;
      continue;
    }
    all_initialized = all_initialized && r.initialized;
    all_launched = all_launched && r.launched;
  }
  if (!gone.empty()) {
    if (!delete_when_ready) return {QueueAction::kWaitDeadline, ""};
    return {QueueAction::kTerminate, absl::StrCat("replacement nodeclaim ", gone, " was deleted")};
  }
  if (all_initialized) {
    if (!delete_when_ready) return {QueueAction::kWaitDeadline, ""};
    return {QueueAction::kTerminate, "replacements initialized"};
  }
  return {all_launched ? QueueAction::kWaitReadiness : QueueAction::kWaitLaunch, ""};
}

kube::ObjectReference NodeRef(const state::StateNode& node) {
  kube::ObjectReference ref{.api_version = "v1", .kind = "Node", .ns = "", .name = "", .uid = ""};
  if (node.node != nullptr) {
    ref.name = node.node->meta.name;
    ref.uid = node.node->meta.uid;
  } else {
    ref.name = node.Name();
  }
  return ref;
}

kube::ObjectReference NodeClaimRef(const state::StateNode& node) {
  kube::ObjectReference ref{.api_version = std::string(v1::kApiVersion),
                            .kind = std::string(v1::kNodeClaimKind),
                            .ns = "",
                            .name = "",
                            .uid = ""};
  if (node.node_claim != nullptr) {
    ref.name = node.node_claim->metadata.name;
    ref.uid = node.node_claim->metadata.uid;
  }
  return ref;
}

// ---- KubeQueueWriter ----------------------------------------------------------------------------

namespace {

// Rewrites the Node's karpenter.sh/disrupted taints: `add` leaves exactly one with NoSchedule,
// else none. NotFound on removal is success.
absl::Status EditDisruptedTaint(kube::Client& client, const std::string& node_name, bool add) {
  return kube::RetryOnConflict([&]() -> absl::Status {
    absl::StatusOr<std::string> body = client.Get(kube::resources::kNodes, "", node_name);
    if (!body.ok()) {
      if (!add && kube::IsNotFound(body.status())) return absl::OkStatus();
      return body.status();
    }
    ASSIGN_OR_RETURN(const json node, kube::ParseJsonBody(*body));
    json taints = json::array();
    bool present = false;
    bool changed = false;
    const json spec = node.value("spec", json::object());
    for (const json& taint : spec.value("taints", json::array())) {
      if (taint.value("key", "") == v1::kDisruptedTaintKey) {
        if (add && taint.value("effect", "") == "NoSchedule" && !present) {
          present = true;
          taints.push_back(taint);
        } else {
          changed = true;
        }
        continue;
      }
      taints.push_back(taint);
    }
    if (add && !present) {
      taints.push_back({{"key", std::string(v1::kDisruptedTaintKey)}, {"effect", "NoSchedule"}});
      changed = true;
    }
    if (!changed) return absl::OkStatus();
    const json metadata = node.value("metadata", json::object());
    if (add && metadata.contains("deletionTimestamp")) {
      return absl::FailedPreconditionError(absl::StrCat("node ", node_name, " is being deleted"));
    }
    const json patch = {{"metadata", {{"resourceVersion", metadata.value("resourceVersion", "")}}},
                        {"spec", {{"taints", taints}}}};
    absl::StatusOr<std::string> patched =
        client.Patch(kube::resources::kNodes, "", node_name, kube::PatchType::kMerge, patch.dump());
    if (!patched.ok() && !add && kube::IsNotFound(patched.status())) return absl::OkStatus();
    return patched.status();
  });
}

// Sets (reason non-empty) or removes the DisruptionReason condition of the NodeClaim's status.
absl::Status EditDisruptionCondition(kube::Client& client, const Clock& clock,
                                     const std::string& name, std::string_view reason) {
  const bool set = !reason.empty();
  return kube::RetryOnConflict([&]() -> absl::Status {
    absl::StatusOr<std::string> body = client.Get(kube::resources::kNodeClaims, "", name);
    if (!body.ok()) {
      if (!set && kube::IsNotFound(body.status())) return absl::OkStatus();
      return body.status();
    }
    ASSIGN_OR_RETURN(const json claim, kube::ParseJsonBody(*body));
    const json metadata = claim.value("metadata", json::object());
    const int64_t generation = metadata.value("generation", int64_t{0});
    const json old = claim.value("status", json::object()).value("conditions", json::array());
    json conditions = json::array();
    bool changed = false;
    bool found = false;
    for (const json& condition : old) {
      if (condition.value("type", "") != nodeclaim::kConditionDisruptionReason) {
        conditions.push_back(condition);
        continue;
      }
      if (!set) {
        changed = true;
        continue;
      }
      found = true;
      json c = condition;
      if (c.value("status", "") != "True" || c.value("reason", "") != reason) {
        if (c.value("status", "") != "True") c["lastTransitionTime"] = Rfc3339(clock.Now());
        c["status"] = "True";
        c["reason"] = std::string(reason);
        c["message"] = "";
        c["observedGeneration"] = generation;
        changed = true;
      }
      conditions.push_back(std::move(c));
    }
    if (set && !found) {
      conditions.push_back({{"type", std::string(nodeclaim::kConditionDisruptionReason)},
                            {"status", "True"},
                            {"reason", std::string(reason)},
                            {"message", ""},
                            {"lastTransitionTime", Rfc3339(clock.Now())},
                            {"observedGeneration", generation}});
      changed = true;
    }
    if (!changed) return absl::OkStatus();
    const json patch = {{"metadata", {{"resourceVersion", metadata.value("resourceVersion", "")}}},
                        {"status", {{"conditions", conditions}}}};
    absl::StatusOr<std::string> patched =
        client.Patch(kube::resources::kNodeClaims, "", name, kube::PatchType::kMerge, patch.dump(),
                     {}, "status");
    if (!patched.ok() && !set && kube::IsNotFound(patched.status())) return absl::OkStatus();
    return patched.status();
  });
}

}  // namespace

absl::Status KubeQueueWriter::Taint(const std::string& node) {
  return EditDisruptedTaint(client_, node, true);
}

absl::Status KubeQueueWriter::Untaint(const std::string& node) {
  return EditDisruptedTaint(client_, node, false);
}

absl::Status KubeQueueWriter::SetDisruptionReason(const std::string& node_claim,
                                                  std::string_view reason) {
  return EditDisruptionCondition(client_, clock_, node_claim, reason);
}

absl::Status KubeQueueWriter::ClearDisruptionReason(const std::string& node_claim) {
  return EditDisruptionCondition(client_, clock_, node_claim, "");
}

absl::StatusOr<v1::NodeClaim> KubeQueueWriter::CreateNodeClaim(const v1::NodeClaim& claim) {
  ASSIGN_OR_RETURN(const std::string body, client_.Create(kube::resources::kNodeClaims, "",
                                                          apis::core::EncodeJson(claim).dump()));
  ASSIGN_OR_RETURN(const json parsed, kube::ParseJsonBody(body));
  v1::NodeClaim stored;
  RETURN_IF_ERROR(apis::core::DecodeJson(parsed, stored));
  return stored;
}

absl::Status KubeQueueWriter::AnnotateNodeClaim(const std::string& node_claim, std::string_view key,
                                                std::string_view value) {
  const json patch = {{"metadata", {{"annotations", {{std::string(key), std::string(value)}}}}}};
  return client_
      .Patch(kube::resources::kNodeClaims, "", node_claim, kube::PatchType::kMerge, patch.dump())
      .status();
}

absl::Status KubeQueueWriter::DeleteNodeClaim(const std::string& name, const std::string& uid) {
  kube::DeleteOptions options;
  if (!uid.empty()) options.precondition_uid = uid;
  absl::StatusOr<std::string> deleted =
      client_.Delete(kube::resources::kNodeClaims, "", name, options);
  if (!deleted.ok() && !kube::IsNotFound(deleted.status())) return deleted.status();
  return absl::OkStatus();
}

absl::StatusOr<bool> KubeQueueWriter::NodeClaimAlive(const std::string& name) {
  absl::StatusOr<std::string> body = client_.Get(kube::resources::kNodeClaims, "", name);
  if (!body.ok()) {
    if (kube::IsNotFound(body.status())) return false;
    return body.status();
  }
  ASSIGN_OR_RETURN(const json claim, kube::ParseJsonBody(*body));
  return !claim.value("metadata", json::object()).contains("deletionTimestamp");
}

void KubeQueueWriter::Event(const kube::ObjectReference& regarding, std::string_view type,
                            std::string_view reason, std::string_view note) {
  if (regarding.name.empty()) return;
  (void)events_.Record(regarding, type, reason, "Disruption", note);
}

// ---- Queue --------------------------------------------------------------------------------------

Queue::Queue(state::Cluster& cluster, const Clock& clock, metrics::Registry* metrics,
             QueueWriter& writer, QueueOptions options)
    : cluster_(cluster), clock_(clock), writer_(writer), options_(options) {
  if (metrics != nullptr) {
    queue_failures_ = &metrics->NewCounter("karpenter_voluntary_disruption_queue_failures_total",
                                           "Number of disruption commands that failed in the "
                                           "orchestration queue and were rolled back.",
                                           {"decision", "reason", "consolidation_type"});
    disrupted_ = &metrics->NewCounter("karpenter_nodeclaims_disrupted_total",
                                      "Number of nodeclaims disrupted in total.",
                                      {"reason", "nodepool", "capacity_type"});
    created_ = &metrics->NewCounter("karpenter_nodeclaims_created_total",
                                    "Number of nodeclaims created in total.",
                                    {"reason", "nodepool", "min_values_relaxed"});
  }
}

Queue::~Queue() { Stop(); }

void Queue::Start() {
  if (running_.exchange(true)) return;
  stop_ = std::make_unique<absl::Notification>();
  thread_ = StartThread("disruption.queue", [this] { Loop(); });
}

void Queue::Stop() {
  if (!running_.exchange(false)) return;
  stop_->Notify();
  if (thread_.joinable()) thread_.join();
}

void Queue::Loop() {
  while (running_.load()) {
    {
      WorkInProgress::Scope reconcile(work_);
      Reconcile();
    }
    if (stop_->WaitForNotificationWithTimeout(options_.poll)) break;
  }
}

absl::flat_hash_set<std::string> Queue::Held() const {
  absl::MutexLock lock(&mu_);
  return held_;
}

size_t Queue::size() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

QueueStats Queue::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

std::optional<CommandInfo> Queue::Find(std::string_view node) const {
  absl::MutexLock serial(&reconcile_mu_);  // MakeInvoluntary changes entries under it
  absl::MutexLock lock(&mu_);
  std::shared_ptr<Entry> entry = FindLocked(node);
  if (entry == nullptr) return std::nullopt;
  return CommandInfo{.id = entry->id,
                     .decision_id = entry->decision_id,
                     .involuntary = entry->involuntary,
                     .delete_when_ready = entry->delete_when_ready,
                     .cordon = entry->cordon,
                     .deadline = entry->deadline,
                     .reason = entry->reason_name,
                     .replacements = entry->replacements};
}

std::shared_ptr<Queue::Entry> Queue::FindLocked(std::string_view node) const {
  for (const auto& [id, entry] : entries_) {
    for (const state::StateNode& n : entry->candidates) {
      if (n.Key() == node || (n.node_claim != nullptr && n.node_claim->metadata.name == node)) {
        return entry;
      }
    }
  }
  return nullptr;
}

void Queue::Cordon(Entry& entry) {
  bool done = true;
  std::vector<std::string> keys;
  for (const state::StateNode& n : entry.candidates) {
    keys.push_back(n.Key());
    if (n.node == nullptr) continue;
    const std::string& name = n.node->meta.name;
    if (entry.tainted.contains(name)) continue;
    const absl::Status status = writer_.Taint(name);
    if (status.ok()) {
      entry.tainted.insert(name);
    } else {
      log::Error(kLogger, "failed to taint disrupted node",
                 {{"Node", name}, {"command", entry.id}, {"error", status.ToString()}});
      done = false;
    }
  }
  cluster_.MarkForDeletion(keys);
  entry.cordoned = done;
}

absl::StatusOr<std::string> Queue::MakeInvoluntary(std::string_view node,
                                                   const CommandOptions& options) {
  absl::MutexLock serial(&reconcile_mu_);  // entries are Reconcile's to change
  std::shared_ptr<Entry> entry;
  {
    absl::MutexLock lock(&mu_);
    entry = FindLocked(node);
  }
  if (entry == nullptr) {
    return absl::NotFoundError(Cat("no disruption command holds ", node));
  }
  const bool was_involuntary = entry->involuntary;
  entry->involuntary = true;
  // A voluntary command counts as delete_when_ready and cordon.
  entry->delete_when_ready = entry->delete_when_ready || options.delete_when_ready;
  entry->cordon = entry->cordon || options.cordon;
  if (options.deadline.has_value()) entry->deadline = std::min(entry->deadline, *options.deadline);
  if (!options.reason.empty()) {
    entry->reason_name = options.reason;
    entry->reason_label = absl::AsciiStrToLower(options.reason);
  }
  if (!options.metric_reason.empty()) entry->reason_label = options.metric_reason;
  if (entry->rolling_back) {
    // Resumed: the candidates go away after all (marks are restored below).
    entry->rolling_back = false;
    entry->cordoned = false;
  }
  if (entry->cordon && !entry->cordoned) Cordon(*entry);
  log::Info(kLogger, "disruption command made involuntary",
            {{"command", entry->id},
             {"reason", entry->reason_name},
             {"was_involuntary", was_involuntary ? "true" : "false"},
             {"deadline", Rfc3339(entry->deadline)},
             {"delete_when_ready", entry->delete_when_ready ? "true" : "false"},
             {"cordon", entry->cordon ? "true" : "false"}});
  return entry->id;
}

std::shared_ptr<Queue::Entry> Queue::NewEntry(const Command& command,
                                              const CommandOptions& options) {
  auto entry = std::make_shared<Entry>();
  entry->decision_id = command.decision_id;
  entry->method = command.method;
  entry->reason = ReasonOf(command.method);
  entry->decision = command.replacements.empty() ? "delete" : "replace";
  entry->involuntary = options.involuntary;
  entry->delete_when_ready = !options.involuntary || options.delete_when_ready;
  entry->cordon = !options.involuntary || options.cordon;
  if (options.involuntary) {
    entry->reason_name = options.reason.empty() ? "Involuntary" : options.reason;
    entry->reason_label = options.metric_reason.empty() ? absl::AsciiStrToLower(entry->reason_name)
                                                        : options.metric_reason;
  } else {
    entry->reason_name = std::string(ReasonName(entry->reason));
    entry->reason_label = ReasonLabel(entry->reason);
  }
  return entry;
}

absl::Status Queue::Reserve(Entry& entry, const std::vector<std::string>& keys) {
  absl::MutexLock lock(&mu_);
  for (const std::string& key : keys) {
    if (held_.contains(key)) {
      ++stats_.rejected;
      return absl::AlreadyExistsError(
          absl::StrCat("candidate ", key, " is already held by a disruption command"));
    }
  }
  for (const std::string& key : keys) held_.insert(key);
  entry.id = absl::StrCat(entry.reason_label, "-", ++next_id_);
  return absl::OkStatus();
}

void Queue::Release(const std::vector<std::string>& keys) {
  absl::MutexLock lock(&mu_);
  for (const std::string& key : keys) held_.erase(key);
}

absl::Status Queue::Abort(Entry& entry, const std::vector<std::string>& keys,
                          const absl::Status& status) {
  (void)Undo(entry);  // rollback retries are not possible here: best effort
  Release(keys);
  absl::MutexLock lock(&mu_);
  ++stats_.rejected;
  return status;
}

absl::Status Queue::TaintCandidates(const Command& command, Entry& entry,
                                    std::vector<std::string>& keys) {
  const bool pure_delete = command.replacements.empty();
  for (const Candidate& c : command.candidates) {
    const std::string claim_name =
        c.node.node_claim != nullptr ? c.node.node_claim->metadata.name : c.node_claim;
    absl::Status status;
    if (entry.cordon) {
      status = writer_.Taint(c.name);
      if (status.ok()) entry.tainted.insert(c.name);
    }
    if (status.ok() && !entry.involuntary) {
      status = writer_.SetDisruptionReason(claim_name, entry.reason_name);
      if (status.ok()) entry.conditioned.insert(claim_name);
    }
    if (status.ok()) {
      if (!entry.decision_id.empty()) {
        // Best effort: the annotation only links the NodeClaim to its decision.
        if (absl::Status a = writer_.AnnotateNodeClaim(claim_name, launch::kDecisionIdAnnotationKey,
                                                       entry.decision_id);
            !a.ok()) {
          log::Error(kLogger, "failed to annotate disruption candidate",
                     {{"NodeClaim", claim_name}, {"error", a.ToString()}});
        }
      }
      entry.candidates.push_back(c.node);
      continue;
    }
    log::Error(kLogger, "failed to taint disruption candidate",
               {{"Node", c.name}, {"NodeClaim", claim_name}, {"error", status.ToString()}});
    if (!pure_delete) return status;
    // A delete goes on without this candidate.
    Entry single;
    if (entry.tainted.erase(c.name) > 0) single.tainted.insert(c.name);
    if (entry.conditioned.erase(claim_name) > 0) single.conditioned.insert(claim_name);
    (void)Undo(single);
    Release({c.node.Key()});
    keys.erase(std::remove(keys.begin(), keys.end(), c.node.Key()), keys.end());
  }
  return absl::OkStatus();
}

absl::Status Queue::CreateReplacements(
    const Command& command, const absl::flat_hash_map<std::string, v1::NodePool>& node_pools,
    Entry& entry) {
  for (const solver::NewNodeClaim& planned : command.replacements) {
    const v1::NodePool& pool = node_pools.at(planned.pool);
    v1::NodeClaim claim =
        launch::BuildNodeClaim(pool, planned, {.min_values_strict = options_.min_values_strict});
    if (!entry.decision_id.empty()) {
      claim.metadata.annotations[std::string(launch::kDecisionIdAnnotationKey)] = entry.decision_id;
    }
    absl::StatusOr<v1::NodeClaim> stored = writer_.CreateNodeClaim(claim);
    if (!stored.ok()) {
      log::Error(kLogger, "failed to create replacement nodeclaim",
                 {{"NodePool", planned.pool}, {"error", stored.status().ToString()}});
      for (const std::string& name : entry.replacements) (void)writer_.DeleteNodeClaim(name, "");
      return stored.status();
    }
    const std::string name = stored->metadata.name;
    entry.replacements.push_back(name);
    if (created_ != nullptr) {
      created_->Inc(
          {entry.reason_label, planned.pool, planned.min_values_relaxed ? "true" : "false"});
    }
    log::Info(kLogger, "created nodeclaim",
              {{"NodePool", planned.pool},
               {"NodeClaim", name},
               {"command", entry.id},
               {"decisionId", entry.decision_id}});
    if (!cluster_.GetByNodeClaimName(name).has_value()) {
      cluster_.UpdateNodeClaim(std::make_shared<v1::NodeClaim>(*std::move(stored)));
    }
  }
  return absl::OkStatus();
}

void Queue::MarkAndNominate(const Command& command, Entry& entry,
                            const std::vector<std::string>& keys) {
  if (entry.cordon) {
    cluster_.MarkForDeletion(keys);
    entry.cordoned = true;
  }
  for (const std::string& name : entry.replacements) {
    cluster_.Nominate(state::UnlaunchedNodeClaimKey(name), options_.nomination);
  }
  for (const std::string& name : command.destinations) {
    if (std::optional<state::StateNode> node = cluster_.GetByNodeName(name); node.has_value()) {
      cluster_.Nominate(node->Key(), options_.nomination);
    }
  }
}

void Queue::Enqueue(const std::shared_ptr<Entry>& entry, const CommandOptions& options) {
  std::vector<std::string> names;
  for (const state::StateNode& n : entry->candidates) names.push_back(n.Name());
  {
    absl::MutexLock lock(&mu_);
    entry->deadline =
        options.deadline.value_or(clock_.Now() + CommandTimeout(entries_.size() + 1, options_));
    entries_[entry->id] = entry;
    ++stats_.started;
  }
  log::Info(kLogger, "disrupting node(s)",
            {{"command", entry->id},
             {"decisionId", entry->decision_id},
             {"reason", entry->reason_name},
             {"decision", entry->decision},
             {"involuntary", entry->involuntary ? "true" : "false"},
             {"deadline", Rfc3339(entry->deadline)},
             {"nodes", absl::StrJoin(names, ",")},
             {"replacements", absl::StrJoin(entry->replacements, ",")}});
}

absl::StatusOr<std::string> Queue::StartCommand(
    const Command& command, const absl::flat_hash_map<std::string, v1::NodePool>& node_pools,
    const CommandOptions& options) {
  if (command.candidates.empty()) return absl::InvalidArgumentError("command has no candidates");
  for (const solver::NewNodeClaim& r : command.replacements) {
    if (!node_pools.contains(r.pool)) {
      absl::MutexLock lock(&mu_);
      ++stats_.rejected;
      return absl::InvalidArgumentError(absl::StrCat("replacement NodePool ", r.pool, " unknown"));
    }
  }
  const std::shared_ptr<Entry> entry = NewEntry(command, options);
  std::vector<std::string> keys;
  for (const Candidate& c : command.candidates) keys.push_back(c.node.Key());
  // 1. Reserve the candidates.
  RETURN_IF_ERROR(Reserve(*entry, keys));
  // 2. Taint and condition (involuntary: taint only, and only with cordon).
  if (absl::Status s = TaintCandidates(command, *entry, keys); !s.ok()) {
    return Abort(*entry, keys, s);
  }
  if (entry->candidates.empty()) {
    absl::MutexLock lock(&mu_);
    ++stats_.rejected;
    return absl::UnavailableError("no candidate of the command could be tainted");
  }
  // 3. Replacements.
  if (absl::Status s = CreateReplacements(command, node_pools, *entry); !s.ok()) {
    return Abort(*entry, keys, s);
  }
  // 4. Only now: mark the candidates and nominate the replacements and the existing nodes the
  // moved pods are expected on.
  MarkAndNominate(command, *entry, keys);
  // 5. Queue.
  Enqueue(entry, options);
  return entry->id;
}

bool Queue::Undo(Entry& entry) {
  bool done = true;
  for (auto it = entry.tainted.begin(); it != entry.tainted.end();) {
    const absl::Status status = writer_.Untaint(*it);
    if (status.ok()) {
      entry.tainted.erase(it++);
    } else {
      log::Error(kLogger, "failed to remove the disrupted taint",
                 {{"Node", *it}, {"error", status.ToString()}});
      done = false;
      ++it;
    }
  }
  for (auto it = entry.conditioned.begin(); it != entry.conditioned.end();) {
    const absl::Status status = writer_.ClearDisruptionReason(*it);
    if (status.ok()) {
      entry.conditioned.erase(it++);
    } else {
      log::Error(kLogger, "failed to clear the DisruptionReason condition",
                 {{"NodeClaim", *it}, {"error", status.ToString()}});
      done = false;
      ++it;
    }
  }
  return done;
}

void Queue::Finish(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  for (const state::StateNode& n : it->second->candidates) held_.erase(n.Key());
  entries_.erase(it);
}

std::vector<ReplacementState> Queue::ReplacementStates(const Entry& entry) {
  std::vector<ReplacementState> replacements;
  for (const std::string& name : entry.replacements) {
    ReplacementState r{.name = name};
    if (std::optional<state::StateNode> node = cluster_.GetByNodeClaimName(name)) {
      r.exists = true;
      r.deleting =
          node->node_claim != nullptr && node->node_claim->metadata.deletion_timestamp.has_value();
      r.launched = node->Launched();
      r.initialized = (node->node_claim != nullptr && HasInitializedCondition(*node->node_claim)) ||
                      (node->node != nullptr && node->Initialized());
    } else {
      // The cluster state may lag (or have relisted): ask the API server before giving up.
      absl::StatusOr<bool> alive = writer_.NodeClaimAlive(name);
      r.exists = !alive.ok() || *alive;  // an API error is not evidence of deletion
    }
    replacements.push_back(std::move(r));
  }
  return replacements;
}

void Queue::NominateReplacements(std::span<const ReplacementState> replacements) {
  for (const ReplacementState& r : replacements) {
    if (!r.exists || r.deleting) continue;
    if (std::optional<state::StateNode> node = cluster_.GetByNodeClaimName(r.name)) {
      cluster_.Nominate(node->Key(), options_.nomination);
    }
  }
}

void Queue::AnnounceWait(Entry& entry, QueueAction action) {
  if (entry.last_event == action) return;
  entry.last_event = action;
  if (action == QueueAction::kWaitDeadline) {
    log::Info(kLogger, "replacements ready, waiting for the deadline",
              {{"command", entry.id}, {"deadline", Rfc3339(entry.deadline)}});
    return;
  }
  const bool launch = action == QueueAction::kWaitLaunch;
  const std::string note = launch ? Cat("Launching NodeClaim: ", entry.reason_name, "/",
                                        entry.decision, " ", absl::StrJoin(entry.replacements, ","))
                                  : absl::StrCat("Waiting on readiness to continue disruption: ",
                                                 absl::StrJoin(entry.replacements, ","));
  for (const state::StateNode& n : entry.candidates) {
    writer_.Event(NodeClaimRef(n), "Normal",
                  launch ? kEventDisruptionLaunching : kEventDisruptionWaitingReadiness, note);
  }
}

void Queue::Terminate(Entry& entry, const QueueDecision& decision,
                      const std::vector<std::string>& keys) {
  // Not cordoned (involuntary, cordon=false): provisioning must plan room for the pods from now
  // on. The termination controller taints the Node.
  if (!entry.cordoned) cluster_.MarkForDeletion(keys);
  bool all_deleted = true;
  for (const state::StateNode& n : entry.candidates) {
    const kube::ObjectReference claim = NodeClaimRef(n);
    const absl::Status deleted = writer_.DeleteNodeClaim(claim.name, claim.uid);
    if (!deleted.ok()) {
      log::Error(kLogger, "failed to delete disrupted nodeclaim",
                 {{"NodeClaim", claim.name}, {"error", deleted.ToString()}});
      all_deleted = false;
    }
  }
  if (!all_deleted) return;  // retried on the next look; DeleteNodeClaim is idempotent
  const std::string note = Cat("Disrupting Node: ", entry.reason_name, "/", entry.decision);
  for (const state::StateNode& n : entry.candidates) {
    writer_.Event(NodeRef(n), "Normal", kEventDisruptionTerminating, note);
    writer_.Event(NodeClaimRef(n), "Normal", kEventDisruptionTerminating, note);
    if (disrupted_ != nullptr) {
      disrupted_->Inc({entry.reason_label, n.NodePool(), Label(n, v1::kCapacityTypeLabelKey)});
    }
    log::Info(kLogger, "deleted nodeclaim",
              {{"NodeClaim", NodeClaimRef(n).name},
               {"command", entry.id},
               {"decisionId", entry.decision_id},
               {"why", decision.reason}});
  }
  {
    absl::MutexLock lock(&mu_);
    ++stats_.terminated;
  }
  Finish(entry.id);
}

void Queue::BeginRollback(Entry& entry, const QueueDecision& decision,
                          const std::vector<std::string>& keys) {
  log::Error(kLogger, "disruption command failed, rolling back",
             {{"command", entry.id}, {"reason", decision.reason}});
  entry.rolling_back = true;
  entry.rollback_reason = decision.reason;
  cluster_.UnmarkForDeletion(keys);
  if (queue_failures_ != nullptr) {
    queue_failures_->Inc(
        {entry.decision, ReasonLabel(entry.reason), std::string(ConsolidationType(entry.method))});
  }
  absl::MutexLock lock(&mu_);
  ++stats_.rolled_back;
}

void Queue::Advance(Entry& entry, absl::Time now) {
  std::vector<std::string> keys;
  for (const state::StateNode& n : entry.candidates) keys.push_back(n.Key());
  const std::vector<ReplacementState> replacements = ReplacementStates(entry);
  if (entry.involuntary && entry.cordon && !entry.cordoned) Cordon(entry);
  const QueueDecision decision =
      entry.involuntary
          ? DecideInvoluntary(replacements, now, entry.deadline, entry.delete_when_ready)
          : Decide(replacements, now, entry.deadline);
  if (entry.involuntary && decision.action != QueueAction::kTerminate) {
    // Keep the replacements from being disrupted while they wait (possibly empty).
    NominateReplacements(replacements);
  }
  switch (decision.action) {
    case QueueAction::kWaitDeadline:
    case QueueAction::kWaitLaunch:
    case QueueAction::kWaitReadiness:
      AnnounceWait(entry, decision.action);
      break;
    case QueueAction::kTerminate:
      Terminate(entry, decision, keys);
      break;
    case QueueAction::kRollback:
      BeginRollback(entry, decision, keys);
      break;
  }
}

void Queue::Reconcile() {
  absl::MutexLock serial(&reconcile_mu_);
  std::vector<std::shared_ptr<Entry>> entries;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, entry] : entries_) entries.push_back(entry);
  }
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a->id < b->id; });
  const absl::Time now = clock_.Now();
  for (const std::shared_ptr<Entry>& entry : entries) {
    if (!entry->rolling_back) Advance(*entry, now);
    if (entry->rolling_back && Undo(*entry)) Finish(entry->id);
  }
}

}  // namespace dovetail::controllers::disruption
