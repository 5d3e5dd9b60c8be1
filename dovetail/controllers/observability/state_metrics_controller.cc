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

namespace {

constexpr char kKey[] = "state";

std::string PhaseName(apis::core::PodPhase phase) {
  switch (phase) {
    case apis::core::PodPhase::kPending:
      return "Pending";
    case apis::core::PodPhase::kRunning:
      return "Running";
    case apis::core::PodPhase::kSucceeded:
      return "Succeeded";
    case apis::core::PodPhase::kFailed:
      return "Failed";
    case apis::core::PodPhase::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

}  // namespace

StateMetricsController::StateMetricsController(const Dependencies& deps,
                                               StateMetricsOptions options)
    : deps_(deps), options_(options) {
  if (deps_.metrics == nullptr) return;
  pods_ = &deps_.metrics->NewGauge("karpenter_pods_state",
                                   "Pods by phase and by the NodePool of their node.",
                                   {"phase", "nodepool"});
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

void StateMetricsController::Start() {
  absl::MutexLock lock(&mu_);
  if (queue_ != nullptr) return;
  queue_ = std::make_unique<kube::WorkQueue>();
  queue_->Add(kKey);
  workers_ = std::make_unique<kube::Controller>(
      *queue_,
      [this](const std::string&) -> absl::StatusOr<kube::ReconcileResult> {
        Collect();
        return kube::ReconcileResult{.requeue_after = options_.period};
      },
      1);
  workers_->Start();
}

void StateMetricsController::Stop() {
  std::unique_ptr<kube::WorkQueue> queue;
  std::unique_ptr<kube::Controller> workers;
  {
    absl::MutexLock lock(&mu_);
    queue = std::move(queue_);
    workers = std::move(workers_);
  }
  if (workers != nullptr) workers->Stop();
  workers.reset();
  queue.reset();
  for (metrics::Gauge* g : {pods_, nodepool_cost_, cluster_cost_}) {
    if (g != nullptr) g->Replace({});
  }
}

void StateMetricsController::Collect() {
  if (deps_.metrics == nullptr) return;
  CollectPods();
  CollectCost();
}

void StateMetricsController::CollectPods() {
  std::map<std::string, std::string> pool_of_node;
  for (const state::StateNode& n : deps_.cluster.Nodes()) pool_of_node[n.Name()] = n.NodePool();
  std::map<metrics::LabelValues, double> pods;
  deps_.informers.pods().store().ForEach([&](const kube::PodInfo& pod) {
    auto it = pool_of_node.find(pod.node_name);
    const std::string pool = it == pool_of_node.end() ? "" : it->second;
    ++pods[metrics::LabelValues{PhaseName(pod.phase), pool}];
  });
  pods_->Replace(std::move(pods));
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
  for (const cost::Totals& t : report.node_pools) per_hour[{t.node_pool}] = t.cost_per_hour;
  nodepool_cost_->Replace(std::move(per_hour));
  cluster_cost_->Replace({{{}, report.total.cost_per_hour}});
}

}  // namespace dovetail::controllers::observability
