#include "dovetail/controllers/nodeclaim/pod_events_controller.h"

#include <optional>
#include <utility>

#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/informer.h"
#include "dovetail/kube/typed_client.h"
#include "dovetail/state/state_node.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::nodeclaim {

namespace core = apis::core;
namespace v1 = apis::v1;

PodEventsController::PodEventsController(const Dependencies& deps, PodEventsOptions options)
    : QueueController("nodeclaim.podevents", deps, options.queue, options.workers),
      options_(std::move(options)) {
  using PodPtr = std::shared_ptr<const kube::PodInfo>;
  registrations_.push_back(deps_.informers.pods().AddHandler({
      .on_add =
          [this](const PodPtr& pod) {
            if (IsPodEvent(nullptr, *pod)) EnqueueForNode(pod->node_name);
          },
      .on_update =
          [this](const PodPtr& old_pod, const PodPtr& pod) {
            if (IsPodEvent(old_pod.get(), *pod)) EnqueueForNode(pod->node_name);
          },
      .on_delete =
          [this](const PodPtr& pod) {
            if (!pod->node_name.empty()) EnqueueForNode(pod->node_name);
          },
  }));
}

PodEventsController::~PodEventsController() { Stop(); }

void PodEventsController::EnqueueForNode(const std::string& node_name) {
  std::optional<state::StateNode> node = deps_.cluster.GetByNodeName(node_name);
  if (!node.has_value() || node->node_claim == nullptr) return;
  Enqueue(node->node_claim->metadata.name);
}

absl::StatusOr<kube::ReconcileResult> PodEventsController::Reconcile(const std::string& name) {
  kube::TypedClient<v1::NodeClaim> claims(deps_.client, kube::resources::kNodeClaims);
  absl::StatusOr<v1::NodeClaim> got = claims.Get("", name);
  if (kube::IsNotFound(got.status())) return kube::ReconcileResult{};
  if (!got.ok()) return got.status();
  // metav1.Time has whole seconds.
  const absl::Time now = absl::FromUnixSeconds(absl::ToUnixSeconds(deps_.clock.Now()));
  if (!PodEventDue(*got, now, options_.dedupe)) return kube::ReconcileResult{};
  v1::NodeClaim desired = *got;
  desired.status.last_pod_event_time = now;
  const nlohmann::json status = core::EncodeJson(desired.status);
  const nlohmann::json patch = {{"metadata", {{"resourceVersion", got->metadata.resource_version}}},
                                {"status", {{"lastPodEventTime", status["lastPodEventTime"]}}}};
  absl::StatusOr<std::string> patched = deps_.client.Patch(
      kube::resources::kNodeClaims, "", name, kube::PatchType::kMerge, patch.dump(), {}, "status");
  if (kube::IsNotFound(patched.status())) return kube::ReconcileResult{};
  if (!patched.ok()) return patched.status();
  return kube::ReconcileResult{};
}

}  // namespace dovetail::controllers::nodeclaim
