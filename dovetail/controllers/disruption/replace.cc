// DisruptionController::Replace (replacer.h): involuntary replace-then-delete, for the
// interruption controller (spot interruption, rebalance pre-launch). See disruption_controller.h.
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/log.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/controllers/disruption/disruption_controller.h"
#include "dovetail/scenario/pod_filter.h"

namespace dovetail::controllers::disruption {
namespace {

namespace v1 = apis::v1;

constexpr char kReplaceLogger[] = "disruption.replace";

// The candidate of an involuntary replacement: none of the voluntary filters apply. Its pods are
// every pod bound to the node; those to move are the reschedulable ones
// (scenario::IsReschedulable, the rule of the voluntary candidates).
Candidate InvoluntaryCandidate(const ClusterView& view, const state::StateNode& node) {
  Candidate c;
  c.node = node;
  c.name = node.Name();
  c.node_claim = node.node_claim != nullptr ? node.node_claim->metadata.name : "";
  c.node_pool = node.NodePool();
  const apis::core::StringMap labels = node.Labels();
  auto label = [&](std::string_view key) {
    auto it = labels.find(std::string(key));
    return it == labels.end() ? std::string() : it->second;
  };
  c.instance_type = label(v1::kLabelInstanceType);
  c.zone = label(v1::kLabelTopologyZone);
  c.capacity_type = label(v1::kCapacityTypeLabelKey);
  if (auto pods = view.snapshot.pods_by_node.find(c.name);
      pods != view.snapshot.pods_by_node.end()) {
    for (const state::PodPtr& pod : pods->second) {
      c.pods.push_back(pod);
      if (scenario::IsReschedulable(*pod, view.now)) c.reschedulable.push_back(pod);
    }
  }
  c.empty = c.reschedulable.empty();
  return c;
}

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

// Step 1: OK when `found` (the state of NodeClaim `name`) has a NodeClaim and a Node and is not
// being deleted; else NotFound or FailedPrecondition.
absl::Status CheckReplaceable(const std::optional<state::StateNode>& found,
                              const std::string& name) {
  if (!found.has_value() || found->node_claim == nullptr) {
    return absl::NotFoundError(absl::StrCat("nodeclaim ", name, " is not in the cluster state"));
  }
  if (found->Deleting()) {
    return absl::FailedPreconditionError(absl::StrCat("nodeclaim ", name, " is being deleted"));
  }
  if (found->node == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("nodeclaim ", name, " has no node yet"));
  }
  return absl::OkStatus();
}

// The queue's options of an involuntary command for `request`.
CommandOptions InvoluntaryOptions(const ReplaceRequest& request) {
  CommandOptions command_options{
      .involuntary = true,
      .deadline = std::nullopt,
      .delete_when_ready = request.delete_when_ready,
      .cordon = request.cordon,
      .reason = request.reason,
      .metric_reason = request.metric_reason,
  };
  // InfiniteFuture: the queue's own command timeout.
  if (request.deadline != absl::InfiniteFuture()) command_options.deadline = request.deadline;
  return command_options;
}

// The StateNode of NodeClaim `name` in `view`. Errors: NotFound; FailedPrecondition when it is
// being deleted or has no Node.
absl::StatusOr<const state::StateNode*> ReplaceableInView(const ClusterView& view,
                                                          const std::string& name) {
  const state::StateNode* node = nullptr;
  for (const state::StateNode& n : view.snapshot.nodes) {
    if (n.node_claim != nullptr && n.node_claim->metadata.name == name) {
      node = &n;
      break;
    }
  }
  if (node == nullptr) {
    return absl::NotFoundError(absl::StrCat("nodeclaim ", name, " is not in the cluster state"));
  }
  if (node->Deleting() || node->node == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("nodeclaim ", name, " is being deleted or has no node"));
  }
  return node;
}

// The involuntary command of `candidate` from the simulation of its removal: the existing nodes
// the pods move to and the replacements (without their pods, which pointed into the simulation).
Command InvoluntaryCommand(const Candidate& candidate, Simulator::Result& simulated) {
  Command command;
  command.method = Method::kDrift;  // unused by involuntary commands (no voluntary metric)
  command.pods_moved = static_cast<int>(candidate.reschedulable.size());
  for (const solver::ExistingPlacement& placed : simulated.plan.existing) {
    command.destinations.push_back(placed.node);
  }
  for (solver::NewNodeClaim& claim : simulated.plan.node_claims) {
    claim.pods.clear();  // they pointed into the simulation
    command.replacements.push_back(std::move(claim));
  }
  command.candidates.push_back(candidate);
  return command;
}

// The candidate's event note of a started replacement.
std::string ReplaceNote(const ReplaceResult& result, bool delete_when_ready, absl::Time deadline) {
  std::string note =
      result.replacements.empty()
          ? absl::StrCat("Deleting node, its ", result.pods, " pods fit on the other nodes")
          : absl::StrCat("Launching ", result.replacements.size(), " NodeClaim(s) (",
                         absl::StrJoin(result.replacements, ", "), ") for ", result.pods,
                         " pods before deleting the node");
  absl::StrAppend(
      &note, delete_when_ready ? "; deleted once they are initialized or at " : "; deleted at ",
      Rfc3339(deadline));
  if (!result.unschedulable.empty()) {
    absl::StrAppend(&note, "; ", result.unschedulable.size(), " pods fit nowhere");
  }
  return note;
}

}  // namespace

absl::StatusOr<ReplaceResult> DisruptionController::Replace(const ReplaceRequest& request) {
  absl::MutexLock lock(&pass_mu_);
  return ReplaceLocked(request);
}

