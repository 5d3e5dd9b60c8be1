// NodeMetrics: upstream's per-node gauges, recomputed from the cluster state on each Collect()
// (StateMetricsController runs it on the leader):
//   karpenter_nodes_allocatable, _total_pod_requests, _total_pod_limits, _total_daemon_requests,
//   _total_daemon_limits, _system_overhead (capacity - allocatable), by resource_type, and
//   karpenter_nodes_current_lifetime_seconds (since the Node's creation);
//   karpenter_cluster_utilization_percent{resource_type}: pod requests over allocatable, summed
//   over every node.
// Only nodes with a Node object count. Every node series carries the node's well-known labels
// (upstream's names: the key's last segment, lower-cased, '-' as '_'; "" when the node lacks
// it), node_name, phase (Node.status.phase, which kubelets no longer set: "") and managed (it has
// a NodeClaim). Requests and limits are the pods' effective ones (init containers and overhead
// included), DaemonSet pods apart. Thread-safe (serialised by the caller).
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/state/cluster.h"

namespace dovetail::controllers::observability {

class NodeMetrics {
 public:
  explicit NodeMetrics(metrics::Registry& registry);
  void Collect(const state::Cluster& cluster, absl::Time now);
  void Clear();

  // The well-known node label keys and their metric label names, sorted by the latter.
  static const std::vector<std::pair<std::string, std::string>>& WellKnownLabels();

 private:
  metrics::Gauge* allocatable_;
  metrics::Gauge* pod_requests_;
  metrics::Gauge* pod_limits_;
  metrics::Gauge* daemon_requests_;
  metrics::Gauge* daemon_limits_;
  metrics::Gauge* overhead_;
  metrics::Gauge* lifetime_;
  metrics::Gauge* utilization_;
};

}  // namespace dovetail::controllers::observability
