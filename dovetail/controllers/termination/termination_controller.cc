#include "dovetail/controllers/termination/termination_controller.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/errors.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/duration.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/kube/controller_util.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/resource.h"
#include "dovetail/kube/typed_client.h"
#include "dovetail/state/pod_predicates.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::termination {

namespace core = apis::core;
namespace v1 = apis::v1;

namespace {

constexpr std::string_view kNodePrefix = "node/";
constexpr std::string_view kNodeClaimPrefix = "nodeclaim/";
constexpr std::string_view kAction = "Terminate";
constexpr std::string_view kConditionDrained = "Drained";
constexpr std::string_view kConditionVolumesDetached = "VolumesDetached";
constexpr std::string_view kConditionInstanceTerminating = "InstanceTerminating";

bool HasFinalizer(const core::ObjectMeta& meta, std::string_view finalizer) {
  return std::find(meta.finalizers.begin(), meta.finalizers.end(), finalizer) !=
         meta.finalizers.end();
}

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

std::optional<absl::Time> ParseTime(std::string_view text) {
  absl::Time t;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, AsAbsl(text), &t, &error)) return std::nullopt;
  return t;
}

kube::ReconcileResult After(absl::Duration d) {
  return kube::ReconcileResult{.requeue_after = std::max(d, absl::Milliseconds(1))};
}

std::string LabelOf(const core::ObjectMeta& metadata, std::string_view key) {
  auto it = metadata.labels.find(key);
  return it == metadata.labels.end() ? "" : it->second;
}

}  // namespace

std::string TerminationController::NodeKey(std::string_view name) { return Cat(kNodePrefix, name); }
std::string TerminationController::NodeClaimKey(std::string_view name) {
  return Cat(kNodeClaimPrefix, name);
}

namespace {

// What the informer handlers and Seed enqueue: the Nodes and NodeClaims being deleted.
bool NodeDeleting(const kube::NodeInfo& node) { return node.meta.deletion.has_value(); }
bool NodeClaimDeleting(const v1::NodeClaim& claim) {
  return claim.metadata.deletion_timestamp.has_value();
}
std::string NodeKeyOf(const kube::NodeInfo& node) {
  return TerminationController::NodeKey(node.meta.name);
}
std::string NodeClaimKeyOf(const v1::NodeClaim& claim) {
  return TerminationController::NodeClaimKey(claim.metadata.name);
}

}  // namespace

TerminationController::TerminationController(const Dependencies& deps, TerminationOptions options)
    : QueueController("node.termination", deps, options.queue, options.workers),
      options_(std::move(options)) {
  if (metrics::Registry* r = deps_.metrics; r != nullptr) {
    nodes_terminated_ = &r->NewCounter("karpenter_nodes_terminated_total",
                                       "Number of nodes terminated in total by Karpenter. Labeled "
                                       "by owning nodepool and zone.",
                                       {"nodepool", "zone"});
    node_termination_duration_ =
        &r->NewSummary("karpenter_nodes_termination_duration_seconds",
                       "The time taken between a node's deletion request and the removal of its "
                       "finalizer",
                       {"nodepool"});
    node_lifetime_ = &r->NewHistogram(
        "karpenter_nodes_lifetime_duration_seconds",
        "The lifetime duration of the nodes since creation.", {"nodepool"},
        {900,   1800,  2700,   3600,   7200,   14400,  21600,   28800,   36000,   43200,  57600,
         72000, 86400, 172800, 259200, 432000, 864000, 1296000, 1728000, 2160000, 2592000});
    nodes_drained_ = &r->NewCounter(
        "karpenter_nodes_drained_total",
        "The total number of nodes drained by Karpenter, by owning nodepool.", {"nodepool"});
    eviction_requests_ = &r->NewCounter(
        "karpenter_pods_eviction_requests_total",
        "The total number of eviction requests made by Karpenter, by the HTTP code answered.",
        {"code"});
    pods_drained_ = &r->NewCounter(
        "karpenter_pods_drained_total",
        "Number of pods drained by Karpenter, by the disruption reason of their node.", {"reason"});
    node_claims_terminated_ = &r->NewCounter(
        "karpenter_nodeclaims_terminated_total",
        "Number of nodeclaims terminated in total by Karpenter. Labeled by the owning nodepool, "
        "capacity type and zone.",
        {"nodepool", "capacity_type", "zone"});
    node_claim_termination_duration_ =
        &r->NewHistogram("karpenter_nodeclaims_termination_duration_seconds",
                         "Duration of NodeClaim termination in seconds.", {"nodepool"},
                         {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048});
    instance_termination_duration_ =
        &r->NewHistogram("karpenter_nodeclaims_instance_termination_duration_seconds",
                         "Duration of CloudProvider Instance termination in seconds.", {"nodepool"},
                         {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024});
  }
  auto on_node_gone = [this](const std::shared_ptr<const kube::NodeInfo>& node) {
    Forget(node->meta.name);
    // A deleting NodeClaim waits for its Nodes to go.
    if (node->provider_id.empty()) return;
    std::optional<state::StateNode> state = deps_.cluster.Get(node->provider_id);
    if (state.has_value() && state->node_claim != nullptr) {
      Enqueue(NodeClaimKey(state->node_claim->metadata.name));
    }
  };
  registrations_.push_back(
      EnqueueWhen(deps_.informers.nodes(), NodeDeleting, on_node_gone, NodeKeyOf));
  registrations_.push_back(
      EnqueueWhen(deps_.informers.node_claims(), NodeClaimDeleting, nullptr, NodeClaimKeyOf));
  auto on_pod = [this](const std::shared_ptr<const kube::PodInfo>& pod) {
    if (pod->node_name.empty()) return;
    bool draining = false;
    {
      absl::MutexLock lock(&mu_);
      draining = draining_.contains(pod->node_name);
    }
    if (draining) Enqueue(NodeKey(pod->node_name));
  };
  registrations_.push_back(deps_.informers.pods().AddHandler({
      .on_add = nullptr,
      .on_update = [on_pod](const auto&, const auto& pod) { on_pod(pod); },
      .on_delete = on_pod,
  }));
}

