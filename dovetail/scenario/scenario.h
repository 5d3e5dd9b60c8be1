// The objects one solver question is built from, at one instant: the cluster state snapshot
// (nodes and in-flight NodeClaims with their bound pods), the provisionable pods, the NodePools
// with the instance types the cloud provider offers each, DaemonSets, namespace labels and the
// volumes pods claim.
//
// Provisioning asks "where do the pending pods go?" and disruption "where would the pods of these
// candidates go?" of the same Scenario, through the one BuildSolverInput (solver_input.h), so the
// two answer alike; `dovetail explain pod` asks it of one pod.
//
// A plain value: thread-compatible, copyable. The snapshot's pods are shared, immutable PodInfos.
#pragma once

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/apis/core/workloads.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/cloudprovider/instance_type.h"
#include "dovetail/scenario/volume_topology.h"
#include "dovetail/state/snapshot.h"

namespace dovetail::scenario {

struct Scenario {
  absl::Time now = absl::InfinitePast();
  // Nodes and NodeClaims, and the pods bound to them. Taken before `pending_pods` are listed, so
  // that a pod that binds in between is seen on its node rather than lost (state/cluster.h).
  state::Snapshot snapshot;
  // Pods the kube-scheduler could not place (IsProvisionable, pod_filter.h), in any order.
  std::vector<state::PodPtr> pending_pods;
  // Every NodePool by name, defaults applied (apis/v1/nodepool.h ApplyDefaults), including the
  // ones a question leaves out (being deleted, static, not Ready): disruption reads their budgets.
  absl::flat_hash_map<std::string, apis::v1::NodePool> node_pools;
  // CloudProvider::GetInstanceTypes per NodePool name; a pool whose call failed is absent here
  // and present in `instance_type_errors` with the error.
  absl::flat_hash_map<std::string, std::vector<cloudprovider::InstanceTypePtr>> instance_types;
  absl::flat_hash_map<std::string, absl::Status> instance_type_errors;
  std::vector<apis::core::DaemonSet> daemon_sets;
  absl::flat_hash_map<std::string, apis::core::StringMap> namespace_labels;
  // PersistentVolumeClaims, PersistentVolumes and StorageClasses (volume_topology.h).
  Volumes volumes;
};

}  // namespace dovetail::scenario
