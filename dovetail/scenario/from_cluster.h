// A Scenario (scenario.h) read from a running cluster: the cluster state snapshot, the pod
// informer's provisionable pods (nodes first, then pods: state/cluster.h), and the NodePool,
// DaemonSet and Namespace informers' objects, with each NodePool's instance types from the cloud
// provider. Provisioning, the disruption controller and `dovetail explain` read the cluster this
// one way.
//
// A NodePool whose GetInstanceTypes fails is kept, its error in Scenario::instance_type_errors
// (BuildSolverInput skips it with that reason; disruption then has no candidates in it).
// Thread-safe as its arguments are (informer stores and the cluster state are).
#pragma once

#include "absl/time/time.h"
#include "dovetail/apis/core/namespace.h"
#include "dovetail/apis/core/workloads.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/cloudprovider/cloud_provider.h"
#include "dovetail/kube/store.h"
#include "dovetail/scenario/scenario.h"
#include "dovetail/state/cluster.h"

namespace dovetail::scenario {

struct ClusterSources {
  const state::Cluster& cluster;
  const kube::Store<kube::PodInfo>& pods;
  const kube::Store<apis::v1::NodePool>& node_pools;
  const kube::Store<apis::core::DaemonSet>& daemon_sets;
  const kube::Store<apis::core::Namespace>& namespaces;
  cloudprovider::CloudProvider& cloud;
};

Scenario FromCluster(const ClusterSources& sources, absl::Time now);

}  // namespace dovetail::scenario
