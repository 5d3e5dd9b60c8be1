#include "dovetail/providers/aws/interruption/interruption_controller.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dovetail/common/log.h"
#include "dovetail/common/thread_entry.h"
#include "dovetail/controllers/disruption/involuntary_record.h"
#include "dovetail/kube/controller_util.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/event_recorder.h"
#include "dovetail/kube/resource.h"
#include "dovetail/kube/typed_client.h"
#include "dovetail/providers/aws/interruption/node_claim_actions.h"
#include "nlohmann/json.hpp"

namespace dovetail::providers::aws::interruption {
namespace {

constexpr std::string_view kLogger = "interruption";
constexpr std::string_view kCapacityTypeLabel = "karpenter.sh/capacity-type";
constexpr std::string_view kInstanceTypeLabel = "node.kubernetes.io/instance-type";
constexpr std::string_view kZoneLabel = "topology.kubernetes.io/zone";

metrics::Counter* ReceivedCounter(metrics::Registry* r) {
  if (r == nullptr) return nullptr;
  return &r->NewCounter("karpenter_interruption_received_messages_total",
                        "Interruption messages received from the queue, by message type.",
                        {"message_type"});
}
metrics::Counter* DeletedCounter(metrics::Registry* r) {
  if (r == nullptr) return nullptr;
  return &r->NewCounter("karpenter_interruption_deleted_messages_total",
                        "Interruption messages deleted from the queue.");
}
metrics::Histogram* QueueDuration(metrics::Registry* r) {
  if (r == nullptr) return nullptr;
  return &r->NewHistogram("karpenter_interruption_message_queue_duration_seconds",
                          "Time from a message's arrival in the queue to its deletion.", {},
                          metrics::DurationBuckets());
}

}  // namespace

InterruptionController::InterruptionController(const controllers::Dependencies& deps,
                                               SqsClient& sqs, UnavailableOfferings* unavailable,
                                               controllers::disruption::Replacer* replacer,
                                               ControllerOptions options)
    : deps_(deps),
      sqs_(sqs),
      unavailable_(unavailable),
      replacer_(replacer),
      options_(std::move(options)) {
  // Register the metrics up front so that they are exposed (at zero) before the first message.
  ReceivedCounter(deps_.metrics);
  DeletedCounter(deps_.metrics);
  QueueDuration(deps_.metrics);
  NodeClaimsDisruptedCounter(deps_.metrics);
}

InterruptionController::~InterruptionController() { Stop(); }

void InterruptionController::Start() {
  if (thread_ != nullptr) return;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = false;
  }
  thread_ = std::make_unique<std::thread>(StartThread("interruption", [this] { Loop(); }));
}

void InterruptionController::Stop() {
  if (thread_ == nullptr) return;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_->join();  // at most one long poll (receive.wait_time) away
  thread_.reset();
}

bool InterruptionController::Wait(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  const bool* stopping = &stopping_;
  mu_.AwaitWithTimeout(absl::Condition(stopping), d);
  return !stopping_;
}

void InterruptionController::Loop() {
  absl::Duration backoff = options_.min_backoff;
  auto fail = [&](std::string_view what, const absl::Status& status) {
    log::Error(kLogger, what,
               {{"queue", options_.queue_name},
                {"error", std::string(status.message())},
                {"retryIn", absl::FormatDuration(backoff)}});
    const bool go_on = Wait(backoff);
    backoff = std::min(backoff * 2, options_.max_backoff);
    return go_on;
  };
  log::Info(kLogger, "starting", {{"queue", options_.queue_name}});
  bool resumed = false;
  while (Wait(absl::ZeroDuration())) {
    // Commands recorded before a crash or a leader change; retried each round until all are
    // handled (each round is at most one long poll).
    if (!resumed) resumed = ResumeRecordedCommands();
    if (queue_url_.empty()) {
      absl::StatusOr<std::string> url = sqs_.GetQueueUrl(options_.queue_name);
      if (!url.ok()) {
        if (!fail("cannot find the interruption queue", url.status())) break;
        continue;
      }
      queue_url_ = *url;
    }
    absl::StatusOr<std::vector<SqsMessage>> messages =
        sqs_.ReceiveMessage(queue_url_, options_.receive);
    if (!messages.ok()) {
      if (absl::IsNotFound(messages.status())) queue_url_.clear();  // re-created queue
      if (!fail("cannot receive interruption messages", messages.status())) break;
      continue;
    }
    backoff = options_.min_backoff;
    const size_t workers =
        std::min(messages->size(), static_cast<size_t>(std::max(options_.workers, 1)));
    if (workers <= 1) {
      for (const SqsMessage& m : *messages) Process(m);
      continue;
    }
    std::atomic<size_t> next{0};
    std::vector<std::thread> threads;
    threads.reserve(workers);
    for (size_t w = 0; w < workers; ++w) {
      threads.push_back(StartThread("interruption.handler", [&] {
        for (size_t i = next++; i < messages->size(); i = next++) Process((*messages)[i]);
      }));
    }
    for (std::thread& t : threads) t.join();
  }
  log::Info(kLogger, "stopped", {{"queue", options_.queue_name}});
}

