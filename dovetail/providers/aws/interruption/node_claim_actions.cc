#include "dovetail/providers/aws/interruption/node_claim_actions.h"

#include <utility>

#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/log.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/event_recorder.h"
#include "dovetail/kube/resource.h"
#include "dovetail/providers/aws/interruption/actions.h"

namespace dovetail::providers::aws::interruption {

std::map<std::string, state::StateNode> ManagedNodesByInstanceId(const state::Cluster& cluster) {
  std::map<std::string, state::StateNode> by_instance;
  for (state::StateNode& node : cluster.Nodes()) {
    if (!node.Managed()) continue;
    std::string id = InstanceIdFromProviderId(node.ProviderId());
    if (!id.empty()) by_instance.emplace(std::move(id), std::move(node));
  }
  return by_instance;
}

metrics::Counter* NodeClaimsDisruptedCounter(metrics::Registry* registry) {
  if (registry == nullptr) return nullptr;
  // Shared by name with every controller that disrupts NodeClaims.
  return &registry->NewCounter("karpenter_nodeclaims_disrupted_total",
                               "Number of nodeclaims disrupted in total.",
                               {"reason", "nodepool", "capacity_type"});
}

std::string NodeLabel(const state::StateNode& node, std::string_view key) {
  const apis::core::StringMap labels = node.Labels();
  auto it = labels.find(key);
  return it == labels.end() ? "" : it->second;
}

void RecordInterruptionEvent(kube::EventRecorder& events, const state::StateNode& node,
                             std::string_view reason, std::string_view message) {
  const apis::v1::NodeClaim& claim = *node.node_claim;
  const kube::ObjectReference ref{"karpenter.sh/v1", "NodeClaim", "", claim.metadata.name,
                                  claim.metadata.uid};
  (void)events.Record(ref, "Warning", reason, "Interruption", message);
  if (node.node != nullptr) {
    const kube::ObjectReference node_ref{"v1", "Node", "", node.Name(), ""};
    (void)events.Record(node_ref, "Warning", reason, "Interruption", message);
  }
}

absl::Status DeleteInterruptedNodeClaim(const controllers::Dependencies& deps,
                                        const state::StateNode& node, std::string_view kind,
                                        std::string_view logger) {
  if (node.Deleting()) return absl::OkStatus();
  const apis::v1::NodeClaim& claim = *node.node_claim;
  kube::DeleteOptions options;
  if (!claim.metadata.uid.empty()) options.precondition_uid = claim.metadata.uid;
  absl::StatusOr<std::string> deleted =
      deps.client.Delete(kube::resources::kNodeClaims, "", claim.metadata.name, options);
  if (!deleted.ok()) {
    // Gone (or replaced by another object of that name: a precondition Conflict) is done.
    if (kube::IsNotFound(deleted.status()) || kube::IsConflict(deleted.status())) {
      return absl::OkStatus();
    }
    return deleted.status();
  }
  log::Info(logger, "initiating delete from interruption message",
            {{"nodeClaim", claim.metadata.name}, {"kind", std::string(kind)}});
  if (auto* c = NodeClaimsDisruptedCounter(deps.metrics)) {
    c->Inc({std::string(kind), node.NodePool(), NodeLabel(node, apis::v1::kCapacityTypeLabelKey)});
  }
  return absl::OkStatus();
}

}  // namespace dovetail::providers::aws::interruption
