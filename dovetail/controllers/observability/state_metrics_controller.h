// StateMetricsController ("metrics.state"): the per-cluster gauges, recomputed from the cluster
// state every `period` by the leader only (upstream's metrics controllers run on the leader; a
// replica that does not lead exports none of them, and one that stops leading clears them):
//   - upstream's per-node gauges and cluster utilization (node_metrics.h);
//   - upstream's per-pod gauges and pod startup/bound durations (pod_metrics.h);
//   - dovetail_nodepool_cost_per_hour{nodepool} and dovetail_cluster_cost_per_hour: the totals
//     of `dovetail cost` (docs/cost.md), priced from the catalog of each NodePool's node class;
//     upstream's karpenter_nodepools_cost_total{nodepool} is the same per-pool sum (managed pools
//     only), and karpenter_nodepools_cost_tracker_errors_total{nodepool} counts the NodeClaims
//     whose offering has no price (once per NodeClaim);
//   - karpenter_cluster_state_unsynced_time_seconds: how long the cluster state has not been
//     synced (0 when synced), read at scrape time.
// Computing them off the /metrics request keeps a scrape fast whatever the catalog costs to build
// (the AWS provider may refresh it from the EC2 API).
// Not built under DISABLE_CLUSTER_STATE_OBSERVABILITY (operator/controllers.cc).
// Thread-safety: see controllers/controller.h; one worker recomputes.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/observability/node_metrics.h"
#include "dovetail/controllers/observability/pod_metrics.h"
#include "dovetail/kube/singleton.h"
#include "dovetail/metrics/registry.h"

namespace dovetail::controllers::observability {

struct StateMetricsOptions {
  absl::Duration period = absl::Seconds(10);
};

class StateMetricsController final : public Controller {
 public:
  // Registers the gauges; `deps` (with a non-null `metrics`) must outlive this object.
  explicit StateMetricsController(const Dependencies& deps, StateMetricsOptions options = {});
  ~StateMetricsController() override;

  std::string_view Name() const override { return "metrics.state"; }
  // Recomputes at once, then every period.
  void Start() override;
  // Stops recomputing and clears the gauges (a replica that does not lead exports none).
  void Stop() override;
  // When the pass in flight began; nullopt between passes.
  std::optional<absl::Time> OldestWorkStart() const override { return loop_.OldestWorkStart(); }

  // One recomputation (what the worker runs; public for tests).
  void Collect();

 private:
  void CollectCost();

  const Dependencies deps_;
  const StateMetricsOptions options_;
  std::unique_ptr<NodeMetrics> nodes_;
  std::unique_ptr<PodMetrics> pods_;
  metrics::Gauge* nodepool_cost_total_ = nullptr;
  metrics::Counter* cost_errors_ = nullptr;
  absl::flat_hash_set<std::string> unpriced_claims_;  // counted once each
  metrics::Gauge* nodepool_cost_ = nullptr;
  metrics::Gauge* cluster_cost_ = nullptr;

  kube::Singleton loop_;  // Collect() every period
};

}  // namespace dovetail::controllers::observability
