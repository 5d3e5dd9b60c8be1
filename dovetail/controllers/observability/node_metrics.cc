#include "dovetail/controllers/observability/node_metrics.h"

#include <algorithm>
#include <map>
#include <utility>

#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/saturating.h"
#include "dovetail/metrics/resources.h"
#include "dovetail/state/pod_predicates.h"

namespace dovetail::controllers::observability {

namespace {

using Amounts = std::map<std::string, int64_t>;  // resource -> milli

std::vector<std::string> NodeLabelNames(bool with_resource_type) {
  std::vector<std::string> names;
  for (const auto& [key, name] : NodeMetrics::WellKnownLabels()) names.push_back(name);
  names.insert(names.end(), {"node_name", "phase", "managed"});
  if (with_resource_type) names.push_back("resource_type");
  return names;
}

void AddAll(Amounts& into, const std::vector<kube::ResourceAmount>& amounts) {
  for (const kube::ResourceAmount& a : amounts)
    into[*a.name] = SaturatingAdd(into[*a.name], a.milli);
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& NodeMetrics::WellKnownLabels() {
  static const auto* labels = [] {
    auto* out = new std::vector<std::pair<std::string, std::string>>();
    for (std::string_view key : apis::v1::kWellKnownLabels) {
      // Not among the labels upstream's node metrics carry.
      if (key == apis::v1::kLabelNitroSandbox || key == apis::v1::kLabelNodeClass) continue;
      const size_t slash = key.rfind('/');
      out->emplace_back(
          std::string(key),
          metrics::ResourceTypeLabel(key.substr(slash == std::string_view::npos ? 0 : slash + 1)));
    }
    std::sort(out->begin(), out->end(),
              [](const auto& a, const auto& b) { return a.second < b.second; });
    return out;
  }();
  return *labels;
}

NodeMetrics::NodeMetrics(metrics::Registry& registry) {
  const std::vector<std::string> with_type = NodeLabelNames(true);
  auto gauge = [&](const char* name, const char* help) {
    return &registry.NewGauge(name, help, with_type);
  };
  allocatable_ = gauge("karpenter_nodes_allocatable",
                       "Node allocatable are the resources allocatable by nodes.");
  pod_requests_ = gauge("karpenter_nodes_total_pod_requests",
                        "Node total pod requests are the resources requested by pods bound to "
                        "nodes, including the DaemonSet pods.");
  pod_limits_ = gauge("karpenter_nodes_total_pod_limits",
                      "Node total pod limits are the resources specified by pod limits, "
                      "including the DaemonSet pods.");
  daemon_requests_ = gauge("karpenter_nodes_total_daemon_requests",
                           "Node total daemon requests are the resource requested by DaemonSet "
                           "pods bound to nodes.");
  daemon_limits_ = gauge("karpenter_nodes_total_daemon_limits",
                         "Node total daemon limits are the resources specified by DaemonSet pod "
                         "limits.");
  overhead_ = gauge("karpenter_nodes_system_overhead",
                    "Node system daemon overhead are the resources reserved for system overhead, "
                    "the difference between the node's capacity and allocatable values are "
                    "reported by the status.");
  lifetime_ = &registry.NewGauge("karpenter_nodes_current_lifetime_seconds", "Node age in seconds",
                                 NodeLabelNames(false));
  utilization_ =
      &registry.NewGauge("karpenter_cluster_utilization_percent",
                         "Utilization of allocatable resources by pod requests", {"resource_type"});
}

void NodeMetrics::Collect(const state::Cluster& cluster, absl::Time now) {
  std::map<metrics::LabelValues, double> allocatable, pod_requests, pod_limits, daemon_requests,
      daemon_limits, overhead, lifetime;
  Amounts cluster_allocatable, cluster_requested;
  for (const state::StateNode& sn : cluster.Nodes()) {
    if (sn.node == nullptr) continue;
    const kube::NodeInfo& node = *sn.node;
    metrics::LabelValues labels;
    for (const auto& [key, name] : WellKnownLabels()) {
      const std::string* value = node.meta.Label(key);
      labels.push_back(value == nullptr ? "" : *value);
    }
    labels.insert(labels.end(), {node.meta.name, "", sn.Managed() ? "true" : "false"});
    lifetime[labels] = absl::ToDoubleSeconds(now - node.meta.creation);

    Amounts alloc, capacity, requests, limits, ds_requests, ds_limits;
    AddAll(alloc, node.allocatable);
    AddAll(capacity, node.capacity);
    for (const state::PodPtr& pod : cluster.PodsOn(node.meta.name)) {
      AddAll(requests, pod->requests);
      AddAll(limits, pod->limits);
      if (state::OwnedBy(*pod, "DaemonSet")) {
        AddAll(ds_requests, pod->requests);
        AddAll(ds_limits, pod->limits);
      }
    }
    Amounts system;
    for (const auto& [resource, milli] : capacity) {
      system[resource] = milli - (alloc.contains(resource) ? alloc.at(resource) : 0);
    }
    auto put = [&labels](std::map<metrics::LabelValues, double>& into, const Amounts& amounts) {
      for (const auto& [resource, milli] : amounts) {
        metrics::LabelValues with_type = labels;
        with_type.push_back(metrics::ResourceTypeLabel(resource));
        into[std::move(with_type)] = metrics::ResourceValue(resource, milli);
      }
    };
    put(allocatable, alloc);
    put(pod_requests, requests);
    put(pod_limits, limits);
    put(daemon_requests, ds_requests);
    put(daemon_limits, ds_limits);
    put(overhead, system);
    for (const auto& [resource, milli] : alloc) {
      cluster_allocatable[resource] = SaturatingAdd(cluster_allocatable[resource], milli);
    }
    for (const auto& [resource, milli] : requests) {
      cluster_requested[resource] = SaturatingAdd(cluster_requested[resource], milli);
    }
  }
  std::map<metrics::LabelValues, double> utilization;
  for (const auto& [resource, milli] : cluster_allocatable) {
    if (milli <= 0) continue;
    const int64_t used = cluster_requested.contains(resource) ? cluster_requested.at(resource) : 0;
    utilization[{metrics::ResourceTypeLabel(resource)}] =
        100.0 * static_cast<double>(used) / static_cast<double>(milli);
  }
  allocatable_->Replace(std::move(allocatable));
  pod_requests_->Replace(std::move(pod_requests));
  pod_limits_->Replace(std::move(pod_limits));
  daemon_requests_->Replace(std::move(daemon_requests));
  daemon_limits_->Replace(std::move(daemon_limits));
  overhead_->Replace(std::move(overhead));
  lifetime_->Replace(std::move(lifetime));
  utilization_->Replace(std::move(utilization));
}

void NodeMetrics::Clear() {
  for (metrics::Gauge* g : {allocatable_, pod_requests_, pod_limits_, daemon_requests_,
                            daemon_limits_, overhead_, lifetime_, utilization_}) {
    g->Replace({});
  }
}

}  // namespace dovetail::controllers::observability
