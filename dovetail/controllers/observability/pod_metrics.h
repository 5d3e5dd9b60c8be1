// PodMetrics: upstream's per-pod families, recomputed from the pod informer's store and the
// cluster state on each Collect() (StateMetricsController runs it on the leader):
//   karpenter_pods_state{name,namespace,owner,node,scheduled,nodepool,zone,arch,capacity_type,
//       instance_type,phase,ready,managed} = 1 per pod (owner: the first owner's API path,
//       "/apis/<apiVersion>/namespaces/<ns>/<kind>s/<name>"; node labels from its Node);
//   karpenter_pods_unstarted_time_seconds / _unbound_time_seconds{name,namespace}: age of a pod
//       that is pending (not ready / not bound yet), from its creation;
//   karpenter_pods_provisioning_unstarted_time_seconds / _provisioning_unbound_time_seconds: the
//       same from when provisioning first placed it (PodSchedulingTimes' success), for such pods;
//   karpenter_pods_provisioning_scheduling_undecided_time_seconds{name,namespace}: a pending pod
//       provisioning acked and has not decided about yet, since the ack;
//   karpenter_pods_startup_duration_seconds (summary) and _provisioning_startup_duration_seconds
//       (histogram): once a pod seen pending turns Ready, creation (or placement) → Ready's
//       transition time;
//   karpenter_pods_bound_duration_seconds / _provisioning_bound_duration_seconds (histograms):
//       once a pod seen unbound is bound, creation (or placement) → PodScheduled's transition.
// A pod that starts, or ends without starting, is forgotten by PodSchedulingTimes. A pod that is
// created, bound and started between two collections is not observed (upstream observes pod
// events; Dovetail samples every period). Thread-compatible (serialised by the caller).
#pragma once

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/state/cluster.h"

namespace dovetail::controllers::observability {

class PodMetrics {
 public:
  explicit PodMetrics(metrics::Registry& registry);
  // `pods` and `nodes`: every Pod and Node (the informers' stores).
  void Collect(const std::vector<state::PodPtr>& pods, const std::vector<state::NodePtr>& nodes,
               state::PodSchedulingTimes& times, absl::Time now);
  void Clear();

 private:
  metrics::Gauge* state_;
  metrics::Gauge* unstarted_;
  metrics::Gauge* unbound_;
  metrics::Gauge* provisioning_unstarted_;
  metrics::Gauge* provisioning_unbound_;
  metrics::Gauge* undecided_;
  metrics::Summary* startup_;
  metrics::Histogram* provisioning_startup_;
  metrics::Histogram* bound_;
  metrics::Histogram* provisioning_bound_;
  absl::flat_hash_set<std::string> pending_;       // pods seen pending, awaiting Ready
  absl::flat_hash_set<std::string> unbound_pods_;  // pods seen unbound, awaiting their binding
};

}  // namespace dovetail::controllers::observability
