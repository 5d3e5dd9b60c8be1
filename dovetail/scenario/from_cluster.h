// A Scenario (scenario.h) read from a running cluster: the cluster state snapshot, the pod
// informer's provisionable pods (nodes first, then pods: state/cluster.h), and the shared
// informers' NodePools, DaemonSets, Namespaces, PersistentVolumeClaims, PersistentVolumes and
// StorageClasses (state/cluster_informers.h), with each NodePool's instance types from the cloud
// provider. Provisioning, the disruption controller and `dovetail explain` read the cluster this
// one way.
//
// A NodePool whose GetInstanceTypes fails is kept, its error in Scenario::instance_type_errors
// (BuildSolverInput skips it with that reason; disruption then has no candidates in it). The
// caller checks that the informers have synced.
// Thread-safe as its arguments are (informer stores and the cluster state are).
#pragma once

#include "absl/time/time.h"
#include "dovetail/cloudprovider/cloud_provider.h"
#include "dovetail/scenario/scenario.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/cluster_informers.h"

namespace dovetail::scenario {

Scenario FromCluster(const state::Cluster& cluster, state::ClusterInformers& informers,
                     cloudprovider::CloudProvider& cloud, absl::Time now);

}  // namespace dovetail::scenario
