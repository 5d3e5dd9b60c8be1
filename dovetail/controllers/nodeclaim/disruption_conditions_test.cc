#include "dovetail/controllers/nodeclaim/disruption_conditions.h"

#include <memory>
#include <string>
#include <vector>

#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/instance_type.h"
#include "dovetail/controllers/launch/node_claim_builder.h"
#include "dovetail/controllers/nodeclaim/conditions.h"
#include "gtest/gtest.h"

namespace dovetail::controllers::nodeclaim {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;
using core::ConditionStatus;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

v1::NodePool Pool() {
  v1::NodePool pool;
  pool.metadata.name = "default";
  pool.spec.template_.metadata.labels = {{"team", "a"}};
  pool.spec.template_.spec.requirements = {{.key = "node.kubernetes.io/instance-type",
                                            .op = core::SelectorOperator::kIn,
                                            .values = {"m5.large", "m5.xlarge"}},
                                           {.key = "topology.kubernetes.io/zone",
                                            .op = core::SelectorOperator::kIn,
                                            .values = {"zone-a", "zone-b"}}};
  pool.spec.template_.spec.node_class_ref =
      v1::NodeClassReference{.group = "karpenter.k8s.aws", .kind = "EC2NodeClass", .name = "x"};
  v1::ApplyDefaults(pool);
  return pool;
}

void SetCondition(v1::NodeClaim& claim, std::string_view type, ConditionStatus status,
                  absl::Time at) {
  claim.status.conditions.push_back({.type = std::string(type),
                                     .status = status,
                                     .reason = std::string(type),
                                     .observed_generation = 1,
                                     .last_transition_time = at});
}

// A launched, initialized claim of Pool(), stamped with its hash, created at kT0.
v1::NodeClaim Claim(const v1::NodePool& pool = Pool()) {
  v1::NodeClaim claim;
  claim.metadata.name = "default-abc";
  claim.metadata.uid = "uid-1";
  claim.metadata.generation = 1;
  claim.metadata.creation_timestamp = kT0;
  claim.metadata.labels = {{"karpenter.sh/nodepool", "default"},
                           {"team", "a"},
                           {"node.kubernetes.io/instance-type", "m5.large"},
                           {"topology.kubernetes.io/zone", "zone-a"},
                           {"karpenter.sh/capacity-type", "on-demand"}};
  claim.metadata.annotations = {
      {"karpenter.sh/nodepool-hash", launch::NodePoolHash(pool)},
      {"karpenter.sh/nodepool-hash-version", std::string(v1::kNodePoolHashVersion)}};
  claim.spec.expire_after = "720h";
  SetCondition(claim, kConditionLaunched, ConditionStatus::kTrue, kT0);
  SetCondition(claim, kConditionRegistered, ConditionStatus::kTrue, kT0);
  SetCondition(claim, kConditionInitialized, ConditionStatus::kTrue, kT0 + absl::Minutes(1));
  SetCondition(claim, kConditionReady, ConditionStatus::kTrue, kT0 + absl::Minutes(1));
  return claim;
}

v1::NodePool WithConsolidateAfter(std::string after) {
  v1::NodePool pool = Pool();
  pool.spec.disruption->consolidate_after = std::move(after);
  return pool;
}

// ---- pod events ---------------------------------------------------------------------------------

TEST(IsPodEventTest, BindTerminalTerminatingCountAndOtherUpdatesDoNot) {
  kube::PodInfo pending;
  kube::PodInfo bound = pending;
  bound.node_name = "node-1";
  EXPECT_FALSE(IsPodEvent(nullptr, pending));
  EXPECT_TRUE(IsPodEvent(nullptr, bound));
  EXPECT_TRUE(IsPodEvent(&pending, bound));
  EXPECT_FALSE(IsPodEvent(&bound, bound));
  kube::PodInfo succeeded = bound;
  succeeded.phase = core::PodPhase::kSucceeded;
  EXPECT_TRUE(IsPodEvent(&bound, succeeded));
  EXPECT_FALSE(IsPodEvent(&succeeded, succeeded));
  kube::PodInfo terminating = bound;
  terminating.meta.deletion = kT0;
  EXPECT_TRUE(IsPodEvent(&bound, terminating));
  EXPECT_FALSE(IsPodEvent(&terminating, terminating));
  kube::PodInfo ready = bound;
  ready.ready = true;
  EXPECT_FALSE(IsPodEvent(&bound, ready));
}

TEST(PodEventDueTest, SkipsWithinTenSeconds) {
  v1::NodeClaim claim = Claim();
  EXPECT_TRUE(PodEventDue(claim, kT0));
  claim.status.last_pod_event_time = kT0;
  EXPECT_FALSE(PodEventDue(claim, kT0 + absl::Seconds(9)));
  EXPECT_TRUE(PodEventDue(claim, kT0 + absl::Seconds(10)));
}

// ---- Consolidatable -----------------------------------------------------------------------------

TEST(ConsolidatableTest, TrueOnceConsolidateAfterPassedSinceInitialization) {
  const v1::NodeClaim claim = Claim();  // initialized at kT0 + 1m
  const v1::NodePool pool = WithConsolidateAfter("30s");
  auto before = EvaluateConsolidatable(claim, pool, kT0 + absl::Seconds(80));
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_FALSE(before->consolidatable);
  EXPECT_EQ(before->requeue_after, absl::Seconds(10));
  auto at = EvaluateConsolidatable(claim, pool, kT0 + absl::Seconds(90));
  ASSERT_TRUE(at.ok());
  EXPECT_TRUE(at->consolidatable);
  EXPECT_EQ(at->requeue_after, std::nullopt);
}

TEST(ConsolidatableTest, LastPodEventRestartsTheClock) {
  v1::NodeClaim claim = Claim();
  claim.status.last_pod_event_time = kT0 + absl::Minutes(10);
  const v1::NodePool pool = WithConsolidateAfter("5m");
  auto verdict = EvaluateConsolidatable(claim, pool, kT0 + absl::Minutes(12));
  ASSERT_TRUE(verdict.ok());
  EXPECT_FALSE(verdict->consolidatable);
  EXPECT_EQ(verdict->requeue_after, absl::Minutes(3));
  verdict = EvaluateConsolidatable(claim, pool, kT0 + absl::Minutes(15));
  ASSERT_TRUE(verdict.ok());
  EXPECT_TRUE(verdict->consolidatable);
}

TEST(ConsolidatableTest, DefaultZeroIsImmediate) {
  auto verdict = EvaluateConsolidatable(Claim(), Pool(), kT0 + absl::Minutes(1));
  ASSERT_TRUE(verdict.ok());
  EXPECT_TRUE(verdict->consolidatable);
}

TEST(ConsolidatableTest, RemovedWhenNeverOrNotInitialized) {
  auto never = EvaluateConsolidatable(Claim(), WithConsolidateAfter("Never"), kT0 + absl::Hours(9));
  ASSERT_TRUE(never.ok());
  EXPECT_FALSE(never->consolidatable);
  EXPECT_EQ(never->requeue_after, std::nullopt);

  v1::NodeClaim claim = Claim();
  claim.status.conditions[2].status = ConditionStatus::kUnknown;
  auto uninitialized = EvaluateConsolidatable(claim, Pool(), kT0 + absl::Hours(9));
  ASSERT_TRUE(uninitialized.ok());
  EXPECT_FALSE(uninitialized->consolidatable);
  EXPECT_EQ(uninitialized->requeue_after, std::nullopt);
}

TEST(ConsolidatableTest, UnparseableConsolidateAfterIsInvalidArgument) {
  auto verdict = EvaluateConsolidatable(Claim(), WithConsolidateAfter("soon"), kT0);
  EXPECT_EQ(verdict.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ApplyConsolidatableTest, SetsTrueThenRemoves) {
  v1::NodeClaim claim = Claim();
  EXPECT_TRUE(ApplyConsolidatable(claim, true, kT0 + absl::Hours(1)));
  const core::Condition* c = v1::FindCondition(claim.status.conditions, kConditionConsolidatable);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, ConditionStatus::kTrue);
  EXPECT_EQ(c->last_transition_time, kT0 + absl::Hours(1));
  EXPECT_FALSE(ApplyConsolidatable(claim, true, kT0 + absl::Hours(2)));
  EXPECT_TRUE(ApplyConsolidatable(claim, false, kT0 + absl::Hours(2)));
  EXPECT_EQ(v1::FindCondition(claim.status.conditions, kConditionConsolidatable), nullptr);
  EXPECT_FALSE(ApplyConsolidatable(claim, false, kT0 + absl::Hours(2)));
}

// ---- static drift and hash versions -------------------------------------------------------------

// The pool's stamp once the NodePool hash controller has stamped it (annotations it already
// carries are kept).
NodePoolHashStamp StampOf(v1::NodePool pool) {
  pool.metadata.annotations.try_emplace("karpenter.sh/nodepool-hash", launch::NodePoolHash(pool));
  pool.metadata.annotations.try_emplace("karpenter.sh/nodepool-hash-version", "v3");
  return HashStampOf(pool);
}

TEST(StaticDriftTest, UnstampedPoolDecidesNothing) {
  v1::NodePool changed = Pool();
  changed.spec.template_.metadata.labels["team"] = "b";
  EXPECT_EQ(HashStampOf(changed).hash, "");
  EXPECT_EQ(StaticDrift(Claim(), HashStampOf(changed)), "");
}

TEST(StaticDriftTest, NotDriftedWhileTheTemplateIsUnchanged) {
  const v1::NodePool pool = Pool();
  EXPECT_EQ(StaticDrift(Claim(pool), StampOf(pool)), "");
}

TEST(StaticDriftTest, TemplateLabelChangeDrifts) {
  const v1::NodeClaim claim = Claim(Pool());
  v1::NodePool changed = Pool();
  changed.spec.template_.metadata.labels["team"] = "b";
  EXPECT_EQ(StaticDrift(claim, StampOf(changed)), kReasonNodePoolDrifted);
}

TEST(StaticDriftTest, BehaviouralFieldsAndRequirementsDoNotDrift) {
  const v1::NodeClaim claim = Claim(Pool());
  v1::NodePool changed = Pool();
  changed.spec.weight = 50;
  changed.spec.disruption->consolidate_after = "1h";
  changed.spec.template_.spec.requirements.pop_back();
  EXPECT_EQ(StaticDrift(claim, StampOf(changed)), "");
}

TEST(StaticDriftTest, NeedsBothAnnotationsAndEqualVersions) {
  v1::NodePool changed = Pool();
  changed.spec.template_.metadata.labels["team"] = "b";
  v1::NodeClaim no_hash = Claim();
  no_hash.metadata.annotations.erase("karpenter.sh/nodepool-hash");
  EXPECT_EQ(StaticDrift(no_hash, StampOf(changed)), "");
  v1::NodeClaim no_version = Claim();
  no_version.metadata.annotations.erase("karpenter.sh/nodepool-hash-version");
  EXPECT_EQ(StaticDrift(no_version, StampOf(changed)), "");
  v1::NodeClaim old_version = Claim();
  old_version.metadata.annotations["karpenter.sh/nodepool-hash-version"] = "v2";
  EXPECT_EQ(StaticDrift(old_version, StampOf(changed)), "");
}

TEST(StaticDriftTest, PoolHashVersionAnnotationIsCompared) {
  v1::NodePool pool = Pool();
  pool.spec.template_.metadata.labels["team"] = "b";
  pool.metadata.annotations["karpenter.sh/nodepool-hash-version"] = "v4";
  EXPECT_EQ(StampOf(pool).version, "v4");
  EXPECT_EQ(StaticDrift(Claim(), StampOf(pool)), "");
}

// ---- requirements drift -------------------------------------------------------------------------

TEST(RequirementsDriftTest, WideningNeverDrifts) {
  v1::NodePool wider = Pool();
  wider.spec.template_.spec.requirements[0].values.push_back("m5.2xlarge");
  wider.spec.template_.spec.requirements.pop_back();  // zone unconstrained
  auto drift = RequirementsDrift(Claim(), wider);
  ASSERT_TRUE(drift.ok()) << drift.status();
  EXPECT_EQ(*drift, "");
}

TEST(RequirementsDriftTest, NarrowingOutTheNodesValueDrifts) {
  v1::NodePool narrower = Pool();
  narrower.spec.template_.spec.requirements[1].values = {"zone-b"};
  auto drift = RequirementsDrift(Claim(), narrower);
  ASSERT_TRUE(drift.ok());
  EXPECT_EQ(*drift, kReasonRequirementsDrifted);
}

TEST(RequirementsDriftTest, NarrowingThatKeepsTheNodesValueDoesNotDrift) {
  v1::NodePool narrower = Pool();
  narrower.spec.template_.spec.requirements[1].values = {"zone-a"};
  auto drift = RequirementsDrift(Claim(), narrower);
  ASSERT_TRUE(drift.ok());
  EXPECT_EQ(*drift, "");
}

TEST(RequirementsDriftTest, RequirementOnAKeyTheNodeLacksDriftsUnlessNegative) {
  v1::NodePool pool = Pool();
  pool.spec.template_.spec.requirements.push_back(
      {.key = "example.com/gpu", .op = core::SelectorOperator::kExists});
  auto drift = RequirementsDrift(Claim(), pool);
  ASSERT_TRUE(drift.ok());
  EXPECT_EQ(*drift, kReasonRequirementsDrifted);
  pool.spec.template_.spec.requirements.back().op = core::SelectorOperator::kDoesNotExist;
  drift = RequirementsDrift(Claim(), pool);
  ASSERT_TRUE(drift.ok());
  EXPECT_EQ(*drift, "");
}

TEST(RequirementsDriftTest, UnparseableRequirementsAreInvalidArgument) {
  v1::NodePool pool = Pool();
  pool.spec.template_.spec.requirements.push_back(
      {.key = "example.com/size", .op = core::SelectorOperator::kGt, .values = {"big"}});
  EXPECT_EQ(RequirementsDrift(Claim(), pool).status().code(), absl::StatusCode::kInvalidArgument);
}

// ---- instance type drift ------------------------------------------------------------------------

cloudprovider::Catalog CatalogOf(std::vector<cloudprovider::Offering> offerings) {
  auto type = std::make_shared<const cloudprovider::InstanceType>(
      "m5.large", scheduling::Requirements(), cloudprovider::Offerings(std::move(offerings)),
      ResourceList{}, cloudprovider::InstanceTypeOverhead{});
  auto catalog = cloudprovider::Catalog::Create({type});
  EXPECT_TRUE(catalog.ok());
  return *catalog;
}

TEST(InstanceTypeDriftTest, FoundWithACompatibleOffering) {
  const auto catalog =
      CatalogOf({cloudprovider::Offering::Make("on-demand", "zone-a", "", 0.1, true)});
  EXPECT_EQ(InstanceTypeDrift(Claim(), catalog), "");
}

TEST(InstanceTypeDriftTest, TypeGoneOrNoCompatibleOfferingDrifts) {
  EXPECT_EQ(InstanceTypeDrift(Claim(), cloudprovider::Catalog()), kReasonInstanceTypeNotFound);
  const auto catalog =
      CatalogOf({cloudprovider::Offering::Make("spot", "zone-a", "", 0.1, true),
                 cloudprovider::Offering::Make("on-demand", "zone-b", "", 0.1, true)});
  EXPECT_EQ(InstanceTypeDrift(Claim(), catalog), kReasonInstanceTypeNotFound);
}

TEST(InstanceTypeDriftTest, ReservedClaimFallsBackToOnDemandOfferings) {
  v1::NodeClaim claim = Claim();
  claim.metadata.labels["karpenter.sh/capacity-type"] = "reserved";
  claim.metadata.labels["karpenter.k8s.aws/capacity-reservation-id"] = "cr-1";
  EXPECT_EQ(
      InstanceTypeDrift(
          claim, CatalogOf({cloudprovider::Offering::Make("on-demand", "zone-a", "", 0.1, true)})),
      "");
  EXPECT_EQ(InstanceTypeDrift(
                claim, CatalogOf({cloudprovider::Offering::Make("spot", "zone-a", "", 0.1, true)})),
            kReasonInstanceTypeNotFound);
}

TEST(InstanceTypeCheckDueTest, OnlyAfterAnHourAndThenEveryThirtyMinutes) {
  const v1::NodeClaim claim = Claim();  // created at kT0
  EXPECT_FALSE(InstanceTypeCheckDue(claim, std::nullopt, kT0 + absl::Minutes(59)));
  EXPECT_TRUE(InstanceTypeCheckDue(claim, std::nullopt, kT0 + absl::Hours(1)));
  const absl::Time found = kT0 + absl::Hours(1);
  EXPECT_FALSE(InstanceTypeCheckDue(claim, found, found + absl::Minutes(29)));
  EXPECT_TRUE(InstanceTypeCheckDue(claim, found, found + absl::Minutes(30)));
}

TEST(ApplyDriftedTest, SetsReasonAndClears) {
  v1::NodeClaim claim = Claim();
  EXPECT_TRUE(ApplyDrifted(claim, kReasonRequirementsDrifted, kT0));
  const core::Condition* c = v1::FindCondition(claim.status.conditions, kConditionDrifted);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, ConditionStatus::kTrue);
  EXPECT_EQ(c->reason, kReasonRequirementsDrifted);
  EXPECT_FALSE(ApplyDrifted(claim, kReasonRequirementsDrifted, kT0 + absl::Hours(1)));
  EXPECT_TRUE(ApplyDrifted(claim, kReasonNodePoolDrifted, kT0 + absl::Hours(1)));
  EXPECT_EQ(v1::FindCondition(claim.status.conditions, kConditionDrifted)->last_transition_time,
            kT0);  // still True: the transition time stays
  EXPECT_TRUE(ApplyDrifted(claim, "", kT0));
  EXPECT_EQ(v1::FindCondition(claim.status.conditions, kConditionDrifted), nullptr);
  // The lifecycle conditions are untouched.
  EXPECT_NE(v1::FindCondition(claim.status.conditions, kConditionReady), nullptr);
}

