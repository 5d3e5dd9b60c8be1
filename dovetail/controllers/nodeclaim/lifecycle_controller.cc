#include "dovetail/controllers/nodeclaim/lifecycle_controller.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/node.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/crash_point.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/controllers/nodeclaim/conditions.h"
#include "dovetail/kube/controller_util.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/informer.h"
#include "dovetail/kube/typed_client.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::nodeclaim {

namespace core = apis::core;
namespace v1 = apis::v1;

namespace {

constexpr size_t kMaxMessage = 300;

std::string Truncate(std::string_view message) {
  return std::string(message.substr(0, std::min(message.size(), kMaxMessage)));
}

// Conditions carry metav1.Time, which has whole seconds.
absl::Time WholeSeconds(absl::Time t) { return absl::FromUnixSeconds(absl::ToUnixSeconds(t)); }

bool HasFinalizer(const core::ObjectMeta& meta, std::string_view finalizer) {
  return std::find(meta.finalizers.begin(), meta.finalizers.end(), finalizer) !=
         meta.finalizers.end();
}

std::optional<absl::Duration> Earlier(std::optional<absl::Duration> a,
                                      std::optional<absl::Duration> b) {
  if (!a.has_value()) return b;
  if (!b.has_value()) return a;
  return std::min(*a, *b);
}

// Whether the lifecycle has anything left to do for a cached NodeClaim: not while it is being
// deleted (termination's), nor once it carries the finalizer and is initialized. Filters the
// informer events (Node heartbeats would otherwise cost a read each).
bool NeedsLifecycle(const v1::NodeClaim& claim) {
  if (claim.metadata.deletion_timestamp.has_value()) return false;
  if (!HasFinalizer(claim.metadata, v1::kTerminationFinalizer)) return true;
  const core::Condition* initialized =
      v1::FindCondition(claim.status.conditions, kConditionInitialized);
  return initialized == nullptr || initialized->status != core::ConditionStatus::kTrue;
}

}  // namespace

namespace {

bool WasRegistered(const v1::NodeClaim& claim) {
  const apis::core::Condition* c = v1::FindCondition(claim.status.conditions, "Registered");
  return c != nullptr && c->status == apis::core::ConditionStatus::kTrue;
}

}  // namespace

LifecycleController::LifecycleController(const Dependencies& deps, LifecycleOptions options)
    : QueueController("nodeclaim.lifecycle", deps, options.queue, options.workers),
      options_(std::move(options)) {
  if (deps_.metrics != nullptr) {
    nodes_created_ = &deps_.metrics->NewCounter(
        "karpenter_nodes_created_total",
        "Number of nodes created in total by Karpenter. Labeled by owning nodepool and zone.",
        {"nodepool", "zone"});
  }
  registrations_.push_back(EnqueueWhen(deps_.informers.node_claims(), NeedsLifecycle));
  auto on_node = [this](const std::shared_ptr<const kube::NodeInfo>& node) {
    if (node->provider_id.empty()) return;
    std::optional<state::StateNode> state = deps_.cluster.Get(node->provider_id);
    if (state.has_value() && state->node_claim != nullptr && NeedsLifecycle(*state->node_claim)) {
      Enqueue(state->node_claim->metadata.name);
    }
  };
  registrations_.push_back(deps_.informers.nodes().AddHandler({
      .on_add = on_node,
      .on_update = [on_node](const auto&, const auto& node) { on_node(node); },
      .on_delete = nullptr,
  }));
}

LifecycleController::~LifecycleController() { Stop(); }

void LifecycleController::Seed(kube::WorkQueue& queue) {
  AddWhere(queue, deps_.informers.node_claims(), NeedsLifecycle);
}

void LifecycleController::RecordEvent(const v1::NodeClaim& node_claim, std::string_view type,
                                      std::string_view reason, std::string_view message) {
  // Dropped or failed events never fail a reconcile.
  (void)deps_.events.Record({.api_version = std::string(v1::kApiVersion),
                             .kind = std::string(v1::kNodeClaimKind),
                             .ns = "",
                             .name = node_claim.metadata.name,
                             .uid = node_claim.metadata.uid},
                            type, reason, "Lifecycle", message);
}

