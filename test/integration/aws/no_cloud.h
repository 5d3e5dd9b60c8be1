// NoCloud: the CloudProvider of the AWS controller tests whose controller never calls one
// (controllers::Dependencies needs one). Every call but List (empty) and IsDrifted ("") fails
// with Unimplemented, so an unexpected call shows in the test.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dovetail/cloudprovider/cloud_provider.h"

namespace dovetail::testing {

class NoCloud final : public cloudprovider::CloudProvider {
 public:
  absl::StatusOr<apis::v1::NodeClaim> Create(const apis::v1::NodeClaim&) override {
    return absl::UnimplementedError("no cloud");
  }
  absl::Status Delete(const apis::v1::NodeClaim&) override {
    return absl::UnimplementedError("no cloud");
  }
  absl::StatusOr<apis::v1::NodeClaim> Get(std::string_view) override {
    return absl::UnimplementedError("no cloud");
  }
  absl::StatusOr<std::vector<apis::v1::NodeClaim>> List() override {
    return std::vector<apis::v1::NodeClaim>{};
  }
  absl::StatusOr<cloudprovider::Catalog> GetInstanceTypes(const apis::v1::NodePool&) override {
    return absl::UnimplementedError("no cloud");
  }
  absl::StatusOr<std::string> IsDrifted(const apis::v1::NodeClaim&) override { return ""; }
  std::vector<cloudprovider::RepairPolicy> RepairPolicies() const override { return {}; }
  std::string_view Name() const override { return "none"; }
};

}  // namespace dovetail::testing