TerminationController::~TerminationController() { Stop(); }

void TerminationController::Seed(kube::WorkQueue& queue) {
  AddWhere(queue, deps_.informers.nodes(), NodeDeleting, NodeKeyOf);
  AddWhere(queue, deps_.informers.node_claims(), NodeClaimDeleting, NodeClaimKeyOf);
}

void TerminationController::Forget(const std::string& node_name) {
  absl::MutexLock lock(&mu_);
  draining_.erase(node_name);
  drain_.erase(node_name);
}

absl::StatusOr<kube::ReconcileResult> TerminationController::Reconcile(const std::string& key) {
  if (absl::StartsWith(key, AsAbsl(kNodePrefix))) {
    return ReconcileNode(key.substr(kNodePrefix.size()));
  }
  if (absl::StartsWith(key, AsAbsl(kNodeClaimPrefix))) {
    return ReconcileNodeClaim(key.substr(kNodeClaimPrefix.size()));
  }
  return absl::InvalidArgumentError(Cat("termination: unknown key ", key));
}

// ---- events -------------------------------------------------------------------------------------

void TerminationController::NodeEvent(const core::Node& node, std::string_view type,
                                      std::string_view reason, std::string_view message) {
  // Dropped or failed events never fail a reconcile.
  (void)deps_.events.Record({.api_version = "v1",
                             .kind = "Node",
                             .ns = "",
                             .name = node.metadata.name,
                             .uid = node.metadata.uid},
                            type, reason, kAction, message);
}

void TerminationController::NodeClaimEvent(const v1::NodeClaim& node_claim, std::string_view type,
                                           std::string_view reason, std::string_view message) {
  (void)deps_.events.Record({.api_version = std::string(v1::kApiVersion),
                             .kind = std::string(v1::kNodeClaimKind),
                             .ns = "",
                             .name = node_claim.metadata.name,
                             .uid = node_claim.metadata.uid},
                            type, reason, kAction, message);
}

void TerminationController::PodEvent(const PodRef& pod, std::string_view type,
                                     std::string_view reason, std::string_view message) {
  (void)deps_.events.Record(
      {.api_version = "v1", .kind = "Pod", .ns = pod.ns, .name = pod.name, .uid = pod.uid}, type,
      reason, kAction, message);
}

// ---- NodeClaim ----------------------------------------------------------------------------------

