#include "dovetail/controllers/observability/state_metrics_controller.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/cost/cost_report.h"
#include "dovetail/cost/from_state.h"

namespace dovetail::controllers::observability {

StateMetricsController::StateMetricsController(const Dependencies& deps,
                                               StateMetricsOptions options)
    : deps_(deps),
      options_(options),
      loop_(kube::WorkQueueOptions{}.WithMetrics(Name(), deps_.metrics), options_.period, [this] {
        Collect();
        return absl::OkStatus();
      }) {
  if (deps_.metrics == nullptr) return;
  nodes_ = std::make_unique<NodeMetrics>(*deps_.metrics);
  pods_ = std::make_unique<PodMetrics>(*deps_.metrics);
  nodepool_cost_total_ = &deps_.metrics->NewGauge(
      "karpenter_nodepools_cost_total",
      "Total cost of the nodepool from Karpenter's perspective: the hourly price of its launched "
      "machines' offerings (the cloud provider's currency, USD for AWS). Not an authoritative "
      "source for billing.",
      {"nodepool"});
  cost_errors_ = &deps_.metrics->NewCounter(
      "karpenter_nodepools_cost_tracker_errors_total",
      "Number of NodeClaims whose offering has no known price, by nodepool.", {"nodepool"});
  metrics::Gauge* unsynced =
      &deps_.metrics->NewGauge("karpenter_cluster_state_unsynced_time_seconds",
                               "The time for which cluster state is not synced");
  auto since = std::make_shared<std::optional<absl::Time>>();
  auto mu = std::make_shared<absl::Mutex>();
  deps_.metrics->OnScrape([unsynced, since, mu, &cluster = deps_.cluster, &clock = deps_.clock] {
    absl::MutexLock lock(mu.get());
    if (cluster.Synced()) {
      since->reset();
      unsynced->Set({}, 0);
      return;
    }
    if (!since->has_value()) *since = clock.Now();
    unsynced->Set({}, absl::ToDoubleSeconds(clock.Now() - **since));
  });
  nodepool_cost_ = &deps_.metrics->NewGauge(
      "dovetail_nodepool_cost_per_hour",
      "USD per hour of the NodePool's launched machines at their offering's price (nodepool \"\" "
      "for nodes Karpenter does not manage); x 730 per month.",
      {"nodepool"});
  cluster_cost_ =
      &deps_.metrics->NewGauge("dovetail_cluster_cost_per_hour",
                               "USD per hour of every launched machine with a known price.");
}

StateMetricsController::~StateMetricsController() { Stop(); }

void StateMetricsController::Start() { loop_.Start(); }

void StateMetricsController::Stop() {
  loop_.Stop();
  for (metrics::Gauge* g : {nodepool_cost_, cluster_cost_, nodepool_cost_total_}) {
    if (g != nullptr) g->Replace({});
  }
  if (nodes_ != nullptr) nodes_->Clear();
  if (pods_ != nullptr) pods_->Clear();
}

void StateMetricsController::Collect() {
  if (deps_.metrics == nullptr) return;
  const absl::Time now = deps_.clock.Now();
  nodes_->Collect(deps_.cluster, now);
  pods_->Collect(deps_.informers.pods().store().List(), deps_.informers.nodes().store().List(),
                 deps_.cluster.pod_scheduling_times(), now);
  CollectCost();
}

void StateMetricsController::CollectCost() {
  // Prices: the catalog offerings of each NodePool's node class (the provider caches its
  // catalog).
  std::map<std::string, apis::v1::NodePool> pools;
  for (const state::StateNode& n : deps_.cluster.Nodes()) {
    if (n.node_claim == nullptr || !n.node_claim->spec.node_class_ref.has_value()) continue;
    apis::v1::NodePool& pool = pools[n.NodePool()];
    pool.metadata.name = n.NodePool();
    pool.spec.template_.spec.node_class_ref = n.node_claim->spec.node_class_ref;
  }
  std::vector<cloudprovider::Catalog> catalogs;
  for (const auto& [name, pool] : pools) {
    absl::StatusOr<cloudprovider::Catalog> catalog = deps_.cloud.GetInstanceTypes(pool);
    if (catalog.ok()) catalogs.push_back(*std::move(catalog));
  }
  const cost::PriceLookup prices = [&catalogs](std::string_view type, std::string_view zone,
                                               std::string_view capacity_type) {
    for (const cloudprovider::Catalog& c : catalogs) {
      if (auto price = cost::OfferingPrice(c, type, zone, capacity_type)) return price;
    }
    return std::optional<double>();
  };
  const cost::Report report =
      cost::Compute(cost::MachinesFromCluster(deps_.cluster), prices, deps_.clock.Now());
  std::map<metrics::LabelValues, double> per_hour;
  std::map<metrics::LabelValues, double> managed;
  for (const cost::Totals& t : report.node_pools) {
    per_hour[{t.node_pool}] = t.cost_per_hour;
    if (!t.node_pool.empty()) managed[{t.node_pool}] = t.cost_per_hour;
  }
  nodepool_cost_->Replace(std::move(per_hour));
  nodepool_cost_total_->Replace(std::move(managed));
  absl::flat_hash_set<std::string> claims;
  for (const cost::MachineCost& m : report.machines) claims.insert(m.machine.node_claim);
  absl::erase_if(unpriced_claims_, [&](const std::string& c) { return !claims.contains(c); });
  for (const cost::MachineCost& m : report.machines) {
    if (m.machine.node_claim.empty() || m.price_per_hour.has_value()) continue;
    if (m.machine.status == cost::MachineStatus::kLaunching) continue;  // not priced yet
    if (unpriced_claims_.insert(m.machine.node_claim).second) {
      cost_errors_->Inc({m.machine.node_pool});
    }
  }
  cluster_cost_->Replace({{{}, report.total.cost_per_hour}});
}

}  // namespace dovetail::controllers::observability
