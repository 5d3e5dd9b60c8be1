#include "dovetail/controllers/nodepool/status_controller.h"

#include <optional>
#include <utility>

#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/condition_set.h"
#include "dovetail/apis/validation/validation.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/kube/errors.h"
#include "dovetail/metrics/resources.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::nodepool {

namespace core = apis::core;
namespace v1 = apis::v1;

namespace {

// What of a NodePool its status and metrics depend on.
bool StatusInputsChanged(const v1::NodePool& before, const v1::NodePool& after) {
  return before.metadata.generation != after.metadata.generation ||
         before.metadata.annotations != after.metadata.annotations ||
         before.metadata.deletion_timestamp != after.metadata.deletion_timestamp;
}

}  // namespace

StatusController::StatusController(const Dependencies& deps, StatusOptions options)
    : QueueController("nodepool.status", deps, options.queue, options.workers),
      options_(std::move(options)),
      node_pools_(deps.informers.node_pools()) {
  registrations_.push_back(EnqueueOnChange(
      node_pools_, StatusInputsChanged,
      [this](const auto& pool) { ExportMetrics(pool->metadata.name, nullptr, {}); }));
  if (deps_.metrics != nullptr && options_.export_metrics) {
    usage_metric_ = &deps_.metrics->NewGauge(
        "karpenter_nodepools_usage",
        "The amount of resources that have been provisioned for a nodepool. Labeled by nodepool "
        "name and resource type.",
        {"resource_type", "nodepool"});
    limit_metric_ = &deps_.metrics->NewGauge(
        "karpenter_nodepools_limit",
        "Limits specified on the nodepool that restrict the quantity of resources provisioned. "
        "Labeled by nodepool name and resource type.",
        {"resource_type", "nodepool"});
  }
}

void StatusController::ExportMetrics(const std::string& name, const v1::NodePool* pool,
                                     const ResourceList& usage) {
  if (usage_metric_ == nullptr) return;
  absl::MutexLock lock(&metrics_mu_);
  auto& exported = exported_[name];
  for (const metrics::LabelValues& labels : exported) {
    usage_metric_->Delete(labels);
    limit_metric_->Delete(labels);
  }
  exported.clear();
  if (pool == nullptr) {
    exported_.erase(name);
    return;
  }
  for (const auto& [resource, quantity] : usage) {
    metrics::LabelValues labels{metrics::ResourceTypeLabel(resource), name};
    usage_metric_->Set(labels, metrics::ResourceValue(resource, quantity.MilliValue()));
    exported.push_back(std::move(labels));
  }
  for (const auto& [resource, quantity] : pool->spec.limits) {
    metrics::LabelValues labels{metrics::ResourceTypeLabel(resource), name};
    limit_metric_->Set(labels, metrics::ResourceValue(resource, quantity.MilliValue()));
    exported.push_back(std::move(labels));
  }
}

StatusController::~StatusController() { Stop(); }

void StatusController::Seed(kube::WorkQueue& queue) { AddWhere(queue, node_pools_); }

void StatusController::Stop() {
  QueueController::Stop();
  // A replica that does not lead exports none of the per-cluster gauges.
  std::vector<std::string> pools;
  {
    absl::MutexLock lock(&metrics_mu_);
    for (const auto& [name, labels] : exported_) pools.push_back(name);
  }
  for (const std::string& name : pools) ExportMetrics(name, nullptr, {});
}

absl::StatusOr<NodeClassView> StatusController::NodeClassOf(const v1::NodePool& pool) {
  NodeClassView view;
  if (options_.node_classes.empty()) return view;  // kNone
  const std::optional<v1::NodeClassReference>& ref = pool.spec.template_.spec.node_class_ref;
  view.state = NodeClassView::State::kNotFound;
  if (!ref.has_value()) {
    view.message = "the NodePool names no nodeClassRef";
    return view;
  }
  const kube::Resource* resource = nullptr;
  for (const NodeClassKind& k : options_.node_classes) {
    if (k.group == ref->group && k.kind == ref->kind) resource = k.resource;
  }
  if (resource == nullptr) {
    view.message = Cat("this cloud provider serves no ", ref->kind, " of group ", ref->group);
    return view;
  }
  absl::StatusOr<std::string> raw = deps_.client.Get(*resource, "", ref->name);
  if (kube::IsNotFound(raw.status())) return view;
  if (!raw.ok()) return raw.status();
  const nlohmann::json object = nlohmann::json::parse(*raw, nullptr, /*allow_exceptions=*/false);
  core::ObjectMeta metadata;
  std::vector<core::Condition> conditions;
  if (object.is_object()) {
    if (object.contains("metadata")) (void)core::DecodeJson(object["metadata"], metadata);
    const nlohmann::json* status = object.contains("status") ? &object["status"] : nullptr;
    if (status != nullptr && status->is_object() && status->contains("conditions")) {
      (void)core::DecodeJson((*status)["conditions"], conditions);
    }
  }
  if (metadata.deletion_timestamp.has_value()) {
    view.state = NodeClassView::State::kTerminating;
    return view;
  }
  view.state = NodeClassView::State::kFound;
  view.generation = metadata.generation;
  for (const core::Condition& c : conditions) {
    if (c.type == core::kConditionTypeReady) view.ready = c;
  }
  return view;
}