// ---- expiration ---------------------------------------------------------------------------------

TEST(ExpirationTest, ExpiresAtCreationPlusExpireAfter) {
  v1::NodeClaim claim = Claim();
  claim.spec.expire_after = "1h";
  auto before = EvaluateExpiration(claim, kT0 + absl::Minutes(45));
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_FALSE(before->expired);
  EXPECT_EQ(before->requeue_after, absl::Minutes(15));
  auto at = EvaluateExpiration(claim, kT0 + absl::Hours(1));
  ASSERT_TRUE(at.ok());
  EXPECT_TRUE(at->expired);
}

TEST(ExpirationTest, NeverAndUnsetNeverExpire) {
  v1::NodeClaim claim = Claim();
  claim.spec.expire_after = "Never";
  auto never = EvaluateExpiration(claim, kT0 + absl::Hours(100000));
  ASSERT_TRUE(never.ok());
  EXPECT_FALSE(never->expired);
  EXPECT_EQ(never->requeue_after, std::nullopt);
  claim.spec.expire_after.reset();
  auto unset = EvaluateExpiration(claim, kT0 + absl::Hours(100000));
  ASSERT_TRUE(unset.ok());
  EXPECT_FALSE(unset->expired);
}

TEST(ExpirationTest, UnparseableExpireAfterIsInvalidArgument) {
  v1::NodeClaim claim = Claim();
  claim.spec.expire_after = "a while";
  EXPECT_EQ(EvaluateExpiration(claim, kT0).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dovetail::controllers::nodeclaim
