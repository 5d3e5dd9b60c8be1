#include "dovetail/cloudprovider/metered_cloud_provider.h"

#include <chrono>
#include <type_traits>
#include <utility>

namespace dovetail::cloudprovider {

namespace {

const absl::Status& StatusOf(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}
template <typename T>
const absl::Status& StatusOf(const T&) {
  static const absl::Status ok;
  return ok;
}

}  // namespace

MeteredCloudProvider::MeteredCloudProvider(CloudProvider& inner, metrics::Registry& registry,
                                           std::string controller)
    : inner_(inner),
      controller_(std::move(controller)),
      duration_(&registry.NewHistogram(
          "karpenter_cloudprovider_duration_seconds",
          "Duration of cloud provider method calls. Labeled by the controller, method name and "
          "provider.",
          {"controller", "method", "provider"},
          {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10})),
      errors_(&registry.NewCounter("karpenter_cloudprovider_errors_total",
                                   "Total number of errors returned from CloudProvider calls.",
                                   {"controller", "method", "provider", "error"})) {}

std::string MeteredCloudProvider::ErrorLabel(const absl::Status& status) {
  if (IsInsufficientCapacity(status)) return "InsufficientCapacityError";
  if (IsNodeClaimNotFound(status)) return "NodeClaimNotFoundError";
  if (IsNodeClassNotReady(status)) return "NodeClassNotReadyError";
  return "";
}

template <typename F>
auto MeteredCloudProvider::Measure(const char* method, F&& call) const {
  const auto start = std::chrono::steady_clock::now();
  auto result = call();
  const std::string provider(inner_.Name());
  duration_->Observe(
      {controller_, method, provider},
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (const absl::Status& status = StatusOf(result); !status.ok()) {
    errors_->Inc({controller_, method, provider, ErrorLabel(status)});
  }
  return result;
}

absl::StatusOr<apis::v1::NodeClaim> MeteredCloudProvider::Create(
    const apis::v1::NodeClaim& node_claim) {
  return Measure("Create", [&] { return inner_.Create(node_claim); });
}

absl::Status MeteredCloudProvider::Delete(const apis::v1::NodeClaim& node_claim) {
  return Measure("Delete", [&] { return inner_.Delete(node_claim); });
}

absl::StatusOr<apis::v1::NodeClaim> MeteredCloudProvider::Get(std::string_view provider_id) {
  return Measure("Get", [&] { return inner_.Get(provider_id); });
}

absl::StatusOr<std::vector<apis::v1::NodeClaim>> MeteredCloudProvider::List() {
  return Measure("List", [&] { return inner_.List(); });
}

absl::StatusOr<Catalog> MeteredCloudProvider::GetInstanceTypes(
    const apis::v1::NodePool& node_pool) {
  return Measure("GetInstanceTypes", [&] { return inner_.GetInstanceTypes(node_pool); });
}

absl::StatusOr<std::string> MeteredCloudProvider::IsDrifted(const apis::v1::NodeClaim& node_claim) {
  return Measure("IsDrifted", [&] { return inner_.IsDrifted(node_claim); });
}

std::vector<RepairPolicy> MeteredCloudProvider::RepairPolicies() const {
  return Measure("RepairPolicies", [&] { return inner_.RepairPolicies(); });
}

}  // namespace dovetail::cloudprovider
