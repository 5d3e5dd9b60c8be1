// Upstream's cloudprovider.metrics controller (pkg/controllers/metrics in the AWS provider): the
// offerings each NodePool could launch, as gauges labelled instance_type, capacity_type, zone:
//   karpenter_cloudprovider_instance_type_offering_available       1 when any NodePool's catalog
//                                                                  has the offering available
//   karpenter_cloudprovider_instance_type_offering_price_estimate  its price, USD per hour
// from CloudProvider::GetInstanceTypes of every NodePool (so node class zones and the ICE cache
// count, as upstream). With the ReservedCapacity gate, every zone of a type without a reserved
// offering gets reserved series of 0, as upstream. Unlike upstream, each pass replaces the series
// (offerings that are gone disappear instead of keeping their last value).
//
// One series per type x capacity type x zone: hundreds of thousands in a large region, so the
// operator runs this only under DOVETAIL_INSTANCE_TYPE_METRICS=true (docs/settings.md).
//
// Thread-safety: Collect may run concurrently with scrapes; the controller follows
// controllers/controller.h (leader only; Stop clears the gauges).
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/cloudprovider/cloud_provider.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/kube/singleton.h"
#include "dovetail/metrics/registry.h"

namespace dovetail::providers::aws {

struct OfferingGauges {
  metrics::Gauge* available = nullptr;
  metrics::Gauge* price = nullptr;
};
OfferingGauges RegisterOfferingGauges(metrics::Registry& registry);

// One pass over `node_pools`. On a GetInstanceTypes error nothing is changed (as upstream, which
// fails the pass) and the error is returned.
absl::Status CollectOfferingMetrics(::dovetail::cloudprovider::CloudProvider& cloud,
                                    const std::vector<apis::v1::NodePool>& node_pools,
                                    bool reserved_capacity, const OfferingGauges& gauges);

class OfferingMetricsController final : public controllers::Controller {
 public:
  struct Options {
    absl::Duration period = absl::Minutes(1);  // upstream's requeue; failures back off
    bool reserved_capacity = true;             // the ReservedCapacity feature gate
  };
  // `deps.metrics` must be non-null; `deps` must outlive this object.
  OfferingMetricsController(const controllers::Dependencies& deps, Options options);
  ~OfferingMetricsController() override;

  std::string_view Name() const override { return "cloudprovider.metrics"; }
  void Start() override;
  void Stop() override;
  // When the pass in flight began; nullopt between passes.
  std::optional<absl::Time> OldestWorkStart() const override { return loop_.OldestWorkStart(); }
  // Lists the NodePools and collects once (what the worker runs).
  absl::Status Collect();

 private:
  const controllers::Dependencies deps_;
  const Options options_;
  const OfferingGauges gauges_;
  kube::Singleton loop_;  // Collect() every period; a failure retries with backoff
};

}  // namespace dovetail::providers::aws
