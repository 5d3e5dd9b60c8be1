#include "dovetail/controllers/launch/scheduler_metrics.h"

#include <optional>
#include <set>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "dovetail/apis/v1/labels.h"

namespace dovetail::controllers::launch {

struct SchedulerMetrics::InFlight {
  absl::Mutex mu;
  std::map<std::string, absl::Time> started ABSL_GUARDED_BY(mu);  // by scheduling id
  std::string last_id ABSL_GUARDED_BY(mu);  // its queue depth is dropped by the next simulation
  std::map<std::string, int> last_zones ABSL_GUARDED_BY(mu);  // the zone series set last
};

SchedulerMetrics::SchedulerMetrics(metrics::Registry* registry, std::string controller,
                                   const Clock& clock)
    : controller_(std::move(controller)), in_flight_(std::make_shared<InFlight>()) {
  if (registry == nullptr) return;
  duration_ = &registry->NewHistogram(
      "karpenter_scheduler_scheduling_duration_seconds",
      "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.",
      {"controller"}, metrics::DurationBuckets());
  queue_depth_ =
      &registry->NewGauge("karpenter_scheduler_queue_depth",
                          "The number of pods a scheduling simulation has not decided about yet.",
                          {"controller", "scheduling_id"});
  metrics::Gauge* unfinished = &registry->NewGauge(
      "karpenter_scheduler_unfinished_work_seconds",
      "How long a scheduling simulation that has not finished yet has been running, in seconds.",
      {"controller", "scheduling_id"});
  unschedulable_ = &registry->NewGauge(
      "karpenter_scheduler_unschedulable_pods_count",
      "The number of pods the last scheduling simulation could not place.", {"controller"});
  by_zone_ = &registry->NewGauge(
      "karpenter_scheduler_pending_pods_by_effective_zone_count",
      "Pending pods of the last scheduling simulation by the one zone they can schedule to "
      "(flexible: several or any; none: no zone).",
      {"controller", "zone"});
  ignored_ = &registry->NewGauge("karpenter_scheduler_ignored_pods_count",
                                 "Number of pods provisioning ignored during scheduling.");
  decisions_ = &registry->NewHistogram(
      "karpenter_pods_scheduling_decision_duration_seconds",
      "The time from when provisioning first saw a pending pod until a scheduling simulation "
      "first decided about it, in seconds.",
      {}, metrics::DurationBuckets());
  registry->OnScrape([in_flight = in_flight_, unfinished, controller = controller_, &clock] {
    absl::MutexLock lock(&in_flight->mu);
    for (const auto& [id, started] : in_flight->started) {
      unfinished->Set({controller, id}, absl::ToDoubleSeconds(clock.Now() - started));
    }
  });
  unfinished_ = unfinished;
  clock_ = &clock;
}

void SchedulerMetrics::SolveStarted(const std::string& scheduling_id, size_t pods) {
  if (queue_depth_ == nullptr) return;
  absl::MutexLock lock(&in_flight_->mu);
  if (!in_flight_->last_id.empty()) queue_depth_->Delete({controller_, in_flight_->last_id});
  in_flight_->last_id = scheduling_id;
  in_flight_->started[scheduling_id] = clock_->Now();
  queue_depth_->Set({controller_, scheduling_id}, static_cast<double>(pods));
  unfinished_->Set({controller_, scheduling_id}, 0);
}

void SchedulerMetrics::SolveFinished(const std::string& scheduling_id, absl::Duration took,
                                     size_t unschedulable,
                                     const std::map<std::string, int>& pending_by_zone) {
  if (queue_depth_ == nullptr) return;
  {
    absl::MutexLock lock(&in_flight_->mu);
    in_flight_->started.erase(scheduling_id);
    unfinished_->Delete({controller_, scheduling_id});
    queue_depth_->Set({controller_, scheduling_id}, 0);
    // Only this controller's zones are replaced.
    for (const auto& [zone, count] : in_flight_->last_zones) {
      if (!pending_by_zone.contains(zone)) by_zone_->Delete({controller_, zone});
    }
    for (const auto& [zone, count] : pending_by_zone) {
      by_zone_->Set({controller_, zone}, count);
    }
    in_flight_->last_zones = pending_by_zone;
  }
  duration_->Observe({controller_}, absl::ToDoubleSeconds(took));
  unschedulable_->Set({controller_}, static_cast<double>(unschedulable));
}

void SchedulerMetrics::SetIgnoredPods(int64_t count) {
  if (ignored_ != nullptr) ignored_->Set({}, static_cast<double>(count));
}

void SchedulerMetrics::ObserveDecisions(const std::vector<absl::Duration>& ack_to_decision) {
  if (decisions_ == nullptr) return;
  for (absl::Duration d : ack_to_decision) decisions_->Observe({}, absl::ToDoubleSeconds(d));
}

std::string EffectiveZone(const apis::core::Pod& pod) {
  const std::string zone_key(apis::v1::kLabelTopologyZone);
  // nullopt: any zone.
  using Zones = std::optional<std::set<std::string>>;
  auto intersect = [](const Zones& a, const Zones& b) -> Zones {
    if (!a.has_value()) return b;
    if (!b.has_value()) return a;
    std::set<std::string> out;
    for (const std::string& z : *a) {
      if (b->contains(z)) out.insert(z);
    }
    return out;
  };
  Zones allowed;
  if (auto it = pod.spec.node_selector.find(zone_key); it != pod.spec.node_selector.end()) {
    allowed = std::set<std::string>{it->second};
  }
  const auto& affinity = pod.spec.affinity;
  if (affinity.has_value() && affinity->node_affinity.has_value() &&
      affinity->node_affinity->required.has_value() &&
      !affinity->node_affinity->required->terms.empty()) {
    Zones any_term = std::set<std::string>{};  // the union of the ORed terms
    for (const apis::core::NodeSelectorTerm& term : affinity->node_affinity->required->terms) {
      Zones in_term;
      for (const apis::core::NodeSelectorRequirement& r : term.match_expressions) {
        if (r.key != zone_key || r.op != apis::core::SelectorOperator::kIn) continue;
        in_term = intersect(in_term, std::set<std::string>(r.values.begin(), r.values.end()));
      }
      if (!in_term.has_value()) {
        any_term.reset();
        break;
      }
      any_term->insert(in_term->begin(), in_term->end());
    }
    allowed = intersect(allowed, any_term);
  }
  if (!allowed.has_value()) return "flexible";
  if (allowed->empty()) return "none";
  return allowed->size() == 1 ? *allowed->begin() : "flexible";
}

}  // namespace dovetail::controllers::launch
