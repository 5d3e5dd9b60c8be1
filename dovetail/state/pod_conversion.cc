#include "dovetail/state/pod_conversion.h"

#include <string>
#include <string_view>

#include "dovetail/state/state_node.h"

namespace dovetail::state {

namespace core = apis::core;

namespace {

std::string ApiVersionOfKind(std::string_view kind) {
  if (kind == "DaemonSet" || kind == "ReplicaSet" || kind == "StatefulSet" ||
      kind == "Deployment") {
    return "apps/v1";
  }
  if (kind == "Job") return "batch/v1";
  if (kind == "Node") return "v1";
  return "";
}

}  // namespace

core::Pod ToPod(const kube::PodInfo& info) {
  core::Pod pod;
  pod.api_version = "v1";
  pod.kind = "Pod";
  core::ObjectMeta& meta = pod.metadata;
  meta.name = info.meta.name;
  meta.namespace_ = info.meta.namespace_ != nullptr ? *info.meta.namespace_ : "";
  meta.uid = info.meta.uid;
  meta.resource_version = info.meta.resource_version;
  if (info.meta.creation != absl::InfinitePast()) meta.creation_timestamp = info.meta.creation;
  meta.deletion_timestamp = info.meta.deletion;
  for (const kube::KeyValue& kv : info.meta.labels) meta.labels[*kv.key] = kv.value;
  for (const kube::KeyValue& kv : info.meta.annotations) meta.annotations[*kv.key] = kv.value;
  for (const kube::OwnerRef& owner : info.meta.owners) {
    core::OwnerReference ref;
    ref.kind = *owner.kind;
    ref.api_version = ApiVersionOfKind(ref.kind);
    ref.name = owner.name;
    ref.uid = owner.uid;
    if (owner.controller) ref.controller = true;
    meta.owner_references.push_back(std::move(ref));
  }
  for (const kube::Interned f : info.meta.finalizers) meta.finalizers.push_back(*f);

  core::PodSpec& spec = pod.spec;
  spec.node_name = info.node_name;
  if (info.scheduler_name != nullptr) spec.scheduler_name = *info.scheduler_name;
  spec.priority = info.priority;
  for (const kube::KeyValue& kv : info.node_selector) spec.node_selector[*kv.key] = kv.value;
  for (const kube::CompactToleration& t : info.tolerations) {
    core::Toleration tol;
    tol.key = *t.key;
    tol.op = t.op == 1 ? core::TolerationOperator::kExists : core::TolerationOperator::kEqual;
    tol.value = t.value;
    if (t.effect >= 0) tol.effect = static_cast<core::TaintEffect>(t.effect);
    tol.toleration_seconds = t.seconds;
    spec.tolerations.push_back(std::move(tol));
  }
  if (info.affinity != nullptr) spec.affinity = *info.affinity;
  if (info.topology_spread != nullptr) spec.topology_spread_constraints = *info.topology_spread;
  core::Container container;
  container.name = "requests";
  container.resources.requests = ToResourceList(info.requests);
  for (const int32_t port : info.host_ports) {
    core::ContainerPort p;
    p.host_port = port;
    p.container_port = port;
    container.ports.push_back(std::move(p));
  }
  spec.containers.push_back(std::move(container));
  for (const std::string& claim : info.pvc_names) {
    core::Volume volume;
    volume.name = claim;
    volume.persistent_volume_claim = core::PersistentVolumeClaimVolumeSource{.claim_name = claim};
    spec.volumes.push_back(std::move(volume));
  }

  pod.status.phase = info.phase;
  pod.status.nominated_node_name = info.nominated_node_name;
  pod.status.start_time = info.start_time;
  if (info.unschedulable) {
    core::PodCondition cond;
    cond.type = "PodScheduled";
    cond.status = core::ConditionStatus::kFalse;
    cond.reason = "Unschedulable";
    pod.status.conditions.push_back(std::move(cond));
  }
  if (info.ready) {
    core::PodCondition cond;
    cond.type = "Ready";
    cond.status = core::ConditionStatus::kTrue;
    pod.status.conditions.push_back(std::move(cond));
  }
  return pod;
}

}  // namespace dovetail::state
