// SchedulerMetrics: upstream's karpenter_scheduler_* families for one controller that runs
// scheduling simulations (label controller: "provisioner", or "disruption" for consolidation's
// simulations), and the pod decision histogram:
//   karpenter_scheduler_scheduling_duration_seconds{controller}     one per simulation
//   karpenter_scheduler_queue_depth{controller,scheduling_id}       pods not yet decided by the
//       simulation `scheduling_id` (its decision id); 0 once it finished, dropped at the next
//   karpenter_scheduler_unfinished_work_seconds{controller,scheduling_id}  age of a simulation
//       still running, read at scrape time; dropped when it finishes
//   karpenter_scheduler_unschedulable_pods_count{controller}        pods the last one could not
//       place
//   karpenter_scheduler_pending_pods_by_effective_zone_count{controller,zone}  pending pods by
//       the one zone they can go to ("flexible": several or any, "none": no zone satisfies them)
//   karpenter_scheduler_ignored_pods_count                          pods provisioning ignored
//   karpenter_pods_scheduling_decision_duration_seconds             ack → first decision, per pod
// Dovetail's solver decides every pod of a simulation in one call, so the queue depth is the
// simulation's pod count while it runs. Thread-safe; a null registry makes every method a no-op.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/common/clock.h"
#include "dovetail/metrics/registry.h"

namespace dovetail::controllers::launch {

class SchedulerMetrics {
 public:
  SchedulerMetrics(metrics::Registry* registry, std::string controller, const Clock& clock);

  // A simulation of `pods` pods starts / ends under `scheduling_id`.
  void SolveStarted(const std::string& scheduling_id, size_t pods);
  void SolveFinished(const std::string& scheduling_id, absl::Duration took, size_t unschedulable,
                     const std::map<std::string, int>& pending_by_zone);
  void SetIgnoredPods(int64_t count);
  void ObserveDecisions(const std::vector<absl::Duration>& ack_to_decision);

 private:
  struct InFlight;
  const std::string controller_;
  metrics::Histogram* duration_ = nullptr;
  metrics::Gauge* queue_depth_ = nullptr;
  metrics::Gauge* unschedulable_ = nullptr;
  metrics::Gauge* by_zone_ = nullptr;
  metrics::Gauge* ignored_ = nullptr;
  metrics::Histogram* decisions_ = nullptr;
  metrics::Gauge* unfinished_ = nullptr;
  const Clock* clock_ = nullptr;
  // Shared with the registry's scrape refresher, which may outlive this object.
  std::shared_ptr<InFlight> in_flight_;
};

// The zone a pending pod can go to, from its node selector and required node affinity on
// topology.kubernetes.io/zone: the one zone they allow, "flexible" when they allow several or
// do not constrain it, "none" when the terms allow no zone. (Upstream also narrows by volume
// zones and topology spread domains; those are not considered here.)
std::string EffectiveZone(const apis::core::Pod& pod);

}  // namespace dovetail::controllers::launch