absl::StatusOr<ReplaceResult> DisruptionController::MakeHeldInvoluntary(
    const ReplaceRequest& request, const CommandOptions& command_options,
    const state::StateNode& node, const std::string& event_reason) {
  ASSIGN_OR_RETURN(const std::string id,
                   queue_.MakeInvoluntary(request.node_claim, command_options));
  ReplaceResult result;
  result.command_id = id;
  result.already_held = true;
  const std::optional<CommandInfo> info = queue_.Find(request.node_claim);
  if (info.has_value()) result.replacements = info->replacements;
  writer_.Event(NodeClaimRef(node), "Normal", event_reason,
                absl::StrCat("Node already being disrupted (command ", id,
                             "): deleted once replaced, at the latest at ",
                             Rfc3339(info.has_value() ? info->deadline : request.deadline)));
  log::Info(kReplaceLogger, "node already held, command made involuntary",
            {{"NodeClaim", request.node_claim}, {"reason", request.reason}, {"command", id}});
  return result;
}

absl::StatusOr<ClusterView> DisruptionController::ReplaceView() {
  constexpr absl::Duration kSyncPoll = absl::Milliseconds(50);
  for (int64_t waits = options_.replace_sync_timeout / kSyncPoll;
       waits > 0 && !(deps_.cluster.Synced() && InformersSynced()); --waits) {
    if (stop_ != nullptr && running_.load()) {
      if (!Sleep(kSyncPoll)) return absl::UnavailableError("disruption controller is stopping");
    } else {
      absl::SleepFor(kSyncPoll);
    }
  }
  return BuildViewImpl({}, /*require_synced=*/false);
}

void DisruptionController::AnnounceReplacement(const ReplaceRequest& request,
                                               const Candidate& candidate, const Command& command,
                                               ReplaceResult& result,
                                               const std::string& event_reason) {
  std::optional<CommandInfo> info = queue_.Find(request.node_claim);
  if (info.has_value()) result.replacements = info->replacements;
  {
    absl::MutexLock l(&mu_);
    ++stats_.replacements_started;
  }
  const absl::Time deadline = info.has_value() ? info->deadline : request.deadline;
  const std::string note = ReplaceNote(result, request.delete_when_ready, deadline);
  CandidateEvents(candidate, "Normal", event_reason,
                  launch::WithDecisionId(note, command.decision_id));
  log::Info(kReplaceLogger, "replacing node before deleting it",
            {{"NodeClaim", request.node_claim},
             {"Node", candidate.name},
             {"reason", request.reason},
             {"command", result.command_id},
             {"decisionId", command.decision_id},
             {"replacements", absl::StrJoin(result.replacements, ",")},
             {"pods", absl::StrCat(result.pods)},
             {"unschedulable", absl::StrJoin(result.unschedulable, "; ")},
             {"deadline", Rfc3339(deadline)},
             {"delete_when_ready", request.delete_when_ready ? "true" : "false"},
             {"cordon", request.cordon ? "true" : "false"}});
}

absl::StatusOr<ReplaceResult> DisruptionController::ReplaceLocked(const ReplaceRequest& request) {
  // 1. The node, from the cluster state (no sync needed for that).
  const std::optional<state::StateNode> found =
      deps_.cluster.GetByNodeClaimName(request.node_claim);
  RETURN_IF_ERROR(CheckReplaceable(found, request.node_claim));
  // The events' reason (the queue falls back to the same for its command ids and metrics).
  const std::string event_reason = request.reason.empty() ? "Involuntary" : request.reason;
  const CommandOptions command_options = InvoluntaryOptions(request);

  // 2. Already held: the command becomes involuntary.
  if (queue_.Find(request.node_claim).has_value()) {
    absl::StatusOr<ReplaceResult> upgraded =
        MakeHeldInvoluntary(request, command_options, *found, event_reason);
    // NotFound: the command finished meanwhile; go on with a new one.
    if (upgraded.ok() || !absl::IsNotFound(upgraded.status())) return upgraded;
  }

  // The view: wait (bounded) for the sync gate, which replacements being launched hold.
  ASSIGN_OR_RETURN(ClusterView view, ReplaceView());
  ASSIGN_OR_RETURN(const state::StateNode* node, ReplaceableInView(view, request.node_claim));

  // 3. Simulate the node's removal.
  const Candidate candidate = InvoluntaryCandidate(view, *node);
  ASSIGN_OR_RETURN(std::unique_ptr<Simulator> simulator, CreateSimulator(view));
  ASSIGN_OR_RETURN(Simulator::Result simulated,
                   simulator->Simulate(std::span<const Candidate>(&candidate, 1)));
  ReplaceResult result;
  result.pods = static_cast<int>(candidate.reschedulable.size());
  for (const auto& [pod, reason] : simulated.unschedulable) {
    result.unschedulable.push_back(absl::StrCat(pod, ": ", reason));
  }
  Command command = InvoluntaryCommand(candidate, simulated);
  command.decision_id = decision_ids_.Next();

  // 4. Start the command.
  absl::StatusOr<std::string> id = queue_.StartCommand(command, view.node_pools, command_options);
  if (!id.ok()) {
    if (absl::IsAlreadyExists(id.status())) {
      return MakeHeldInvoluntary(request, command_options, *found, event_reason);
    }
    log::Error(kReplaceLogger, "failed to start involuntary replacement",
               {{"NodeClaim", request.node_claim},
                {"reason", request.reason},
                {"error", id.status().ToString()}});
    return id.status();
  }
  result.command_id = *id;
  AnnounceReplacement(request, candidate, command, result, event_reason);
  return result;
}

}  // namespace dovetail::controllers::disruption
