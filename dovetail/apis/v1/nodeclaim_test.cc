#include "dovetail/apis/v1/nodeclaim.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/manifest.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::apis::v1 {
namespace {

using ::dovetail::apis::core::DecodeJson;
using ::dovetail::apis::core::EncodeJson;
using ::dovetail::apis::core::Manifest;
using ::nlohmann::json;

std::string TestData(const std::string& name) {
  return std::string(DOVETAIL_APIS_TESTDATA) + "/" + name;
}

Manifest Fixture() {
  absl::StatusOr<std::vector<Manifest>> manifests = core::ReadManifests(TestData("nodeclaim.yaml"));
  EXPECT_TRUE(manifests.ok()) << manifests.status();
  if (!manifests.ok() || manifests->size() != 1) return Manifest{};
  return (*manifests)[0];
}

TEST(NodeClaimTest, LaunchedNodeClaimRoundTripsLosslessly) {
  const Manifest m = Fixture();
  NodeClaim claim;
  ASSERT_TRUE(DecodeJson(m.json, claim).ok());
  const json encoded = EncodeJson(claim);
  EXPECT_EQ(encoded, m.json) << json::diff(m.json, encoded);
}

TEST(NodeClaimTest, SpecAndStatusFieldsAreDecoded) {
  NodeClaim claim;
  ASSERT_TRUE(DecodeJson(Fixture().json, claim).ok());
  EXPECT_EQ(claim.kind, kNodeClaimKind);
  EXPECT_EQ(claim.metadata.generate_name, "default-");
  EXPECT_EQ(claim.metadata.owner_references[0].block_owner_deletion, true);
  EXPECT_EQ(claim.spec.node_class_ref->name, "default");
  EXPECT_EQ(claim.spec.requirements.size(), 4);
  EXPECT_EQ(claim.spec.requirements[3].min_values, 2);
  EXPECT_EQ(claim.spec.resources.requests.at("cpu").MilliValue(), 1710);
  EXPECT_EQ(claim.spec.resources.requests.at("pods").Value(), 9);
  EXPECT_EQ(claim.spec.taints[0].effect, core::TaintEffect::kNoExecute);
  EXPECT_EQ(claim.spec.startup_taints[0].key, "node.cilium.io/agent-not-ready");
  EXPECT_EQ(claim.spec.expire_after, "720h");
  EXPECT_EQ(claim.spec.termination_grace_period, "24h");
  EXPECT_EQ(claim.status.node_name, "ip-192-168-71-87.us-west-2.compute.internal");
  EXPECT_EQ(claim.status.provider_id, "aws:///us-west-2b/i-0123456789abcdef0");
  EXPECT_EQ(claim.status.image_id, "ami-0a1b2c3d4e5f67890");
  EXPECT_EQ(claim.status.capacity.at("memory").Value(), 7577LL << 20);
  EXPECT_EQ(claim.status.allocatable.at("cpu").MilliValue(), 3920);
  EXPECT_EQ(claim.status.last_pod_event_time, absl::FromUnixSeconds(1748772292));
  const core::Condition* initialized = FindCondition(claim.status.conditions, "Initialized");
  ASSERT_NE(initialized, nullptr);
  EXPECT_EQ(initialized->status, core::ConditionStatus::kTrue);
  EXPECT_EQ(initialized->last_transition_time, absl::FromUnixSeconds(1748772052));
  EXPECT_EQ(FindCondition(claim.status.conditions, "Drifted"), nullptr);
}

TEST(NodeClaimTest, ApplyDefaultsSetsExpireAfterOnly) {
  NodeClaim claim;
  ASSERT_TRUE(DecodeJson(json::parse(R"({"spec": {"requirements": []}})"), claim).ok());
  EXPECT_FALSE(claim.spec.expire_after.has_value());
  EXPECT_EQ(EncodeJson(claim), json::parse(R"({"spec": {"requirements": []}})"));
  ApplyDefaults(claim);
  EXPECT_EQ(EncodeJson(claim),
            json::parse(R"({"spec": {"requirements": [], "expireAfter": "720h"}})"));
  claim.spec.expire_after = "Never";
  ApplyDefaults(claim);
  EXPECT_EQ(claim.spec.expire_after, "Never");
}

TEST(NodeClaimTest, RequiredFieldsAreWrittenEvenWhenEmpty) {
  NodeClaim claim;
  claim.spec.node_class_ref = NodeClassReference{};
  EXPECT_EQ(EncodeJson(claim), json::parse(R"({"spec": {"requirements": [],
      "nodeClassRef": {"group": "", "kind": "", "name": ""}}})"));
}

TEST(NodeClaimTest, BadStatusTimeNamesThePath) {
  NodeClaim claim;
  const absl::Status status =
      DecodeJson(json::parse(R"({"status": {"conditions": [{"type": "Ready", "status": "True",
                      "lastTransitionTime": "2025-13-01T00:00:00Z"}]}})"),
                 claim);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(status.message()),
      testing::StartsWith("status.conditions[0].lastTransitionTime: invalid RFC 3339 time"));
}

}  // namespace
}  // namespace dovetail::apis::v1