absl::Status LifecycleController::DeleteNodeClaim(const v1::NodeClaim& node_claim,
                                                  std::string_view reason,
                                                  std::string_view event_reason,
                                                  std::string_view message) {
  RecordEvent(node_claim, "Warning", event_reason, Cat(message, " (", reason, ")"));
  absl::StatusOr<std::string> deleted =
      deps_.client.Delete(kube::resources::kNodeClaims, "", node_claim.metadata.name,
                          {.precondition_uid = node_claim.metadata.uid});
  if (!deleted.ok() && !kube::IsNotFound(deleted.status())) return deleted.status();
  return absl::OkStatus();
}

absl::StatusOr<v1::NodeClaim> LifecycleController::Launch(const v1::NodeClaim& node_claim) {
  const absl::Time now = deps_.clock.Now();
  {
    absl::MutexLock lock(&cache_mu_);
    auto it = launch_cache_.find(node_claim.metadata.uid);
    if (it != launch_cache_.end() && it->second.expires > now) return it->second.node_claim;
  }
  launches_.fetch_add(1);
  ASSIGN_OR_RETURN(v1::NodeClaim launched, deps_.cloud.Create(node_claim));
  CrashPoint(kCrashPointNodeClaimLaunched);  // fault test 1 (docs/reliability.md)
  absl::MutexLock lock(&cache_mu_);
  for (auto it = launch_cache_.begin(); it != launch_cache_.end();) {
    if (it->second.expires <= now) {
      launch_cache_.erase(it++);
    } else {
      ++it;
    }
  }
  launch_cache_[node_claim.metadata.uid] = {launched, now + options_.launch_cache_ttl};
  return launched;
}

absl::Status LifecycleController::Register(v1::NodeClaim& desired) {
  Conditions conditions(desired.status.conditions, desired.metadata.generation,
                        WholeSeconds(deps_.clock.Now()));
  const auto nodes =
      deps_.informers.nodes().store().ByIndex(kube::kIndexProviderId, desired.status.provider_id);
  if (nodes.empty()) {
    conditions.SetUnknown(kConditionRegistered, kReasonNodeNotFound,
                          "Node not registered with cluster");
    return absl::OkStatus();
  }
  if (nodes.size() > 1) {
    conditions.SetFalse(kConditionRegistered, kReasonMultipleNodesFound,
                        "invariant violated, matched multiple nodes");
    return absl::OkStatus();
  }
  const std::string node_name = nodes.front()->meta.name;
  kube::TypedClient<core::Node> node_client(deps_.client, kube::resources::kNodes);
  bool warned = false;
  RETURN_IF_ERROR(kube::RetryOnConflict([&]() -> absl::Status {
    ASSIGN_OR_RETURN(core::Node node, node_client.Get("", node_name));
    auto registered = node.metadata.labels.find(v1::kNodeRegisteredLabelKey);
    if (!warned && !HasUnregisteredTaint(node) &&
        (registered == node.metadata.labels.end() || registered->second != "true")) {
      warned = true;
      RecordEvent(desired, "Warning", "UnregisteredTaintMissing",
                  Cat("Missing karpenter.sh/unregistered taint which prevents registration "
                      "related race conditions on Karpenter-managed nodes (Node ",
                      node_name, ")"));
    }
    if (!SyncNodeForRegistration(node, desired)) return absl::OkStatus();
    return node_client.Update(node).status();
  }));
  desired.status.node_name = node_name;
  conditions.SetTrue(kConditionRegistered);
  return absl::OkStatus();
}

