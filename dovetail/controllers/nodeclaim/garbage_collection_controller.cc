#include "dovetail/controllers/nodeclaim/garbage_collection_controller.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/controllers/nodeclaim/conditions.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/informer.h"
#include "dovetail/kube/typed_client.h"

namespace dovetail::controllers::nodeclaim {

namespace core = apis::core;
namespace v1 = apis::v1;

GarbageCollectionController::GarbageCollectionController(const Dependencies& deps,
                                                         GarbageCollectionOptions options)
    : deps_(deps),
      options_(options),
      loop_(kube::WorkQueueOptions{.base_delay = absl::Seconds(1), .max_delay = options_.interval}
                .WithMetrics(Name(), deps_.metrics),
            options_.interval, [this] { return RunOnce(); }) {}

GarbageCollectionController::~GarbageCollectionController() { Stop(); }

void GarbageCollectionController::Start() { loop_.Start(); }

void GarbageCollectionController::Stop() { loop_.Stop(); }

GarbageCollectionStats GarbageCollectionController::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

absl::Status GarbageCollectionController::RunOnce() {
  ASSIGN_OR_RETURN(const std::vector<v1::NodeClaim> instances, deps_.cloud.List());
  kube::TypedClient<v1::NodeClaim> claims(deps_.client, kube::resources::kNodeClaims);
  ASSIGN_OR_RETURN(const std::vector<v1::NodeClaim> node_claims, claims.List(""));
  const absl::Time now = deps_.clock.Now();

  absl::flat_hash_set<std::string> live;
  for (const v1::NodeClaim& instance : instances) live.insert(instance.status.provider_id);
  absl::flat_hash_set<std::string> claimed;
  // NodeClaims still launching (no provider id written yet), by UID and by name.
  absl::flat_hash_set<std::string> launching_uids;
  absl::flat_hash_set<std::string> launching_names;
  for (const v1::NodeClaim& claim : node_claims) {
    if (!claim.status.provider_id.empty()) {
      claimed.insert(claim.status.provider_id);
    } else if (claim.metadata.deletion_timestamp.has_value()) {
      continue;  // a launch abandoned: its machine, if any, is a leak like any other
    } else {
      launching_uids.insert(claim.metadata.uid);
      launching_names.insert(claim.metadata.name);
    }
  }
  // A machine launched for a NodeClaim still launching is that launch, however long its status
  // write takes: matched by the UID the machine records, or by name when it records none (a
  // machine launched by upstream Karpenter). A machine recording another UID was launched for an
  // earlier NodeClaim of the same name and gets the grace window like any other leak.
  auto launch_in_progress = [&](const v1::NodeClaim& instance) {
    return instance.metadata.uid.empty() ? launching_names.contains(instance.metadata.name)
                                         : launching_uids.contains(instance.metadata.uid);
  };

  absl::Status first_error;
  auto note = [&](absl::Status status) {
    if (!status.ok() && first_error.ok()) first_error = std::move(status);
  };
  int64_t claims_deleted = 0;
  int64_t instances_deleted = 0;

  // NodeClaims whose instance is gone.
  for (const v1::NodeClaim& claim : node_claims) {
    const std::string& provider_id = claim.status.provider_id;
    if (claim.metadata.deletion_timestamp.has_value() || provider_id.empty() ||
        live.contains(provider_id)) {
      continue;
    }
    const core::Condition* registered =
        v1::FindCondition(claim.status.conditions, kConditionRegistered);
    if (registered == nullptr || registered->status != core::ConditionStatus::kTrue) continue;
    const auto nodes = deps_.informers.nodes().store().ByIndex(kube::kIndexProviderId, provider_id);
    const bool node_ready = std::any_of(nodes.begin(), nodes.end(), [](const auto& node) {
      return node->ready == core::ConditionStatus::kTrue;
    });
    if (node_ready) continue;
    // List may lag; only a NotFound from Get condemns the NodeClaim.
    const absl::Status got = deps_.cloud.Get(provider_id).status();
    if (!cloudprovider::IsNodeClaimNotFound(got)) {
      note(got);
      continue;
    }
    (void)deps_.events.Record({.api_version = std::string(v1::kApiVersion),
                               .kind = std::string(v1::kNodeClaimKind),
                               .ns = "",
                               .name = claim.metadata.name,
                               .uid = claim.metadata.uid},
                              "Warning", "GarbageCollected", "GarbageCollection",
                              Cat("Instance ", provider_id, " no longer exists"));
    absl::StatusOr<std::string> deleted =
        deps_.client.Delete(kube::resources::kNodeClaims, "", claim.metadata.name,
                            {.precondition_uid = claim.metadata.uid});
    if (!deleted.ok() && !kube::IsNotFound(deleted.status())) {
      note(deleted.status());
      continue;
    }
    ++claims_deleted;
  }

  // Instances without a NodeClaim.
  for (const v1::NodeClaim& instance : instances) {
    const std::string& provider_id = instance.status.provider_id;
    if (provider_id.empty() || claimed.contains(provider_id) || launch_in_progress(instance)) {
      continue;
    }
    if (!instance.metadata.creation_timestamp.has_value() ||
        now - *instance.metadata.creation_timestamp < options_.instance_grace) {
      continue;
    }
    const absl::Status deleted = deps_.cloud.Delete(instance);
    if (!deleted.ok() && !cloudprovider::IsNodeClaimNotFound(deleted)) {
      note(deleted);
      continue;
    }
    for (const auto& node :
         deps_.informers.nodes().store().ByIndex(kube::kIndexProviderId, provider_id)) {
      absl::StatusOr<std::string> gone = deps_.client.Delete(
          kube::resources::kNodes, "", node->meta.name, {.precondition_uid = node->meta.uid});
      if (!gone.ok() && !kube::IsNotFound(gone.status())) note(gone.status());
    }
    ++instances_deleted;
  }

  absl::MutexLock lock(&mu_);
  ++stats_.runs;
  stats_.node_claims_deleted += claims_deleted;
  stats_.instances_deleted += instances_deleted;
  return first_error;
}

}  // namespace dovetail::controllers::nodeclaim