void InterruptionController::Process(const SqsMessage& m) {
  WorkInProgress::Scope handling(handling_);
  if (!Handle(m)) return;  // back after its visibility timeout
  if (absl::Status s = sqs_.DeleteMessage(queue_url_, m.receipt_handle); !s.ok()) {
    log::Error(kLogger, "cannot delete an interruption message",
               {{"messageId", m.message_id}, {"error", std::string(s.message())}});
    return;
  }
  if (auto* c = DeletedCounter(deps_.metrics)) c->Inc();
  if (auto* h = QueueDuration(deps_.metrics); h != nullptr && m.sent != absl::InfinitePast()) {
    h->Observe({}, absl::ToDoubleSeconds(deps_.clock.Now() - m.sent));
  }
}

bool InterruptionController::Handle(const SqsMessage& sqs_message) {
  const InterruptionMessage message = ParseInterruptionMessage(sqs_message.body);
  if (auto* c = ReceivedCounter(deps_.metrics)) {
    c->Inc({std::string(InterruptionKindName(message.kind))});
  }
  if (!message.actionable()) {
    log::Info(kLogger, "deleting a message that is not an interruption event",
              {{"messageId", sqs_message.message_id},
               {"kind", std::string(InterruptionKindName(message.kind))},
               {"reason", message.reason}});
    return true;
  }
  const std::map<std::string, state::StateNode> by_instance =
      ManagedNodesByInstanceId(deps_.cluster);
  bool ok = true;
  for (const std::string& instance_id : message.instance_ids) {
    auto it = by_instance.find(instance_id);
    if (it == by_instance.end()) {
      log::Debug(
          kLogger, "no NodeClaim for the instance",
          {{"instanceId", instance_id}, {"kind", std::string(InterruptionKindName(message.kind))}});
      continue;
    }
    if (absl::Status s = ActOn(message, sqs_message.sent, instance_id, it->second); !s.ok()) {
      log::Error(kLogger, "cannot act on an interruption message",
                 {{"messageId", sqs_message.message_id},
                  {"instanceId", instance_id},
                  {"error", std::string(s.message())}});
      ok = false;
    }
  }
  return ok;
}

