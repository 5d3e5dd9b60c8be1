#include "dovetail/scenario/from_cluster.h"

#include <utility>

#include "dovetail/scenario/pod_filter.h"

namespace dovetail::scenario {

Scenario FromCluster(const state::Cluster& cluster, state::ClusterInformers& informers,
                     cloudprovider::CloudProvider& cloud, absl::Time now) {
  Scenario s;
  s.now = now;
  s.snapshot = cluster.TakeSnapshot();  // before the pods (cluster.h)
  for (const auto& pod : informers.pods().store().List()) {
    if (IsProvisionable(*pod)) s.pending_pods.push_back(pod);
  }
  for (const auto& pool : informers.node_pools().store().List()) {
    apis::v1::NodePool copy = *pool;
    apis::v1::ApplyDefaults(copy);
    absl::StatusOr<cloudprovider::Catalog> catalog = cloud.GetInstanceTypes(copy);
    if (catalog.ok()) {
      s.instance_types[copy.metadata.name] =
          std::vector<cloudprovider::InstanceTypePtr>(catalog->begin(), catalog->end());
    } else {
      s.instance_type_errors[copy.metadata.name] = catalog.status();
    }
    s.node_pools[copy.metadata.name] = std::move(copy);
  }
  for (const auto& ds : informers.daemon_sets().store().List()) s.daemon_sets.push_back(*ds);
  informers.namespaces().store().ForEach([&s](const apis::core::Namespace& ns) {
    s.namespace_labels[ns.metadata.name] = ns.metadata.labels;
  });
  for (const auto& pvc : informers.pvcs().store().List()) s.volumes.claims.push_back(*pvc);
  for (const auto& pv : informers.pvs().store().List()) s.volumes.volumes.push_back(*pv);
  for (const auto& sc : informers.storage_classes().store().List()) {
    s.volumes.storage_classes.push_back(*sc);
  }
  return s;
}

}  // namespace dovetail::scenario