absl::Status LifecycleController::Initialize(v1::NodeClaim& desired) {
  Conditions conditions(desired.status.conditions, desired.metadata.generation,
                        WholeSeconds(deps_.clock.Now()));
  const auto nodes =
      deps_.informers.nodes().store().ByIndex(kube::kIndexProviderId, desired.status.provider_id);
  const kube::NodeInfo* node = nodes.size() == 1 ? nodes.front().get() : nullptr;
  const ConditionVerdict verdict = CheckInitialization(desired, node);
  if (verdict.status != core::ConditionStatus::kTrue) {
    conditions.Set(kConditionInitialized, verdict.status, verdict.reason, verdict.message);
    return absl::OkStatus();
  }
  const std::string* label = node->meta.Label(v1::kNodeInitializedLabelKey);
  if (label == nullptr || *label != "true") {
    const nlohmann::json patch = {
        {"metadata", {{"labels", {{std::string(v1::kNodeInitializedLabelKey), "true"}}}}}};
    RETURN_IF_ERROR(deps_.client
                        .Patch(kube::resources::kNodes, "", node->meta.name,
                               kube::PatchType::kMerge, patch.dump())
                        .status());
  }
  conditions.SetTrue(kConditionInitialized);
  return absl::OkStatus();
}

absl::Status LifecycleController::Write(const v1::NodeClaim& current,
                                        const v1::NodeClaim& desired) {
  std::string resource_version = current.metadata.resource_version;
  if (current.metadata.labels != desired.metadata.labels ||
      current.metadata.annotations != desired.metadata.annotations) {
    nlohmann::json patch = {{"metadata",
                             {{"resourceVersion", resource_version},
                              {"labels", nlohmann::json::object()},
                              {"annotations", nlohmann::json::object()}}}};
    for (const auto& [k, v] : desired.metadata.labels) patch["metadata"]["labels"][k] = v;
    for (const auto& [k, v] : desired.metadata.annotations) {
      patch["metadata"]["annotations"][k] = v;
    }
    kube::TypedClient<v1::NodeClaim> claims(deps_.client, kube::resources::kNodeClaims);
    ASSIGN_OR_RETURN(
        const v1::NodeClaim patched,
        claims.Patch("", current.metadata.name, kube::PatchType::kMerge, patch.dump()));
    resource_version = patched.metadata.resource_version;
  }
  const nlohmann::json status = core::EncodeJson(desired.status);
  if (status != core::EncodeJson(current.status)) {
    const nlohmann::json patch = {{"metadata", {{"resourceVersion", resource_version}}},
                                  {"status", status}};
    RETURN_IF_ERROR(deps_.client
                        .Patch(kube::resources::kNodeClaims, "", current.metadata.name,
                               kube::PatchType::kMerge, patch.dump(), {}, "status")
                        .status());
  }
  return absl::OkStatus();
}

