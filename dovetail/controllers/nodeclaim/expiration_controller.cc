#include "dovetail/controllers/nodeclaim/expiration_controller.h"

#include <optional>
#include <utility>

#include "dovetail/apis/v1/labels.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/log.h"
#include "dovetail/controllers/nodeclaim/disruption_conditions.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/typed_client.h"

namespace dovetail::controllers::nodeclaim {

namespace v1 = apis::v1;

namespace {

constexpr char kExpirationLogger[] = "nodeclaim.expiration";

bool MayExpire(const v1::NodeClaim& claim) {
  return !claim.metadata.deletion_timestamp.has_value() && claim.spec.expire_after.has_value();
}

std::string LabelOf(const v1::NodeClaim& claim, std::string_view key) {
  auto it = claim.metadata.labels.find(key);
  return it == claim.metadata.labels.end() ? std::string() : it->second;
}

}  // namespace

ExpirationController::ExpirationController(const Dependencies& deps, ExpirationOptions options)
    : QueueController("nodeclaim.expiration", deps, options.queue, options.workers),
      options_(std::move(options)) {
  registrations_.push_back(EnqueueWhen(deps_.informers.node_claims(), MayExpire));
  if (deps_.metrics != nullptr) {
    // Shared by name with every other controller that disrupts NodeClaims (the registry hands
    // out the same counter for the same name).
    disrupted_ = &deps_.metrics->NewCounter(
        "karpenter_nodeclaims_disrupted_total",
        "Number of nodeclaims disrupted in total by Karpenter. Labeled by reason the nodeclaim "
        "was disrupted and the owning nodepool.",
        {"reason", "nodepool", "capacity_type"});
  }
}

ExpirationController::~ExpirationController() { Stop(); }

void ExpirationController::Seed(kube::WorkQueue& queue) {
  AddWhere(queue, deps_.informers.node_claims(), MayExpire);
}

absl::StatusOr<kube::ReconcileResult> ExpirationController::Reconcile(const std::string& name) {
  kube::TypedClient<v1::NodeClaim> claims(deps_.client, kube::resources::kNodeClaims);
  absl::StatusOr<v1::NodeClaim> got = claims.Get("", name);
  if (kube::IsNotFound(got.status())) return kube::ReconcileResult{};
  if (!got.ok()) return got.status();
  if (!MayExpire(*got)) return kube::ReconcileResult{};
  absl::StatusOr<ExpirationVerdict> verdict = EvaluateExpiration(*got, deps_.clock.Now());
  if (!verdict.ok()) {
    log::Error(kExpirationLogger, "not expiring",
               {{"nodeclaim", name}, {"error", verdict.status().ToString()}});
    return kube::ReconcileResult{};
  }
  if (!verdict->expired) return kube::ReconcileResult{.requeue_after = verdict->requeue_after};

  absl::StatusOr<std::string> deleted = deps_.client.Delete(
      kube::resources::kNodeClaims, "", name, {.precondition_uid = got->metadata.uid});
  if (kube::IsNotFound(deleted.status())) return kube::ReconcileResult{};
  if (!deleted.ok()) return deleted.status();
  log::Info(kExpirationLogger, "deleting expired nodeclaim",
            {{"nodeclaim", name}, {"expireAfter", *got->spec.expire_after}});
  // Dropped or failed events never fail a reconcile.
  (void)deps_.events.Record({.api_version = std::string(v1::kApiVersion),
                             .kind = std::string(v1::kNodeClaimKind),
                             .ns = "",
                             .name = name,
                             .uid = got->metadata.uid},
                            "Normal", "Expired", "Expiration",
                            Cat("NodeClaim expired after ", *got->spec.expire_after));
  if (disrupted_ != nullptr) {
    disrupted_->Inc({"expired", LabelOf(*got, v1::kNodePoolLabelKey),
                     LabelOf(*got, v1::kCapacityTypeLabelKey)});
  }
  return kube::ReconcileResult{};
}

}  // namespace dovetail::controllers::nodeclaim