absl::StatusOr<kube::ReconcileResult> StatusController::Reconcile(const std::string& name) {
  const kube::ReconcileResult again{.requeue_after = options_.period};
  if (!node_pools_.HasSynced() || !deps_.informers.node_claims().HasSynced()) {
    return kube::ReconcileResult{.requeue_after = absl::Seconds(1)};
  }
  std::shared_ptr<const v1::NodePool> cached = node_pools_.store().Get(name);
  state::RegistrationHealth& health = deps_.cluster.registration_health();
  if (cached == nullptr || cached->metadata.deletion_timestamp.has_value()) {
    if (cached != nullptr) health.Reset(cached->metadata.uid);
    ExportMetrics(name, nullptr, {});
    return kube::ReconcileResult{};
  }
  const v1::NodePool& pool = *cached;

  StatusInput input;
  // The usage waits for the cluster state (every NodeClaim launched); the conditions do not, since
  // NodeRegistrationHealthy matters most while launches keep failing.
  const bool usage_known = deps_.cluster.Synced();
  if (usage_known) input.usage = deps_.cluster.NodePoolUsage(name);
  ASSIGN_OR_RETURN(input.node_class, NodeClassOf(pool));
  if (RegistrationHealthResets(pool, input.node_class)) {
    health.Reset(pool.metadata.uid);
  } else {
    // After a restart the outcomes start from what was written.
    if (const core::Condition* written =
            v1::FindCondition(pool.status.conditions, kConditionNodeRegistrationHealthy)) {
      health.Seed(pool.metadata.uid, written->status);
    }
    input.registration_call = health.CallFor(pool.metadata.uid);
  }
  for (const apis::validation::FieldError& e : apis::validation::ValidateNodePool(pool)) {
    input.validation_errors.push_back(apis::validation::ToString(e));
  }
  for (const auto& claim :
       deps_.informers.node_claims().store().ByIndex(kube::kIndexNodePool, name)) {
    const core::Condition* registered = v1::FindCondition(claim->status.conditions, "Registered");
    if (registered == nullptr || registered->status != core::ConditionStatus::kTrue ||
        !registered->last_transition_time.has_value()) {
      continue;
    }
    if (!input.last_registration.has_value() ||
        *registered->last_transition_time > *input.last_registration) {
      input.last_registration = registered->last_transition_time;
    }
  }

  // metav1.Time has whole seconds.
  const absl::Time now = absl::FromUnixSeconds(absl::ToUnixSeconds(deps_.clock.Now()));
  const v1::NodePoolStatus desired = DesiredStatus(pool, input, now);
  if (usage_known) ExportMetrics(name, &pool, desired.resources);
  nlohmann::json after = core::EncodeJson(desired);
  const nlohmann::json before = core::EncodeJson(pool.status);
  const kube::ReconcileResult result =
      usage_known ? again : kube::ReconcileResult{.requeue_after = absl::Seconds(1)};
  if (after == before) return result;
  // A merge patch keeps what it does not name: resources and fields that went away are deleted.
  if (before.contains("resources") && before["resources"].is_object()) {
    for (const auto& [key, value] : before["resources"].items()) {
      if (!after["resources"].contains(key)) after["resources"][key] = nullptr;
    }
  }
  for (const auto& [key, value] : before.items()) {
    if (!after.contains(key)) after[key] = nullptr;
  }
  const nlohmann::json patch = {{"metadata", {{"resourceVersion", pool.metadata.resource_version}}},
                                {"status", std::move(after)}};
  absl::StatusOr<std::string> patched = deps_.client.Patch(
      kube::resources::kNodePools, "", name, kube::PatchType::kMerge, patch.dump(), {}, "status");
  if (!patched.ok() && !kube::IsNotFound(patched.status())) return patched.status();
  return result;
}

}  // namespace dovetail::controllers::nodepool