absl::StatusOr<kube::ReconcileResult> LifecycleController::Reconcile(const std::string& name) {
  kube::TypedClient<v1::NodeClaim> claims(deps_.client, kube::resources::kNodeClaims);
  absl::StatusOr<v1::NodeClaim> got = claims.Get("", name);
  if (kube::IsNotFound(got.status())) return kube::ReconcileResult{};
  if (!got.ok()) return got.status();
  // Deletion is the termination controller's.
  if (got->metadata.deletion_timestamp.has_value()) return kube::ReconcileResult{};
  if (!HasFinalizer(got->metadata, v1::kTerminationFinalizer)) {
    RETURN_IF_ERROR(kube::AddFinalizer(deps_.client, kube::resources::kNodeClaims, "", name,
                                       v1::kTerminationFinalizer));
    got = claims.Get("", name);
    if (kube::IsNotFound(got.status())) return kube::ReconcileResult{};
    if (!got.ok()) return got.status();
  }
  const v1::NodeClaim current = std::move(*got);
  v1::NodeClaim desired = current;
  const absl::Time now = WholeSeconds(deps_.clock.Now());
  Conditions conditions(desired.status.conditions, desired.metadata.generation, now);
  conditions.Initialize();

  absl::Status error;
  // Launch.
  if (!conditions.IsTrue(kConditionLaunched)) {
    if (!desired.status.provider_id.empty()) {
      // Launched by an earlier reconcile whose condition write was lost.
      conditions.SetTrue(kConditionLaunched);
    } else {
      absl::StatusOr<v1::NodeClaim> launched = Launch(desired);
      if (cloudprovider::IsInsufficientCapacity(launched.status())) {
        RETURN_IF_ERROR(DeleteNodeClaim(
            current, "insufficient_capacity", "InsufficientCapacityError",
            Cat("NodeClaim ", name, " event: ", Truncate(AsStd(launched.status().message())))));
        return kube::ReconcileResult{};
      }
      if (cloudprovider::IsNodeClassNotReady(launched.status())) {
        RETURN_IF_ERROR(DeleteNodeClaim(current, "nodeclass_not_ready", "NodeClassNotReady",
                                        Truncate(AsStd(launched.status().message()))));
        return kube::ReconcileResult{};
      }
      if (!launched.ok()) {
        if (auto info = cloudprovider::GetCreateError(launched.status())) {
          conditions.SetUnknown(kConditionLaunched, info->reason, Truncate(info->message));
        } else {
          conditions.SetUnknown(kConditionLaunched, kReasonLaunchFailed,
                                Truncate(AsStd(launched.status().message())));
        }
        error = launched.status();
      } else {
        desired = MergeLaunched(desired, *launched);
        conditions.SetTrue(kConditionLaunched);
      }
    }
  }
  // Registration.
  if (error.ok() && conditions.IsTrue(kConditionLaunched) &&
      !conditions.IsTrue(kConditionRegistered)) {
    error = Register(desired);
  }
  // Initialization.
  if (error.ok() && conditions.IsTrue(kConditionRegistered) &&
      !conditions.IsTrue(kConditionInitialized)) {
    error = Initialize(desired);
  }
  // Liveness.
  const LivenessVerdict liveness = CheckLiveness(
      desired, now,
      {.launch_timeout = options_.launch_timeout, .registration_ttl = options_.registration_ttl});
  if (liveness.delete_reason.has_value()) {
    const bool launch = *liveness.delete_reason == "launch_timeout";
    RETURN_IF_ERROR(DeleteNodeClaim(current, *liveness.delete_reason,
                                    launch ? "LaunchTimeout" : "RegistrationTimeout",
                                    launch ? Cat("NodeClaim was not launched within ",
                                                 absl::FormatDuration(options_.launch_timeout))
                                           : Cat("Node did not register within ",
                                                 absl::FormatDuration(options_.registration_ttl))));
    if (const std::string pool = OwningNodePoolUid(desired); !pool.empty()) {
      Failure failure = LivenessFailure(desired);
      deps_.cluster.registration_health().RecordFailure(pool, std::move(failure.reason),
                                                        std::move(failure.message));
    }
    return kube::ReconcileResult{};
  }
  if (absl::Status written = Write(current, desired); !written.ok()) return written;
  const bool newly_registered = conditions.IsTrue(kConditionRegistered) && !WasRegistered(current);
  if (const std::string pool = OwningNodePoolUid(desired); newly_registered && !pool.empty()) {
    deps_.cluster.registration_health().RecordSuccess(pool);
  }
  if (nodes_created_ != nullptr && newly_registered) {
    auto label = [&](std::string_view key) {
      auto it = desired.metadata.labels.find(key);
      return it == desired.metadata.labels.end() ? std::string() : it->second;
    };
    nodes_created_->Inc({label(v1::kNodePoolLabelKey), label(v1::kLabelTopologyZone)});
  }
  if (!error.ok()) return error;
  kube::ReconcileResult result;
  if (!conditions.IsTrue(kConditionInitialized)) {
    result.requeue_after = Earlier(liveness.requeue_after, options_.poll_interval);
  }
  return result;
}

}  // namespace dovetail::controllers::nodeclaim
