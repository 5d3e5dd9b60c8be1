#include "dovetail/cloudprovider/cloud_provider.h"

#include <memory>
#include <string>
#include <vector>

#include "dovetail/cloudprovider/metered_cloud_provider.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::cloudprovider {
namespace {

// A provider with one machine that takes two Delete calls to disappear and no capacity for new
// ones: enough to exercise the contracts callers rely on through the interface.
class OneMachineProvider final : public CloudProvider {
 public:
  absl::StatusOr<apis::v1::NodeClaim> Create(const apis::v1::NodeClaim&) override {
    return InsufficientCapacityError("no capacity");
  }
  absl::Status Delete(const apis::v1::NodeClaim& claim) override {
    if (claim.status.provider_id != kProviderId || deletes_ >= 2) {
      return NodeClaimNotFoundError("gone");
    }
    ++deletes_;
    return absl::OkStatus();
  }
  absl::StatusOr<apis::v1::NodeClaim> Get(std::string_view provider_id) override {
    if (provider_id != kProviderId || deletes_ >= 2) return NodeClaimNotFoundError("gone");
    apis::v1::NodeClaim claim;
    claim.status.provider_id = kProviderId;
    return claim;
  }
  absl::StatusOr<std::vector<apis::v1::NodeClaim>> List() override {
    std::vector<apis::v1::NodeClaim> out;
    if (absl::StatusOr<apis::v1::NodeClaim> claim = Get(kProviderId); claim.ok()) {
      out.push_back(*claim);
    }
    return out;
  }
  absl::StatusOr<Catalog> GetInstanceTypes(const apis::v1::NodePool& pool) override {
    if (pool.metadata.name != "default") return NodeClassNotReadyError("node class not ready");
    return Catalog();
  }
  absl::StatusOr<std::string> IsDrifted(const apis::v1::NodeClaim&) override { return ""; }
  std::vector<RepairPolicy> RepairPolicies() const override {
    return {{"Ready", apis::core::ConditionStatus::kFalse, absl::Minutes(30)}};
  }
  std::string_view Name() const override { return "one-machine"; }

  static constexpr std::string_view kProviderId = "fake:///zone-a/i-1";

 private:
  int deletes_ = 0;
};

TEST(CloudProviderTest, TypedErrorsFlowThroughTheInterface) {
  std::unique_ptr<CloudProvider> provider = std::make_unique<OneMachineProvider>();
  EXPECT_TRUE(IsInsufficientCapacity(provider->Create(apis::v1::NodeClaim()).status()));
  EXPECT_TRUE(IsNodeClaimNotFound(provider->Get("fake:///zone-a/i-2").status()));
  apis::v1::NodePool other;
  other.metadata.name = "other";
  EXPECT_TRUE(IsNodeClassNotReady(provider->GetInstanceTypes(other).status()));
  EXPECT_EQ(provider->Name(), "one-machine");
  ASSERT_EQ(provider->RepairPolicies().size(), 1u);
  EXPECT_EQ(provider->RepairPolicies()[0].toleration, absl::Minutes(30));
}

TEST(CloudProviderTest, DeleteIsDoneOnlyOnNodeClaimNotFound) {
  OneMachineProvider provider;
  apis::v1::NodeClaim claim;
  claim.status.provider_id = OneMachineProvider::kProviderId;
  int calls = 0;
  absl::Status status;
  do {
    status = provider.Delete(claim);
    ++calls;
  } while (status.ok() && calls < 10);
  EXPECT_TRUE(IsNodeClaimNotFound(status));
  EXPECT_EQ(calls, 3);
  EXPECT_TRUE(provider.List()->empty());
}

// The decorator: every call timed under the caller's controller label, failures counted by type.
TEST(MeteredCloudProviderTest, TimesEveryCallAndCountsErrorsByType) {
  OneMachineProvider inner;
  metrics::Registry registry;
  MeteredCloudProvider metered(inner, registry, "node.termination");
  apis::v1::NodeClaim claim;
  claim.status.provider_id = std::string(OneMachineProvider::kProviderId);
  EXPECT_TRUE(metered.Delete(claim).ok());
  EXPECT_TRUE(metered.Delete(claim).ok());
  EXPECT_TRUE(IsNodeClaimNotFound(metered.Delete(claim)));  // the error passes through
  EXPECT_TRUE(IsInsufficientCapacity(metered.Create(claim).status()));
  EXPECT_EQ(metered.RepairPolicies().size(), 1u);
  EXPECT_EQ(metered.Name(), "one-machine");
  const std::string text = registry.Expose();
  EXPECT_THAT(
      text, ::testing::HasSubstr("karpenter_cloudprovider_duration_seconds_count{controller=\"node."
                                 "termination\",method=\"Delete\",provider=\"one-machine\"} 3\n"));
  EXPECT_THAT(text, ::testing::HasSubstr(
                        "karpenter_cloudprovider_duration_seconds_count{controller=\"node."
                        "termination\",method=\"RepairPolicies\",provider=\"one-machine\"} 1\n"));
  EXPECT_THAT(
      text,
      ::testing::HasSubstr(
          "karpenter_cloudprovider_errors_total{controller=\"node.termination\","
          "method=\"Delete\",provider=\"one-machine\",error=\"NodeClaimNotFoundError\"} 1\n"));
  EXPECT_THAT(
      text,
      ::testing::HasSubstr(
          "method=\"Create\",provider=\"one-machine\",error=\"InsufficientCapacityError\"} 1\n"));
  EXPECT_EQ(MeteredCloudProvider::ErrorLabel(absl::UnavailableError("x")), "");
}

}  // namespace
}  // namespace dovetail::cloudprovider