absl::Status InterruptionController::ActOn(const InterruptionMessage& message, absl::Time received,
                                           const std::string& instance_id,
                                           const state::StateNode& node) {
  const apis::v1::NodeClaim& claim = *node.node_claim;
  const std::string pool = node.NodePool();
  DecisionContext context;
  context.now = deps_.clock.Now();
  context.received = received;
  context.drain_reserve = options_.drain_reserve;
  context.scheduled_change_max_wait = options_.scheduled_change_max_wait;
  if (message.kind == InterruptionKind::kRebalanceRecommendation) {
    context.rebalance = RebalanceSettingsOf(pool);
  }
  const Action action = DecideAction(message, context);
  const std::string kind(InterruptionKindName(message.kind));
  const std::string node_name = node.node != nullptr ? node.Name() : std::string();
  const bool deleting = node.Deleting();
  // A NodeClaim without a Node has no pods to make room for: nothing to replace.
  const bool replace = action.replace && replacer_ != nullptr && !deleting && node.node != nullptr;
  std::string what = "none";
  if (deleting) {
    what = "none (already deleting)";
  } else if (replace) {
    what = "replace";
  } else if (action.delete_node_claim) {
    what = "delete";
  }
  log::Info(kLogger, "interruption",
            {{"kind", kind},
             {"instanceId", instance_id},
             {"nodeClaim", claim.metadata.name},
             {"node", node_name},
             {"action", what}});
  if (!action.event_reason.empty()) {
    RecordInterruptionEvent(deps_.events, node, action.event_reason, action.event_message);
  }
  // First, so that the replacements launched next avoid the interrupted offering.
  if (action.mark_spot_unavailable && unavailable_ != nullptr &&
      NodeLabel(node, kCapacityTypeLabel) == "spot") {
    const std::string type = NodeLabel(node, kInstanceTypeLabel);
    const std::string zone = NodeLabel(node, kZoneLabel);
    if (!type.empty() && !zone.empty()) {
      unavailable_->MarkUnavailable("SpotInterruption", "spot", type, zone);
    }
  }
  if (deleting) return absl::OkStatus();
  if (action.taint_rebalance && node.node != nullptr) {
    if (absl::Status s = TaintNode(node.Name()); !s.ok()) return s;
  }
  if (replace) {
    controllers::disruption::ReplaceRequest request;
    request.node_claim = claim.metadata.name;
    request.reason = action.event_reason;
    request.metric_reason = kind;  // upstream's label: the message kind, e.g. spot_interrupted
    request.deadline = action.replace_deadline;
    request.delete_when_ready = action.replace_delete_when_ready;
    request.cordon = action.replace_cordon;
    // Durable first: the message is deleted once this returns OK, and the queue holds commands in
    // memory only (involuntary_record.h).
    if (absl::Status s = RecordCommand(request); !s.ok()) {
      if (kube::IsNotFound(s)) {
        log::Info(kLogger, "the interrupted NodeClaim is gone",
                  {{"nodeClaim", claim.metadata.name}});
        return absl::OkStatus();
      }
      return s;
    }
    absl::StatusOr<controllers::disruption::ReplaceResult> result = replacer_->Replace(request);
    if (result.ok()) {
      log::Info(
          kLogger, "replacing the interrupted node",
          {{"kind", kind},
           {"nodeClaim", claim.metadata.name},
           {"node", node_name},
           {"command", result->command_id},
           {"replacements", absl::StrJoin(result->replacements, ",")},
           {"alreadyHeld", result->already_held ? "true" : "false"},
           {"pods", absl::StrCat(result->pods)},
           {"deadline", absl::FormatTime(absl::RFC3339_sec, request.deadline, absl::UTCTimeZone())},
           {"unschedulable", absl::StrJoin(result->unschedulable, "; ")}});
      return absl::OkStatus();
    }
    if (absl::IsNotFound(result.status())) {
      log::Info(kLogger, "the interrupted NodeClaim is gone",
                {{"nodeClaim", claim.metadata.name}, {"error", result.status().ToString()}});
      return absl::OkStatus();
    }
    // FailedPrecondition (already deleting, or no Node yet) included: the deletion below is
    // idempotent.
    log::Error(kLogger,
               action.delete_node_claim
                   ? "cannot replace the interrupted node; deleting its NodeClaim at once"
                   : "cannot pre-launch a replacement for the node",
               {{"kind", kind},
                {"nodeClaim", claim.metadata.name},
                {"node", node_name},
                {"error", result.status().ToString()}});
  }
  if (action.delete_node_claim) return DeleteNodeClaim(message, node);
  return absl::OkStatus();
}

absl::Status InterruptionController::DeleteNodeClaim(const InterruptionMessage& message,
                                                     const state::StateNode& node) {
  return DeleteInterruptedNodeClaim(deps_, node, InterruptionKindName(message.kind), kLogger);
}

absl::Status InterruptionController::RecordCommand(
    const controllers::disruption::ReplaceRequest& request) {
  namespace disruption = controllers::disruption;
  return kube::RetryOnConflict([&]() -> absl::Status {
    absl::StatusOr<std::string> body =
        deps_.client.Get(kube::resources::kNodeClaims, "", request.node_claim);
    if (!body.ok()) return body.status();
    absl::StatusOr<nlohmann::json> claim = kube::ParseJsonBody(*body);
    if (!claim.ok()) return claim.status();
    const nlohmann::json& meta = (*claim)["metadata"];
    if (!meta.is_object()) return absl::InternalError("NodeClaim without metadata");
    disruption::ReplaceRequest record = request;
    if (auto a = meta.find("annotations"); a != meta.end() && a->is_object()) {
      if (auto v = a->find(disruption::kInvoluntaryDisruptionAnnotation);
          v != a->end() && v->is_string()) {
        absl::StatusOr<disruption::ReplaceRequest> recorded =
            disruption::DecodeInvoluntaryRecord(request.node_claim, v->get<std::string>());
        if (recorded.ok()) record = disruption::MergeInvoluntary(*recorded, request);
      }
    }
    const nlohmann::json patch = {{"metadata",
                                   {{"resourceVersion", meta.value("resourceVersion", "")},
                                    {"annotations",
                                     {{std::string(disruption::kInvoluntaryDisruptionAnnotation),
                                       disruption::EncodeInvoluntaryRecord(record)}}}}}};
    return deps_.client
        .Patch(kube::resources::kNodeClaims, "", request.node_claim, kube::PatchType::kMerge,
               patch.dump())
        .status();
  });
}

