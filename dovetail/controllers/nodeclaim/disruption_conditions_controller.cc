#include "dovetail/controllers/nodeclaim/disruption_conditions_controller.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/log.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/controllers/nodeclaim/conditions.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/typed_client.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::nodeclaim {

namespace core = apis::core;
namespace v1 = apis::v1;

namespace {

constexpr char kLogger[] = "nodeclaim.disruption";

const std::string* PoolOf(const v1::NodeClaim& claim) {
  auto it = claim.metadata.labels.find(v1::kNodePoolLabelKey);
  return it == claim.metadata.labels.end() ? nullptr : &it->second;
}

bool Watched(const v1::NodeClaim& claim) {
  return !claim.metadata.deletion_timestamp.has_value() && PoolOf(claim) != nullptr;
}

// What of a NodePool the conditions depend on (not its status).
bool PoolChanged(const v1::NodePool& before, const v1::NodePool& after) {
  return before.metadata.generation != after.metadata.generation ||
         before.metadata.annotations != after.metadata.annotations ||
         before.metadata.uid != after.metadata.uid;
}

bool IsLaunched(const v1::NodeClaim& claim) {
  const core::Condition* launched = v1::FindCondition(claim.status.conditions, kConditionLaunched);
  return launched != nullptr && launched->status == core::ConditionStatus::kTrue;
}

std::optional<absl::Duration> SoonerRequeue(std::optional<absl::Duration> a, absl::Duration b) {
  return a.has_value() ? std::min(*a, b) : b;
}

}  // namespace

DisruptionConditionsController::DisruptionConditionsController(const Dependencies& deps,
                                                               DisruptionConditionsOptions options)
    : QueueController("nodeclaim.disruption", deps, options.queue, options.workers),
      options_(std::move(options)),
      node_pools_(deps.informers.node_pools()) {
  registrations_.push_back(
      EnqueueWhen(deps_.informers.node_claims(), Watched, [this](const auto& claim) {
        absl::MutexLock lock(&cache_mu_);
        instance_type_found_.erase(claim->metadata.uid);
      }));
  using PoolPtr = std::shared_ptr<const v1::NodePool>;
  registrations_.push_back(node_pools_.AddHandler({
      .on_add = [this](const PoolPtr& pool) { EnqueuePool(pool->metadata.name); },
      .on_update =
          [this](const PoolPtr& before, const PoolPtr& after) {
            if (PoolChanged(*before, *after)) EnqueuePool(after->metadata.name);
          },
      .on_delete = nullptr,
  }));
}

DisruptionConditionsController::~DisruptionConditionsController() { Stop(); }

void DisruptionConditionsController::Seed(kube::WorkQueue& queue) {
  AddWhere(queue, deps_.informers.node_claims(), Watched);
}

void DisruptionConditionsController::EnqueuePool(const std::string& pool_name) {
  for (const auto& claim :
       deps_.informers.node_claims().store().ByIndex(kube::kIndexNodePool, pool_name)) {
    if (Watched(*claim)) Enqueue(claim->metadata.name);
  }
}

absl::StatusOr<std::string> DisruptionConditionsController::Drift(const v1::NodeClaim& claim,
                                                                  const v1::NodePool& pool,
                                                                  const NodePoolHashStamp& stamp,
                                                                  absl::Time now) {
  if (std::string_view reason = StaticDrift(claim, stamp); !reason.empty()) {
    return std::string(reason);
  }
  absl::StatusOr<std::string_view> requirements = RequirementsDrift(claim, pool);
  if (!requirements.ok()) {
    log::Error(kLogger, "skipping the requirements drift check",
               {{"nodeclaim", claim.metadata.name}, {"error", requirements.status().ToString()}});
  } else if (!requirements->empty()) {
    return std::string(*requirements);
  }
  std::optional<absl::Time> last_found;
  {
    absl::MutexLock lock(&cache_mu_);
    auto it = instance_type_found_.find(claim.metadata.uid);
    if (it != instance_type_found_.end()) last_found = it->second;
  }
  if (InstanceTypeCheckDue(claim, last_found, now)) {
    absl::StatusOr<cloudprovider::Catalog> catalog = deps_.cloud.GetInstanceTypes(pool);
    if (!catalog.ok()) {
      log::Error(kLogger, "skipping the instance type drift check",
                 {{"nodeclaim", claim.metadata.name}, {"error", catalog.status().ToString()}});
    } else if (std::string_view reason = InstanceTypeDrift(claim, *catalog); !reason.empty()) {
      return std::string(reason);
    } else {
      absl::MutexLock lock(&cache_mu_);
      instance_type_found_[claim.metadata.uid] = now;
    }
  }
  absl::StatusOr<std::string> provider = deps_.cloud.IsDrifted(claim);
  if (cloudprovider::IsNodeClaimNotFound(provider.status())) return std::string();
  return provider;
}

absl::StatusOr<kube::ReconcileResult> DisruptionConditionsController::Reconcile(
    const std::string& name) {
  kube::TypedClient<v1::NodeClaim> claims(deps_.client, kube::resources::kNodeClaims);
  absl::StatusOr<v1::NodeClaim> got = claims.Get("", name);
  if (kube::IsNotFound(got.status())) return kube::ReconcileResult{};
  if (!got.ok()) return got.status();
  const v1::NodeClaim current = std::move(*got);
  if (!Watched(current)) return kube::ReconcileResult{};
  if (!node_pools_.HasSynced()) return kube::ReconcileResult{.requeue_after = absl::Seconds(1)};
  std::shared_ptr<const v1::NodePool> cached = node_pools_.store().Get(*PoolOf(current));
  // A NodePool created later enqueues its NodeClaims.
  if (cached == nullptr) return kube::ReconcileResult{};
  v1::NodePool pool = *cached;
  v1::ApplyDefaults(pool);

  // metav1.Time has whole seconds.
  const absl::Time now = absl::FromUnixSeconds(absl::ToUnixSeconds(deps_.clock.Now()));
  v1::NodeClaim desired = current;
  kube::ReconcileResult result;
  const NodePoolHashStamp stamp = HashStampOf(pool);

  absl::StatusOr<ConsolidatableVerdict> consolidatable = EvaluateConsolidatable(desired, pool, now);
  if (!consolidatable.ok()) {
    log::Error(kLogger, "skipping the Consolidatable condition",
               {{"nodeclaim", name}, {"error", consolidatable.status().ToString()}});
  } else {
    ApplyConsolidatable(desired, consolidatable->consolidatable, now);
    result.requeue_after = consolidatable->requeue_after;
  }

  absl::Status error;
  if (!IsLaunched(desired)) {
    ApplyDrifted(desired, "", now);
  } else {
    absl::StatusOr<std::string> reason = Drift(desired, pool, stamp, now);
    if (reason.ok()) {
      ApplyDrifted(desired, *reason, now);
    } else {
      error = reason.status();
    }
    result.requeue_after = SoonerRequeue(result.requeue_after, options_.drift_recheck);
  }

  const std::string& resource_version = current.metadata.resource_version;
  if (desired.status.conditions != current.status.conditions) {
    const nlohmann::json status = core::EncodeJson(desired.status);
    const nlohmann::json patch = {{"metadata", {{"resourceVersion", resource_version}}},
                                  {"status", {{"conditions", status["conditions"]}}}};
    RETURN_IF_ERROR(deps_.client
                        .Patch(kube::resources::kNodeClaims, "", name, kube::PatchType::kMerge,
                               patch.dump(), {}, "status")
                        .status());
  }
  if (!error.ok()) return error;
  return result;
}

}  // namespace dovetail::controllers::nodeclaim
