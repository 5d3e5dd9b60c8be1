#include "dovetail/controllers/nodepool/hash_controller.h"

#include <optional>
#include <utility>

#include "dovetail/common/absl_compat.h"
#include "dovetail/common/log.h"
#include "dovetail/controllers/nodepool/hash.h"
#include "dovetail/kube/errors.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::nodepool {

namespace core = apis::core;
namespace v1 = apis::v1;

namespace {

constexpr char kHashLogger[] = "nodepool.hash";

nlohmann::json AnnotationsPatch(const core::StringMap& annotations,
                                std::string_view resource_version) {
  nlohmann::json metadata = {{"annotations", annotations}};
  if (!resource_version.empty()) metadata["resourceVersion"] = resource_version;
  return {{"metadata", std::move(metadata)}};
}

// What of a NodePool its hash and the stamps depend on.
bool HashInputsChanged(const v1::NodePool& before, const v1::NodePool& after) {
  return before.metadata.generation != after.metadata.generation ||
         before.metadata.annotations != after.metadata.annotations;
}

}  // namespace

HashController::HashController(const Dependencies& deps, HashOptions options)
    : QueueController("nodepool.hash", deps, options.queue, options.workers),
      options_(std::move(options)),
      node_pools_(deps.informers.node_pools()) {
  registrations_.push_back(EnqueueOnChange(node_pools_, HashInputsChanged));
}

HashController::~HashController() { Stop(); }

void HashController::Seed(kube::WorkQueue& queue) { AddWhere(queue, node_pools_); }

absl::StatusOr<kube::ReconcileResult> HashController::Reconcile(const std::string& name) {
  if (!node_pools_.HasSynced()) return kube::ReconcileResult{.requeue_after = absl::Seconds(1)};
  std::shared_ptr<const v1::NodePool> pool = node_pools_.store().Get(name);
  if (pool == nullptr || pool->metadata.deletion_timestamp.has_value()) {
    return kube::ReconcileResult{};
  }
  absl::StatusOr<std::string> template_hash = v1::TemplateHash(*pool);
  if (!template_hash.ok()) {
    log::Error(kHashLogger, "the NodePool's template does not hash; its drift hash is not stamped",
               {{"nodepool", name}, {"error", template_hash.status().ToString()}});
    return kube::ReconcileResult{};
  }
  const std::string& hash = *template_hash;
  if (NodeClaimsNeedRestamp(*pool)) {
    absl::Status first_error;
    int restamped = 0;
    for (const auto& claim :
         deps_.informers.node_claims().store().ByIndex(kube::kIndexNodePool, name)) {
      std::optional<core::StringMap> stamp = NodeClaimRestamp(*claim, *pool, hash);
      if (!stamp.has_value()) continue;
      absl::StatusOr<std::string> patched =
          deps_.client.Patch(kube::resources::kNodeClaims, "", claim->metadata.name,
                             kube::PatchType::kMerge, AnnotationsPatch(*stamp, "").dump());
      if (patched.ok()) {
        ++restamped;
      } else if (!kube::IsNotFound(patched.status()) && first_error.ok()) {
        first_error = patched.status();
      }
    }
    if (restamped > 0) {
      log::Info(kHashLogger, "re-stamped the drift hash of the NodePool's NodeClaims",
                {{"nodepool", name}, {"nodeclaims", Cat(restamped)}});
    }
    if (!first_error.ok()) return first_error;
  }
  if (std::optional<core::StringMap> stamp = PoolStamp(*pool, hash)) {
    absl::StatusOr<std::string> patched =
        deps_.client.Patch(kube::resources::kNodePools, "", name, kube::PatchType::kMerge,
                           AnnotationsPatch(*stamp, pool->metadata.resource_version).dump());
    if (!patched.ok() && !kube::IsNotFound(patched.status())) return patched.status();
  }
  return kube::ReconcileResult{};
}

}  // namespace dovetail::controllers::nodepool
