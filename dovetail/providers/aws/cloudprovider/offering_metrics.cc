#include "dovetail/providers/aws/cloudprovider/offering_metrics.h"

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/log.h"
#include "dovetail/kube/resource.h"
#include "dovetail/kube/typed_client.h"

namespace dovetail::providers::aws {

OfferingGauges RegisterOfferingGauges(metrics::Registry& registry) {
  const std::vector<std::string> labels = {"instance_type", "capacity_type", "zone"};
  return {
      .available = &registry.NewGauge(
          "karpenter_cloudprovider_instance_type_offering_available",
          "1 when a NodePool could launch the offering (instance type, capacity type, zone).",
          labels),
      .price = &registry.NewGauge("karpenter_cloudprovider_instance_type_offering_price_estimate",
                                  "Estimated price of the offering, USD per hour.", labels),
  };
}

absl::Status CollectOfferingMetrics(::dovetail::cloudprovider::CloudProvider& cloud,
                                    const std::vector<apis::v1::NodePool>& node_pools,
                                    bool reserved_capacity, const OfferingGauges& gauges) {
  std::map<metrics::LabelValues, double> available;
  std::map<metrics::LabelValues, double> price;
  for (const apis::v1::NodePool& pool : node_pools) {
    absl::StatusOr<::dovetail::cloudprovider::Catalog> catalog = cloud.GetInstanceTypes(pool);
    if (!catalog.ok()) return catalog.status();
    for (const auto& type : *catalog) {
      std::set<std::string> zones;
      for (const ::dovetail::cloudprovider::Offering& o : type->offerings()) {
        const metrics::LabelValues key = {type->name(), o.capacity_type, o.zone};
        double& a = available[key];
        if (o.available) a = 1;  // available in any NodePool
        price[key] = o.price;    // the last NodePool's, as upstream
        zones.insert(o.zone);
      }
      if (!reserved_capacity) continue;
      for (const std::string& zone : zones) {
        const metrics::LabelValues key = {type->name(),
                                          std::string(apis::v1::kCapacityTypeReserved), zone};
        if (available.emplace(key, 0).second) price[key] = 0;
      }
    }
  }
  gauges.available->Replace(std::move(available));
  gauges.price->Replace(std::move(price));
  return absl::OkStatus();
}

OfferingMetricsController::OfferingMetricsController(const controllers::Dependencies& deps,
                                                     Options options)
    : deps_(deps),
      options_(options),
      gauges_(RegisterOfferingGauges(*deps.metrics)),
      // A failed pass (a node class not ready yet, an API error) is retried with the queue's
      // backoff, as upstream's controller returns its error.
      loop_(kube::WorkQueueOptions{}.WithMetrics(Name(), deps_.metrics), options_.period, [this] {
        absl::Status status = Collect();
        if (!status.ok()) {
          log::Error("cloudprovider.metrics", "collecting the offering metrics",
                     {{"error", status.ToString()}});
        }
        return status;
      }) {}

OfferingMetricsController::~OfferingMetricsController() { Stop(); }

absl::Status OfferingMetricsController::Collect() {
  kube::TypedClient<apis::v1::NodePool> pools(deps_.client, kube::resources::kNodePools);
  absl::StatusOr<std::vector<apis::v1::NodePool>> list = pools.List("");
  if (!list.ok()) return list.status();
  return CollectOfferingMetrics(deps_.cloud, *list, options_.reserved_capacity, gauges_);
}

void OfferingMetricsController::Start() { loop_.Start(); }

void OfferingMetricsController::Stop() {
  loop_.Stop();
  gauges_.available->Replace({});
  gauges_.price->Replace({});
}

}  // namespace dovetail::providers::aws
