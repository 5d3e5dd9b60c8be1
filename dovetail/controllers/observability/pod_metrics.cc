#include "dovetail/controllers/observability/pod_metrics.h"

#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "dovetail/apis/v1/labels.h"

namespace dovetail::controllers::observability {

namespace {

std::string PodPhaseName(apis::core::PodPhase phase) {
  switch (phase) {
    case apis::core::PodPhase::kPending:
      return "Pending";
    case apis::core::PodPhase::kRunning:
      return "Running";
    case apis::core::PodPhase::kSucceeded:
      return "Succeeded";
    case apis::core::PodPhase::kFailed:
      return "Failed";
    case apis::core::PodPhase::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

std::string OwnerPath(const kube::PodInfo& pod) {
  if (pod.meta.owners.empty()) return "";
  const kube::OwnerRef& owner = pod.meta.owners.front();
  return absl::StrCat("/apis/", owner.api_version == nullptr ? "" : *owner.api_version,
                      "/namespaces/", *pod.meta.namespace_, "/",
                      absl::AsciiStrToLower(owner.kind == nullptr ? "" : *owner.kind), "s/",
                      owner.name);
}

bool Terminal(const kube::PodInfo& pod) {
  return pod.phase == apis::core::PodPhase::kSucceeded ||
         pod.phase == apis::core::PodPhase::kFailed;
}

}  // namespace

PodMetrics::PodMetrics(metrics::Registry& registry) {
  state_ = &registry.NewGauge(
      "karpenter_pods_state",
      "Pod state is the current state of pods. This metric can be used several ways as it is "
      "labeled by the pod name, namespace, owner, node, nodepool name, zone, architecture, "
      "capacity type, instance type, pod phase, and pod readiness.",
      {"name", "namespace", "owner", "node", "scheduled", "nodepool", "zone", "arch",
       "capacity_type", "instance_type", "phase", "ready", "managed"});
  const std::vector<std::string> pod = {"name", "namespace"};
  unstarted_ = &registry.NewGauge(
      "karpenter_pods_unstarted_time_seconds",
      "The time from pod creation until the pod is running, for pods that have not started.", pod);
  unbound_ = &registry.NewGauge(
      "karpenter_pods_unbound_time_seconds",
      "The time from pod creation until the pod is bound, for pods that are not bound.", pod);
  provisioning_unstarted_ = &registry.NewGauge(
      "karpenter_pods_provisioning_unstarted_time_seconds",
      "The time from when Karpenter first thought the pod could schedule until it is running, "
      "for pods that have not started.",
      pod);
  provisioning_unbound_ = &registry.NewGauge(
      "karpenter_pods_provisioning_unbound_time_seconds",
      "The time from when Karpenter first thought the pod could schedule until it is bound, for "
      "pods that are not bound.",
      pod);
  undecided_ = &registry.NewGauge(
      "karpenter_pods_provisioning_scheduling_undecided_time_seconds",
      "The time from when Karpenter first saw a pending pod until it decided about it in a "
      "scheduling simulation, for pods not decided about yet.",
      pod);
  startup_ = &registry.NewSummary("karpenter_pods_startup_duration_seconds",
                                  "The time from pod creation until the pod is running.");
  provisioning_startup_ = &registry.NewHistogram(
      "karpenter_pods_provisioning_startup_duration_seconds",
      "The time from when Karpenter first thought the pod could schedule until the pod is "
      "running.",
      {}, metrics::DurationBuckets());
  bound_ = &registry.NewHistogram("karpenter_pods_bound_duration_seconds",
                                  "The time from pod creation until the pod is bound.", {},
                                  metrics::DurationBuckets());
  provisioning_bound_ = &registry.NewHistogram(
      "karpenter_pods_provisioning_bound_duration_seconds",
      "The time from when Karpenter first thought the pod could schedule until it is bound.", {},
      metrics::DurationBuckets());
}

void PodMetrics::Collect(const std::vector<state::PodPtr>& pods,
                         const std::vector<state::NodePtr>& node_list,
                         state::PodSchedulingTimes& times, absl::Time now) {
  std::map<std::string, state::NodePtr> nodes;
  for (const state::NodePtr& node : node_list) nodes[node->meta.name] = node;

  std::map<metrics::LabelValues, double> states, unstarted, unbound, p_unstarted, p_unbound,
      undecided;
  absl::flat_hash_set<std::string> seen;
  for (const state::PodPtr& pod_ptr : pods) {
    const kube::PodInfo& pod = *pod_ptr;
    const std::string key = pod.meta.Key();
    seen.insert(key);
    const metrics::LabelValues id = {pod.meta.name, *pod.meta.namespace_};
    auto label = [&](std::string_view k) -> std::string {
      auto it = nodes.find(pod.node_name);
      if (it == nodes.end()) return "";
      const std::string* v = it->second->meta.Label(k);
      return v == nullptr ? "" : *v;
    };
    const std::string pool = label(apis::v1::kNodePoolLabelKey);
    states[{pod.meta.name, *pod.meta.namespace_, OwnerPath(pod), pod.node_name,
            pod.node_name.empty() ? "false" : "true", pool, label(apis::v1::kLabelTopologyZone),
            label(apis::v1::kLabelArch), label(apis::v1::kCapacityTypeLabelKey),
            label(apis::v1::kLabelInstanceType), PodPhaseName(pod.phase),
            pod.ready ? "true" : "false", pool.empty() ? "false" : "true"}] = 1;

    const std::optional<absl::Time> success = times.SuccessTime(key);
    const bool pending = pod.phase == apis::core::PodPhase::kPending;
    // Undecided: acked, no decision yet, not bound.
    if (pending && !pod.scheduled_transition.has_value() && !times.DecisionTime(key)) {
      if (std::optional<absl::Time> ack = times.AckTime(key)) {
        undecided[id] = absl::ToDoubleSeconds(now - *ack);
      }
    }
    // Startup.
    if (pending) {
      pending_.insert(key);
      unstarted[id] = absl::ToDoubleSeconds(now - pod.meta.creation);
      if (success) p_unstarted[id] = absl::ToDoubleSeconds(now - *success);
    } else if (pending_.contains(key)) {
      if (pod.ready_transition.has_value()) {
        startup_->Observe({}, absl::ToDoubleSeconds(*pod.ready_transition - pod.meta.creation));
        if (success) {
          provisioning_startup_->Observe({},
                                         absl::ToDoubleSeconds(*pod.ready_transition - *success));
        }
        pending_.erase(key);
        times.Forget(key);
      } else if (Terminal(pod)) {
        pending_.erase(key);
        times.Forget(key);
      } else {
        unstarted[id] = absl::ToDoubleSeconds(now - pod.meta.creation);
        if (success) p_unstarted[id] = absl::ToDoubleSeconds(now - *success);
      }
    }
    // Binding.
    if (pending) {
      if (!pod.scheduled_transition.has_value()) {
        unbound[id] = absl::ToDoubleSeconds(now - pod.meta.creation);
        if (success) p_unbound[id] = absl::ToDoubleSeconds(now - *success);
      }
      unbound_pods_.insert(key);
    }
    if (unbound_pods_.contains(key) && pod.scheduled_transition.has_value()) {
      bound_->Observe({}, absl::ToDoubleSeconds(*pod.scheduled_transition - pod.meta.creation));
      if (success) {
        provisioning_bound_->Observe({},
                                     absl::ToDoubleSeconds(*pod.scheduled_transition - *success));
      }
      unbound_pods_.erase(key);
    }
  }
  // Pods that are gone.
  absl::erase_if(pending_, [&](const std::string& k) { return !seen.contains(k); });
  absl::erase_if(unbound_pods_, [&](const std::string& k) { return !seen.contains(k); });

  state_->Replace(std::move(states));
  unstarted_->Replace(std::move(unstarted));
  unbound_->Replace(std::move(unbound));
  provisioning_unstarted_->Replace(std::move(p_unstarted));
  provisioning_unbound_->Replace(std::move(p_unbound));
  undecided_->Replace(std::move(undecided));
}

void PodMetrics::Clear() {
  for (metrics::Gauge* g :
       {state_, unstarted_, unbound_, provisioning_unstarted_, provisioning_unbound_, undecided_}) {
    g->Replace({});
  }
  pending_.clear();
  unbound_pods_.clear();
}

}  // namespace dovetail::controllers::observability
