#include "dovetail/scenario/from_cluster.h"

#include <utility>

#include "dovetail/scenario/pod_filter.h"

namespace dovetail::scenario {

Scenario FromCluster(const ClusterSources& sources, absl::Time now) {
  Scenario s;
  s.now = now;
  s.snapshot = sources.cluster.TakeSnapshot();  // before the pods (cluster.h)
  for (const auto& pod : sources.pods.List()) {
    if (IsProvisionable(*pod)) s.pending_pods.push_back(pod);
  }
  for (const auto& pool : sources.node_pools.List()) {
    apis::v1::NodePool copy = *pool;
    apis::v1::ApplyDefaults(copy);
    absl::StatusOr<cloudprovider::Catalog> catalog = sources.cloud.GetInstanceTypes(copy);
    if (catalog.ok()) {
      s.instance_types[copy.metadata.name] =
          std::vector<cloudprovider::InstanceTypePtr>(catalog->begin(), catalog->end());
    } else {
      s.instance_type_errors[copy.metadata.name] = catalog.status();
    }
    s.node_pools[copy.metadata.name] = std::move(copy);
  }
  for (const auto& ds : sources.daemon_sets.List()) s.daemon_sets.push_back(*ds);
  sources.namespaces.ForEach([&s](const apis::core::Namespace& ns) {
    s.namespace_labels[ns.metadata.name] = ns.metadata.labels;
  });
  return s;
}

}  // namespace dovetail::scenario
