#include "dovetail/controllers/nodeclaim/lifecycle.h"

#include <algorithm>
#include <memory>
#include <string>

#include "dovetail/apis/v1/labels.h"
#include "dovetail/controllers/nodeclaim/conditions.h"
#include "dovetail/kube/string_pool.h"
#include "gtest/gtest.h"

namespace dovetail::controllers::nodeclaim {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;
using core::ConditionStatus;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

v1::NodeClaim Claim() {
  v1::NodeClaim claim;
  claim.metadata.name = "default-abc";
  claim.metadata.uid = "uid-1";
  claim.metadata.generation = 1;
  claim.metadata.labels = {{"karpenter.sh/nodepool", "default"}, {"team", "a"}};
  claim.metadata.annotations = {{"karpenter.sh/nodepool-hash", "123"}};
  claim.spec.taints = {
      {.key = "dedicated", .value = "db", .effect = core::TaintEffect::kNoSchedule}};
  claim.spec.startup_taints = {
      {.key = "cni/not-ready", .value = "", .effect = core::TaintEffect::kNoExecute}};
  claim.spec.resources.requests = {{"cpu", *Quantity::Parse("1")},
                                   {"example.com/gpu", *Quantity::Parse("1")}};
  return claim;
}

TEST(MergeLaunchedTest, ProviderLabelsAddedAndTheNodeClaimsOwnWin) {
  v1::NodeClaim launched = Claim();
  launched.metadata.labels = {{"team", "provider-value"},
                              {"node.kubernetes.io/instance-type", "m7k.large"}};
  launched.status.provider_id = "kwok://x";
  launched.status.image_id = "ami-1";
  launched.status.capacity = {{"cpu", *Quantity::Parse("2")}};
  launched.status.allocatable = {{"cpu", *Quantity::Parse("1930m")}};
  const v1::NodeClaim out = MergeLaunched(Claim(), launched);
  EXPECT_EQ(out.metadata.labels.at("team"), "a");
  EXPECT_EQ(out.metadata.labels.at("node.kubernetes.io/instance-type"), "m7k.large");
  EXPECT_EQ(out.metadata.labels.at("karpenter.sh/nodepool"), "default");
  EXPECT_EQ(out.status.provider_id, "kwok://x");
  EXPECT_EQ(out.status.image_id, "ami-1");
  EXPECT_EQ(out.status.allocatable.at("cpu").MilliValue(), 1930);
  EXPECT_EQ(out.status.node_name, "");
}

core::Node RegisteringNode() {
  core::Node node;
  node.metadata.name = "node-1";
  node.metadata.labels = {{"kubernetes.io/hostname", "node-1"}, {"team", "old"}};
  node.spec.taints = {
      {.key = std::string(v1::kUnregisteredTaintKey), .effect = core::TaintEffect::kNoExecute},
      {.key = "dedicated", .value = "other", .effect = core::TaintEffect::kNoSchedule}};
  return node;
}

TEST(SyncNodeForRegistrationTest, SyncsTheNodeAndRemovesTheUnregisteredTaint) {
  core::Node node = RegisteringNode();
  ASSERT_TRUE(HasUnregisteredTaint(node));
  EXPECT_TRUE(SyncNodeForRegistration(node, Claim()));
  EXPECT_FALSE(HasUnregisteredTaint(node));
  EXPECT_EQ(node.metadata.labels.at("team"), "a");
  EXPECT_EQ(node.metadata.labels.at("karpenter.sh/nodepool"), "default");
  EXPECT_EQ(node.metadata.labels.at(std::string(v1::kNodeRegisteredLabelKey)), "true");
  EXPECT_EQ(node.metadata.annotations.at("karpenter.sh/nodepool-hash"), "123");
  ASSERT_EQ(node.metadata.finalizers.size(), 1u);
  EXPECT_EQ(node.metadata.finalizers[0], v1::kTerminationFinalizer);
  ASSERT_EQ(node.metadata.owner_references.size(), 1u);
  EXPECT_EQ(node.metadata.owner_references[0].kind, "NodeClaim");
  EXPECT_EQ(node.metadata.owner_references[0].uid, "uid-1");
  EXPECT_EQ(node.metadata.owner_references[0].block_owner_deletion, true);
  // dedicated:NoSchedule was there already (same key and effect: kept as it is); the startup
  // taint is added.
  ASSERT_EQ(node.spec.taints.size(), 2u);
  EXPECT_EQ(node.spec.taints[0].value, "other");
  EXPECT_EQ(node.spec.taints[1].key, "cni/not-ready");
  // Idempotent.
  EXPECT_FALSE(SyncNodeForRegistration(node, Claim()));
}

TEST(SyncNodeForRegistrationTest, DoNotSyncTaintsLabelKeepsTheNodesTaints) {
  core::Node node = RegisteringNode();
  node.metadata.labels[std::string(v1::kNodeDoNotSyncTaintsLabelKey)] = "true";
  SyncNodeForRegistration(node, Claim());
  ASSERT_EQ(node.spec.taints.size(), 1u);
  EXPECT_EQ(node.spec.taints[0].key, "dedicated");
}

class InitializationTest : public ::testing::Test {
 protected:
  kube::Interned Intern(std::string_view s) { return pool_.Intern(s); }
  kube::NodeInfo ReadyNode() {
    kube::NodeInfo node;
    node.meta.name = "node-1";
    node.ready = ConditionStatus::kTrue;
    node.allocatable = {{Intern("cpu"), 1930}, {Intern("example.com/gpu"), 1000}};
    return node;
  }
  kube::StringPool pool_;
};

TEST_F(InitializationTest, InitializedWhenReadyUntaintedAndResourcesRegistered) {
  const kube::NodeInfo node = ReadyNode();
  EXPECT_EQ(CheckInitialization(Claim(), &node).status, ConditionStatus::kTrue);
}

TEST_F(InitializationTest, ReportsWhyNot) {
  EXPECT_EQ(CheckInitialization(Claim(), nullptr).reason, kReasonNodeNotFound);
  kube::NodeInfo node = ReadyNode();
  node.ready = ConditionStatus::kFalse;
  EXPECT_EQ(CheckInitialization(Claim(), &node).reason, kReasonNodeNotReady);

  node = ReadyNode();
  node.taints = {{Intern("cni/not-ready"), "", 2}};
  ConditionVerdict verdict = CheckInitialization(Claim(), &node);
  EXPECT_EQ(verdict.status, ConditionStatus::kFalse);
  EXPECT_EQ(verdict.reason, kReasonStartupTaintsExist);
  // Same key, other effect: not the startup taint.
  node.taints = {{Intern("cni/not-ready"), "", 0}};
  EXPECT_EQ(CheckInitialization(Claim(), &node).status, ConditionStatus::kTrue);

  node.taints = {{Intern("node.kubernetes.io/not-ready"), "", 0}};
  EXPECT_EQ(CheckInitialization(Claim(), &node).reason, kReasonKnownEphemeralTaintsExist);
  node.taints = {{Intern("readiness.k8s.io/network"), "", 1}};
  EXPECT_EQ(CheckInitialization(Claim(), &node).reason, kReasonKnownEphemeralTaintsExist);

  node = ReadyNode();
  node.allocatable = {{Intern("cpu"), 1930}, {Intern("example.com/gpu"), 0}};
  verdict = CheckInitialization(Claim(), &node);
  EXPECT_EQ(verdict.reason, kReasonResourceNotRegistered);
  EXPECT_EQ(verdict.message, "Resource \"example.com/gpu\" was requested but not registered");
}

v1::NodeClaim WithConditions(ConditionStatus launched, ConditionStatus registered) {
  v1::NodeClaim claim = Claim();
  Conditions c(claim.status.conditions, 1, kT0);
  c.Initialize();
  c.Set(kConditionLaunched, launched, "x", "");
  c.Set(kConditionRegistered, registered, "y", "");
  return claim;
}

TEST(LivenessTest, LaunchTimeoutCountsFromTheLaunchedTransition) {
  const LivenessOptions options;
  const v1::NodeClaim claim = WithConditions(ConditionStatus::kUnknown, ConditionStatus::kUnknown);
  LivenessVerdict v = CheckLiveness(claim, kT0 + absl::Minutes(4), options);
  EXPECT_FALSE(v.delete_reason.has_value());
  EXPECT_EQ(v.requeue_after, absl::Minutes(1));
  v = CheckLiveness(claim, kT0 + absl::Minutes(5), options);
  EXPECT_EQ(v.delete_reason, "launch_timeout");
}

TEST(LivenessTest, RegistrationTimeoutCountsFromTheRegisteredTransition) {
  const LivenessOptions options{.registration_ttl = absl::Seconds(30)};
  const v1::NodeClaim claim = WithConditions(ConditionStatus::kTrue, ConditionStatus::kUnknown);
  EXPECT_EQ(CheckLiveness(claim, kT0 + absl::Seconds(10), options).requeue_after,
            absl::Seconds(20));
  EXPECT_EQ(CheckLiveness(claim, kT0 + absl::Seconds(30), options).delete_reason,
            "registration_timeout");
  const v1::NodeClaim registered = WithConditions(ConditionStatus::kTrue, ConditionStatus::kTrue);
  const LivenessVerdict v = CheckLiveness(registered, kT0 + absl::Hours(1), options);
  EXPECT_FALSE(v.delete_reason.has_value());
  EXPECT_FALSE(v.requeue_after.has_value());
}

TEST(RegistrationOutcomeTest, OnlyTheOwnerReferenceToTheLabelledPoolCounts) {
  v1::NodeClaim claim = Claim();
  claim.metadata.labels[std::string(v1::kNodePoolLabelKey)] = "default";
  EXPECT_EQ(OwningNodePoolUid(claim), "");  // no owner reference
  claim.metadata.owner_references = {
      {.api_version = "karpenter.sh/v1", .kind = "NodePool", .name = "other", .uid = "u-other"},
      {.api_version = "karpenter.sh/v1", .kind = "NodePool", .name = "default", .uid = "u-1"}};
  EXPECT_EQ(OwningNodePoolUid(claim), "u-1");
  claim.metadata.labels.erase(std::string(v1::kNodePoolLabelKey));
  EXPECT_EQ(OwningNodePoolUid(claim), "");  // a standalone NodeClaim
}

TEST(RegistrationOutcomeTest, ALaunchedClaimFailedToRegisterOtherwiseItsLaunchFailed) {
  EXPECT_EQ(
      LivenessFailure(WithConditions(ConditionStatus::kTrue, ConditionStatus::kUnknown)).reason,
      "RegistrationFailed");
  v1::NodeClaim never = Claim();
  Conditions c(never.status.conditions, 1, kT0);
  c.Initialize();
  c.SetUnknown(kConditionLaunched, kReasonLaunchFailed, "nodes \"x\" is forbidden");
  const Failure failure = LivenessFailure(never);
  EXPECT_EQ(failure.reason, kReasonLaunchFailed);
  EXPECT_EQ(failure.message, "nodes \"x\" is forbidden");
}

}  // namespace
}  // namespace dovetail::controllers::nodeclaim