std::optional<absl::Time> TerminationController::TerminationTime(
    const v1::NodeClaim& node_claim) const {
  auto it = node_claim.metadata.annotations.find(v1::kNodeClaimTerminationTimestampAnnotationKey);
  if (it != node_claim.metadata.annotations.end()) {
    if (std::optional<absl::Time> t = ParseTime(it->second); t.has_value()) return t;
  }
  if (!node_claim.metadata.deletion_timestamp.has_value() ||
      !node_claim.spec.termination_grace_period.has_value()) {
    return std::nullopt;
  }
  absl::StatusOr<absl::Duration> grace = ParseGoDuration(*node_claim.spec.termination_grace_period);
  if (!grace.ok()) return std::nullopt;
  return *node_claim.metadata.deletion_timestamp + *grace;
}

absl::StatusOr<std::vector<core::Node>> TerminationController::NodesForNodeClaim(
    const v1::NodeClaim& node_claim) {
  std::vector<core::Node> out;
  const std::string& provider_id = node_claim.status.provider_id;
  if (provider_id.empty()) return out;
  std::vector<std::string> names;
  for (const auto& node :
       deps_.informers.nodes().store().ByIndex(kube::kIndexProviderId, provider_id)) {
    names.push_back(node->meta.name);
  }
  if (std::optional<state::StateNode> state = deps_.cluster.Get(provider_id);
      state.has_value() && state->node != nullptr) {
    names.push_back(state->node->meta.name);
  }
  if (!node_claim.status.node_name.empty()) names.push_back(node_claim.status.node_name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  kube::TypedClient<core::Node> nodes(deps_.client, kube::resources::kNodes);
  for (const std::string& name : names) {
    absl::StatusOr<core::Node> node = nodes.Get("", name);
    if (!node.ok()) {
      if (kube::IsNotFound(node.status())) continue;
      return node.status();
    }
    if (node->spec.provider_id == provider_id) out.push_back(*std::move(node));
  }
  return out;
}

absl::StatusOr<kube::ReconcileResult> TerminationController::ReconcileNodeClaim(
    const std::string& name) {
  kube::TypedClient<v1::NodeClaim> claims(deps_.client, kube::resources::kNodeClaims);
  absl::StatusOr<v1::NodeClaim> claim = claims.Get("", name);
  if (!claim.ok()) {
    if (kube::IsNotFound(claim.status())) return kube::ReconcileResult{};
    return claim.status();
  }
  if (!claim->metadata.deletion_timestamp.has_value() ||
      !HasFinalizer(claim->metadata, v1::kTerminationFinalizer)) {
    return kube::ReconcileResult{};
  }

  // 1. The termination deadline, for the Node flow and for whoever reads the NodeClaim.
  if (!claim->metadata.annotations.contains(v1::kNodeClaimTerminationTimestampAnnotationKey)) {
    if (std::optional<absl::Time> deadline = TerminationTime(*claim); deadline.has_value()) {
      const nlohmann::json patch = {
          {"metadata",
           {{"resourceVersion", claim->metadata.resource_version},
            {"annotations",
             {{std::string(v1::kNodeClaimTerminationTimestampAnnotationKey),
               Rfc3339(*deadline)}}}}}};
      absl::StatusOr<v1::NodeClaim> patched =
          claims.Patch("", name, kube::PatchType::kMerge, patch.dump());
      if (!patched.ok()) return patched.status();
      NodeClaimEvent(*patched, "Warning", "TerminationGracePeriodExpiring",
                     Cat("All pods will be deleted by ", Rfc3339(*deadline)));
      claim = std::move(patched);
    }
  }

  // 2. Its Nodes go first (the Node flow drains them and removes their finalizer).
  ASSIGN_OR_RETURN(const std::vector<core::Node> nodes, NodesForNodeClaim(*claim));
  for (const core::Node& node : nodes) {
    if (node.metadata.deletion_timestamp.has_value()) continue;
    absl::StatusOr<std::string> deleted = deps_.client.Delete(
        kube::resources::kNodes, "", node.metadata.name, {.precondition_uid = node.metadata.uid});
    if (!deleted.ok() && !kube::IsNotFound(deleted.status()) &&
        !kube::IsConflict(deleted.status())) {
      return deleted.status();
    }
  }
  if (!nodes.empty()) return After(options_.instance_interval);

  // 3. The instance.
  if (!claim->status.provider_id.empty()) {
    const absl::Status deleted = deps_.cloud.Delete(*claim);
    if (!cloudprovider::IsNodeClaimNotFound(deleted)) {
      if (!deleted.ok()) return deleted;
      return After(options_.instance_interval);
    }
    const core::Condition* terminating =
        v1::FindCondition(claim->status.conditions, kConditionInstanceTerminating);
    if (instance_termination_duration_ != nullptr && terminating != nullptr &&
        terminating->status == core::ConditionStatus::kTrue &&
        terminating->last_transition_time.has_value()) {
      instance_termination_duration_->Observe(
          {LabelOf(claim->metadata, v1::kNodePoolLabelKey)},
          absl::ToDoubleSeconds(deps_.clock.Now() - *terminating->last_transition_time));
    }
  }

  // 4. The finalizer, last.
  RETURN_IF_ERROR(kube::RemoveFinalizer(deps_.client, kube::resources::kNodeClaims, "", name,
                                        v1::kTerminationFinalizer));
  NodeClaimTerminated(*claim);
  return kube::ReconcileResult{};
}

// ---- Node ---------------------------------------------------------------------------------------

absl::StatusOr<std::optional<v1::NodeClaim>> TerminationController::NodeClaimForNode(
    const core::Node& node) {
  const std::string& provider_id = node.spec.provider_id;
  if (provider_id.empty()) return std::optional<v1::NodeClaim>();
  kube::TypedClient<v1::NodeClaim> claims(deps_.client, kube::resources::kNodeClaims);
  std::optional<state::StateNode> state = deps_.cluster.Get(provider_id);
  if (state.has_value() && state->node_claim != nullptr) {
    absl::StatusOr<v1::NodeClaim> claim = claims.Get("", state->node_claim->metadata.name);
    if (claim.ok() && claim->status.provider_id == provider_id) {
      return std::optional<v1::NodeClaim>(*std::move(claim));
    }
    if (!claim.ok() && !kube::IsNotFound(claim.status())) return claim.status();
  }
  // Not (or no longer) in the cache: ask the API server.
  ASSIGN_OR_RETURN(std::vector<v1::NodeClaim> all, claims.List(""));
  for (v1::NodeClaim& claim : all) {
    if (claim.status.provider_id == provider_id) return std::optional<v1::NodeClaim>(claim);
  }
  return std::optional<v1::NodeClaim>();
}

absl::Status TerminationController::Taint(const std::string& node_name) {
  return kube::RetryOnConflict([&]() -> absl::Status {
    ASSIGN_OR_RETURN(const std::string body,
                     deps_.client.Get(kube::resources::kNodes, "", node_name));
    ASSIGN_OR_RETURN(const nlohmann::json node, kube::ParseJsonBody(body));
    nlohmann::json taints = nlohmann::json::array();
    bool tainted = false;
    bool changed = false;
    const nlohmann::json spec = node.value("spec", nlohmann::json::object());
    for (const nlohmann::json& taint : spec.value("taints", nlohmann::json::array())) {
      if (taint.value("key", "") == v1::kDisruptedTaintKey) {
        if (taint.value("effect", "") != "NoSchedule") {
          changed = true;  // the same key with another effect is replaced
          continue;
        }
        tainted = true;
      }
      taints.push_back(taint);
    }
    if (!tainted) {
      taints.push_back({{"key", std::string(v1::kDisruptedTaintKey)}, {"effect", "NoSchedule"}});
      changed = true;
    }
    const nlohmann::json metadata = node.value("metadata", nlohmann::json::object());
    const nlohmann::json labels = metadata.value("labels", nlohmann::json::object());
    const std::string lb_key(v1::kLabelExcludeFromExternalLoadBalancers);
    const bool labelled = labels.contains(lb_key);
    if (!changed && labelled) return absl::OkStatus();
    nlohmann::json patch = {
        {"metadata", {{"resourceVersion", metadata.value("resourceVersion", "")}}},
        {"spec", {{"taints", taints}}}};
    if (!labelled) {
      patch["metadata"]["labels"] = {
          {lb_key, std::string(v1::kExcludeFromExternalLoadBalancersValue)}};
    }
    return deps_.client
        .Patch(kube::resources::kNodes, "", node_name, kube::PatchType::kMerge, patch.dump())
        .status();
  });
}

void TerminationController::SetCondition(const std::string& node_claim_name, std::string_view type,
                                         std::string_view status, std::string_view reason,
                                         std::string_view message) {
  (void)kube::RetryOnConflict([&]() -> absl::Status {
    ASSIGN_OR_RETURN(const std::string body,
                     deps_.client.Get(kube::resources::kNodeClaims, "", node_claim_name));
    ASSIGN_OR_RETURN(const nlohmann::json claim, kube::ParseJsonBody(body));
    const nlohmann::json metadata = claim.value("metadata", nlohmann::json::object());
    const int64_t generation = metadata.value("generation", int64_t{0});
    nlohmann::json conditions = claim.value("status", nlohmann::json::object())
                                    .value("conditions", nlohmann::json::array());
    const std::string now = Rfc3339(deps_.clock.Now());
    bool found = false;
    for (nlohmann::json& condition : conditions) {
      if (condition.value("type", "") != type) continue;
      found = true;
      if (condition.value("status", "") == status && condition.value("reason", "") == reason &&
          condition.value("message", "") == message) {
        return absl::OkStatus();
      }
      if (condition.value("status", "") != status) condition["lastTransitionTime"] = now;
      condition["status"] = std::string(status);
      condition["reason"] = std::string(reason);
      condition["message"] = std::string(message);
      condition["observedGeneration"] = generation;
    }
    if (!found) {
      conditions.push_back({{"type", std::string(type)},
                            {"status", std::string(status)},
                            {"reason", std::string(reason)},
                            {"message", std::string(message)},
                            {"lastTransitionTime", now},
                            {"observedGeneration", generation}});
    }
    const nlohmann::json patch = {
        {"metadata", {{"resourceVersion", metadata.value("resourceVersion", "")}}},
        {"status", {{"conditions", conditions}}}};
    return deps_.client
        .Patch(kube::resources::kNodeClaims, "", node_claim_name, kube::PatchType::kMerge,
               patch.dump(), {}, "status")
        .status();
  });
}

absl::StatusOr<std::vector<kube::PodInfo>> TerminationController::PodsOn(
    const std::string& node_name) {
  std::vector<kube::PodInfo> out;
  RETURN_IF_ERROR(deps_.client.ListAll(
      kube::resources::kPods, "", {.field_selector = Cat("spec.nodeName=", node_name)},
      [&](const kube::ListPage& page) -> absl::Status {
        ASSIGN_OR_RETURN(std::vector<kube::PodInfo> pods, kube::DecodePodList(page.body, decode_));
        out.insert(out.end(), std::make_move_iterator(pods.begin()),
                   std::make_move_iterator(pods.end()));
        return absl::OkStatus();
      }));
  return out;
}

absl::Status TerminationController::Evict(const core::Node& node, const PodRef& pod,
                                          DrainState& state, const std::string& reason) {
  const absl::Status evicted = deps_.client.Evict(pod.ns, pod.name, {.precondition_uid = pod.uid});
  if (eviction_requests_ != nullptr) {
    const int code = evicted.ok() ? 200 : kube::HttpCodeOf(evicted);
    if (code > 0) eviction_requests_->Inc({std::to_string(code)});
    if (evicted.ok()) pods_drained_->Inc({reason});
  }
  if (evicted.ok()) {
    state.pods.erase(pod.uid);
    PodEvent(pod, "Normal", "Evicted",
             Cat("Evicted pod: draining node ", node.metadata.name, " (", DrainTierName(pod.tier),
                 " pods)"));
    return absl::OkStatus();
  }
  // Gone, or replaced by another pod of the same name: nothing to evict.
  if (kube::IsNotFound(evicted) || kube::IsConflict(evicted)) {
    state.pods.erase(pod.uid);
    return absl::OkStatus();
  }
  EvictionBackoff& backoff = state.pods[pod.uid];
  ++backoff.failures;
  absl::Duration delay = options_.eviction_backoff_base;
  for (int i = 1; i < backoff.failures && delay < options_.eviction_backoff_max; ++i) delay *= 2;
  backoff.next_attempt = deps_.clock.Now() + std::min(delay, options_.eviction_backoff_max);
  if (kube::IsTooManyRequests(evicted)) {
    NodeEvent(
        node, "Warning", "FailedDraining",
        Cat("Failed to drain node, evicting pod ", pod.Key(), " violates a PodDisruptionBudget"));
  } else {
    // Among others, 500 "This pod has more than one PodDisruptionBudget".
    NodeEvent(node, "Warning", "FailedDraining",
              Cat("Failed to drain node, evicting pod ", pod.Key(), ": ", evicted.message()));
  }
  return absl::OkStatus();
}

void TerminationController::NodeTerminated(const core::Node& node) {
  if (nodes_terminated_ == nullptr) return;
  const std::string pool = LabelOf(node.metadata, v1::kNodePoolLabelKey);
  const absl::Time now = deps_.clock.Now();
  nodes_terminated_->Inc({pool, LabelOf(node.metadata, v1::kLabelTopologyZone)});
  if (node.metadata.deletion_timestamp.has_value()) {
    node_termination_duration_->Observe(
        {pool}, absl::ToDoubleSeconds(now - *node.metadata.deletion_timestamp));
  }
  if (node.metadata.creation_timestamp.has_value()) {
    node_lifetime_->Observe({pool}, absl::ToDoubleSeconds(now - *node.metadata.creation_timestamp));
  }
}

void TerminationController::NodeClaimTerminated(const v1::NodeClaim& claim) {
  if (node_claims_terminated_ == nullptr) return;
  const std::string pool = LabelOf(claim.metadata, v1::kNodePoolLabelKey);
  node_claims_terminated_->Inc({pool, LabelOf(claim.metadata, v1::kCapacityTypeLabelKey),
                                LabelOf(claim.metadata, v1::kLabelTopologyZone)});
  if (claim.metadata.deletion_timestamp.has_value()) {
    node_claim_termination_duration_->Observe(
        {pool}, absl::ToDoubleSeconds(deps_.clock.Now() - *claim.metadata.deletion_timestamp));
  }
}

absl::StatusOr<std::optional<absl::Duration>> TerminationController::Drain(
    const core::Node& node, std::optional<absl::Time> deadline, const std::string& reason) {
  const std::string& name = node.metadata.name;
  {
    absl::MutexLock lock(&mu_);
    draining_.insert(name);
  }
  ASSIGN_OR_RETURN(const std::vector<kube::PodInfo> pods, PodsOn(name));
  const absl::Time now = deps_.clock.Now();
  const DrainPlan plan = PlanDrain(pods, now, deadline);

  // Past the deadline (or about to be, for the pod's own grace): delete, whatever the tier.
  for (const ForceDelete& force : plan.force_delete) {
    absl::StatusOr<std::string> deleted = deps_.client.Delete(
        kube::resources::kPods, force.pod.ns, force.pod.name,
        {.precondition_uid = force.pod.uid, .grace_period_seconds = force.grace_seconds});
    if (!deleted.ok() && !kube::IsNotFound(deleted.status()) &&
        !kube::IsConflict(deleted.status())) {
      return deleted.status();
    }
    PodEvent(force.pod, "Warning", "Disrupted",
             Cat("Deleting the pod to accommodate the terminationTime ", Rfc3339(*deadline),
                 " of node ", name, "; grace period ", force.grace_seconds, "s"));
  }

  DrainState state;
  {
    absl::MutexLock lock(&mu_);
    state = drain_[name];
  }
  std::optional<absl::Duration> next;
  if (plan.drained) {
    if (!state.drained_since.has_value()) state.drained_since = now;
    state.pods.clear();
    const absl::Duration waited = now - *state.drained_since;
    if (waited < options_.min_drain_time) next = options_.min_drain_time - waited;
  } else {
    state.drained_since.reset();
    next = options_.drain_interval;
    for (const PodRef& pod : plan.evict) {
      auto it = state.pods.find(pod.uid);
      if (it != state.pods.end() && it->second.next_attempt > now) {
        next = std::min(*next, it->second.next_attempt - now);
        continue;
      }
      RETURN_IF_ERROR(Evict(node, pod, state, reason));
      if (auto b = state.pods.find(pod.uid); b != state.pods.end()) {
        next = std::min(*next, b->second.next_attempt - now);
      }
    }
    for (const PodRef& pod : plan.do_not_disrupt) {
      NodeEvent(node, "Warning", "FailedDraining",
                Cat("Failed to drain node, pod ", pod.Key(), " has the ",
                    v1::kDoNotDisruptAnnotationKey, " annotation; ",
                    deadline.has_value() ? Cat("it will be deleted by ", Rfc3339(*deadline))
                                         : std::string("the node has no terminationGracePeriod")));
    }
    for (const PodRef& pod : plan.invalid_do_not_disrupt) {
      PodEvent(pod, "Warning", "InvalidDoNotDisrupt",
               Cat("The ", v1::kDoNotDisruptAnnotationKey,
                   " annotation is neither \"true\" nor a duration; the pod is not protected"));
    }
    NodeEvent(node, "Warning", "FailedDraining",
              Cat("Failed to drain node, ", plan.waiting, " pods are waiting to be evicted (",
                  DrainTierName(*plan.tier), " pods first)"));
  }
  {
    absl::MutexLock lock(&mu_);
    drain_[name] = std::move(state);
  }
  return next;
}

absl::StatusOr<std::vector<std::string>> TerminationController::PendingVolumeAttachments(
    const core::Node& node, const std::vector<kube::PodInfo>& pods) {
  std::vector<std::pair<std::string, std::string>> attachments;  // (name, persistent volume)
  RETURN_IF_ERROR(deps_.client.ListAll(
      kube::resources::kVolumeAttachments, "", {}, [&](const kube::ListPage& page) -> absl::Status {
        ASSIGN_OR_RETURN(const nlohmann::json list, kube::ParseJsonBody(page.body));
        for (const nlohmann::json& item : list.value("items", nlohmann::json::array())) {
          const nlohmann::json spec = item.value("spec", nlohmann::json::object());
          if (spec.value("nodeName", "") != node.metadata.name) continue;
          const std::string pv =
              spec.value("source", nlohmann::json::object()).value("persistentVolumeName", "");
          // Inline (migrated) volumes have no PV to match; upstream does not wait for them.
          if (pv.empty()) continue;
          attachments.emplace_back(
              item.value("metadata", nlohmann::json::object()).value("name", ""), pv);
        }
        return absl::OkStatus();
      }));
  if (attachments.empty()) return std::vector<std::string>();
  // Volumes of pods that are not drained stay attached: do not wait for them.
  absl::flat_hash_set<std::string> kept;
  const absl::Time now = deps_.clock.Now();
  for (const kube::PodInfo& pod : pods) {
    if (state::IsDrainable(pod, now)) continue;
    const std::string_view ns =
        pod.meta.namespace_ == nullptr ? std::string_view() : *pod.meta.namespace_;
    for (const std::string& claim : pod.pvc_names) {  // persistentVolumeClaim claimNames
      absl::StatusOr<std::string> pvc =
          deps_.client.Get(kube::resources::kPersistentVolumeClaims, ns, claim);
      if (!pvc.ok()) {
        if (kube::IsNotFound(pvc.status())) continue;
        return pvc.status();
      }
      ASSIGN_OR_RETURN(const nlohmann::json json, kube::ParseJsonBody(*pvc));
      kept.insert(json.value("spec", nlohmann::json::object()).value("volumeName", ""));
    }
  }
  std::vector<std::string> pending;
  for (const auto& [name, pv] : attachments) {
    if (!kept.contains(pv)) pending.push_back(name);
  }
  return pending;
}

absl::StatusOr<kube::ReconcileResult> TerminationController::ReconcileNode(
    const std::string& name) {
  kube::TypedClient<core::Node> nodes(deps_.client, kube::resources::kNodes);
  absl::StatusOr<core::Node> node = nodes.Get("", name);
  if (!node.ok()) {
    if (kube::IsNotFound(node.status())) {
      Forget(name);
      return kube::ReconcileResult{};
    }
    return node.status();
  }
  if (!node->metadata.deletion_timestamp.has_value() ||
      !HasFinalizer(node->metadata, v1::kTerminationFinalizer)) {
    Forget(name);
    return kube::ReconcileResult{};
  }

  ASSIGN_OR_RETURN(std::optional<v1::NodeClaim> claim, NodeClaimForNode(*node));
  if (!claim.has_value()) {
    // Upstream leaves such a Node alone: without its NodeClaim the instance cannot be released.
    NodeEvent(
        *node, "Warning", "FailedTermination",
        Cat("No NodeClaim has provider id \"", node->spec.provider_id, "\"; the finalizer stays"));
    return kube::ReconcileResult{};
  }

  // 1. Deleting either object deletes both.
  if (!claim->metadata.deletion_timestamp.has_value()) {
    absl::StatusOr<std::string> deleted =
        deps_.client.Delete(kube::resources::kNodeClaims, "", claim->metadata.name,
                            {.precondition_uid = claim->metadata.uid});
    if (!deleted.ok() && !kube::IsNotFound(deleted.status())) return deleted.status();
  }

  // 2. The kubelet is gone and so is the instance: nothing to drain.
  if (!core::IsReady(*node)) {
    absl::StatusOr<v1::NodeClaim> instance = deps_.cloud.Get(node->spec.provider_id);
    if (!instance.ok()) {
      if (!cloudprovider::IsNodeClaimNotFound(instance.status())) return instance.status();
      RETURN_IF_ERROR(kube::RemoveFinalizer(deps_.client, kube::resources::kNodes, "", name,
                                            v1::kTerminationFinalizer));
      NodeTerminated(*node);
      Forget(name);
      Enqueue(NodeClaimKey(claim->metadata.name));
      return kube::ReconcileResult{};
    }
  }

  // 3. Cordon.
  RETURN_IF_ERROR(Taint(name));

  // 4. Drain.
  const std::optional<absl::Time> deadline = TerminationTime(*claim);
  const std::string& claim_name = claim->metadata.name;
  std::string drain_reason = "Forceful Termination";
  if (const core::Condition* c = v1::FindCondition(claim->status.conditions, "DisruptionReason");
      c != nullptr && c->status == core::ConditionStatus::kTrue) {
    drain_reason = c->reason;
  }
  ASSIGN_OR_RETURN(const std::optional<absl::Duration> again, Drain(*node, deadline, drain_reason));
  if (again.has_value()) {
    SetCondition(claim_name, kConditionDrained, "Unknown", "Draining", "Draining");
    return After(*again);
  }
  const core::Condition* drained = v1::FindCondition(claim->status.conditions, kConditionDrained);
  if (nodes_drained_ != nullptr &&
      (drained == nullptr || drained->status != core::ConditionStatus::kTrue)) {
    nodes_drained_->Inc({LabelOf(node->metadata, v1::kNodePoolLabelKey)});
  }
  SetCondition(claim_name, kConditionDrained, "True", kConditionDrained, "");

  // 5. Volumes.
  ASSIGN_OR_RETURN(const std::vector<kube::PodInfo> pods, PodsOn(name));
  ASSIGN_OR_RETURN(const std::vector<std::string> attached, PendingVolumeAttachments(*node, pods));
  if (!attached.empty()) {
    const absl::Time now = deps_.clock.Now();
    if (!deadline.has_value() || now < *deadline) {
      NodeEvent(*node, "Normal", "AwaitingVolumeDetachment",
                Cat("Waiting for ", attached.size(),
                    " VolumeAttachments to be detached: ", absl::StrJoin(attached, ", ")));
      SetCondition(claim_name, kConditionVolumesDetached, "Unknown", "AwaitingVolumeDetachment",
                   "AwaitingVolumeDetachment");
      return After(options_.volume_interval);
    }
    NodeEvent(*node, "Warning", "TerminationGracePeriodElapsed",
              Cat("Not waiting for ", attached.size(),
                  " VolumeAttachments: the termination grace period has elapsed"));
    SetCondition(claim_name, kConditionVolumesDetached, "False", "TerminationGracePeriodElapsed",
                 "TerminationGracePeriodElapsed");
  } else {
    SetCondition(claim_name, kConditionVolumesDetached, "True", kConditionVolumesDetached, "");
  }

  // 6. The instance.
  SetCondition(claim_name, kConditionInstanceTerminating, "True", kConditionInstanceTerminating,
               "");
  const absl::Status terminated = deps_.cloud.Delete(*claim);
  if (!cloudprovider::IsNodeClaimNotFound(terminated)) {
    if (!terminated.ok()) return terminated;
    return After(options_.instance_interval);
  }

  // 7. The Node's finalizer; the NodeClaim's goes after it.
  RETURN_IF_ERROR(kube::RemoveFinalizer(deps_.client, kube::resources::kNodes, "", name,
                                        v1::kTerminationFinalizer));
  NodeTerminated(*node);
  Forget(name);
  Enqueue(NodeClaimKey(claim->metadata.name));
  return kube::ReconcileResult{};
}

}  // namespace dovetail::controllers::termination
