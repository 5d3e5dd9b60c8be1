// MeteredCloudProvider: a CloudProvider decorator that exports upstream's cloud provider metrics
// for one calling controller, as upstream's metrics decorator does for every controller:
//   karpenter_cloudprovider_duration_seconds{controller,method,provider}   every call
//   karpenter_cloudprovider_errors_total{controller,method,provider,error} every failed call;
//       error is InsufficientCapacityError, NodeClaimNotFoundError, NodeClassNotReadyError or ""
// method is the interface method's name (Create, Delete, Get, List, GetInstanceTypes, IsDrifted,
// RepairPolicies), provider the wrapped provider's Name(). The operator gives each controller its
// own decorator (the controller label) over the one provider.
// Thread-safe as the wrapped provider is. `inner` and `registry` must outlive this object.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dovetail/cloudprovider/cloud_provider.h"
#include "dovetail/metrics/registry.h"

namespace dovetail::cloudprovider {

class MeteredCloudProvider final : public CloudProvider {
 public:
  MeteredCloudProvider(CloudProvider& inner, metrics::Registry& registry, std::string controller);

  absl::StatusOr<apis::v1::NodeClaim> Create(const apis::v1::NodeClaim& node_claim) override;
  absl::Status Delete(const apis::v1::NodeClaim& node_claim) override;
  absl::StatusOr<apis::v1::NodeClaim> Get(std::string_view provider_id) override;
  absl::StatusOr<std::vector<apis::v1::NodeClaim>> List() override;
  absl::StatusOr<Catalog> GetInstanceTypes(const apis::v1::NodePool& node_pool) override;
  absl::StatusOr<std::string> IsDrifted(const apis::v1::NodeClaim& node_claim) override;
  std::vector<RepairPolicy> RepairPolicies() const override;
  std::string_view Name() const override { return inner_.Name(); }

  // The error label of a failed call.
  static std::string ErrorLabel(const absl::Status& status);

 private:
  template <typename F>
  auto Measure(const char* method, F&& call) const;

  CloudProvider& inner_;
  const std::string controller_;
  metrics::Histogram* duration_;
  metrics::Counter* errors_;
};

}  // namespace dovetail::cloudprovider