bool InterruptionController::ResumeRecordedCommands() {
  namespace disruption = controllers::disruption;
  bool all_done = true;
  for (const state::StateNode& node : deps_.cluster.Nodes()) {
    if (node.node_claim == nullptr || node.Deleting()) continue;
    const auto& annotations = node.node_claim->metadata.annotations;
    auto it = annotations.find(disruption::kInvoluntaryDisruptionAnnotation);
    if (it == annotations.end()) continue;
    const std::string& name = node.node_claim->metadata.name;
    absl::StatusOr<disruption::ReplaceRequest> recorded =
        disruption::DecodeInvoluntaryRecord(name, it->second);
    std::string kind = "involuntary";
    absl::Status status;
    if (!recorded.ok()) {
      // Someone edited our record; what it held was an interruption: drain now.
      log::Error(kLogger, "unreadable involuntary command record; deleting the NodeClaim",
                 {{"nodeClaim", name}, {"error", recorded.status().ToString()}});
      status = DeleteInterruptedNodeClaim(deps_, node, kind, kLogger);
    } else {
      if (!recorded->metric_reason.empty()) kind = recorded->metric_reason;
      const disruption::ResumeAction action =
          disruption::DecideResume(*recorded, deps_.clock.Now());
      log::Info(kLogger, "resuming a recorded involuntary command",
                {{"nodeClaim", name},
                 {"reason", recorded->reason},
                 {"deadline",
                  absl::FormatTime(absl::RFC3339_sec, recorded->deadline, absl::UTCTimeZone())},
                 {"action", action == disruption::ResumeAction::kReplace && replacer_ != nullptr
                                ? "replace"
                                : "delete"}});
      bool replaced = false;
      if (action == disruption::ResumeAction::kReplace && replacer_ != nullptr &&
          node.node != nullptr) {
        absl::StatusOr<disruption::ReplaceResult> result = replacer_->Replace(*recorded);
        replaced = result.ok() || absl::IsNotFound(result.status());
        if (!replaced) {
          log::Error(kLogger, "cannot resume the replacement; deleting the NodeClaim at once",
                     {{"nodeClaim", name}, {"error", result.status().ToString()}});
        }
      }
      if (!replaced) status = DeleteInterruptedNodeClaim(deps_, node, kind, kLogger);
    }
    if (!status.ok()) {
      log::Error(kLogger, "cannot resume a recorded involuntary command",
                 {{"nodeClaim", name}, {"error", status.ToString()}});
      all_done = false;
    }
  }
  return all_done;
}

RebalanceSettings InterruptionController::RebalanceSettingsOf(const std::string& node_pool) {
  if (node_pool.empty()) return {};
  absl::StatusOr<std::string> body = deps_.client.Get(kube::resources::kNodePools, "", node_pool);
  if (!body.ok()) return {};
  absl::StatusOr<nlohmann::json> json = kube::ParseJsonBody(*body);
  if (!json.ok()) return {};
  std::map<std::string, std::string> annotations;
  if (auto m = json->find("metadata"); m != json->end() && m->is_object()) {
    if (auto a = m->find("annotations"); a != m->end() && a->is_object()) {
      for (const auto& [key, value] : a->items()) {
        if (value.is_string()) annotations.emplace(key, value.get<std::string>());
      }
    }
  }
  std::string problem;
  RebalanceSettings settings = ParseRebalanceSettings(annotations, &problem);
  if (!problem.empty()) {
    log::Error(kLogger, "invalid rebalance annotations on the NodePool",
               {{"nodePool", node_pool}, {"error", problem}});
  }
  return settings;
}

absl::Status InterruptionController::TaintNode(const std::string& node_name) {
  absl::StatusOr<std::string> body = deps_.client.Get(kube::resources::kNodes, "", node_name);
  if (!body.ok()) return kube::IsNotFound(body.status()) ? absl::OkStatus() : body.status();
  absl::StatusOr<nlohmann::json> node = kube::ParseJsonBody(*body);
  if (!node.ok()) return node.status();
  nlohmann::json taints = nlohmann::json::array();
  if (auto spec = node->find("spec"); spec != node->end() && spec->is_object()) {
    if (auto t = spec->find("taints"); t != spec->end() && t->is_array()) taints = *t;
  }
  for (const nlohmann::json& t : taints) {
    if (t.is_object() && t.value("key", "") == kRebalanceTaintKey) return absl::OkStatus();
  }
  taints.push_back({{"key", std::string(kRebalanceTaintKey)}, {"effect", "PreferNoSchedule"}});
  nlohmann::json patch = {
      {"metadata", {{"resourceVersion", (*node)["metadata"].value("resourceVersion", "")}}},
      {"spec", {{"taints", taints}}}};
  absl::StatusOr<std::string> patched = deps_.client.Patch(kube::resources::kNodes, "", node_name,
                                                           kube::PatchType::kMerge, patch.dump());
  if (!patched.ok()) return patched.status();
  return absl::OkStatus();
}

}  // namespace dovetail::providers::aws::interruption
