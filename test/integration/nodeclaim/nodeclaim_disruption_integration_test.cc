// The NodeClaim pod-event, disruption-condition and expiration controllers against a real
// kube-apiserver: a NodePool and NodeClaims (CRDs from charts/) whose status the test writes as
// the lifecycle controller would (Launched, Registered, Initialized), the real informers, cluster
// state and event recorder, the kwok CloudProvider, and a fake clock the test moves. Checks that
// Consolidatable becomes True once consolidateAfter has passed, that a template label change
// drifts a NodeClaim (NodePoolDrifted), that narrowing the pool's requirements drifts only the
// NodeClaim whose label was narrowed out (RequirementsDrifted), that pods bound to the NodeClaim's
// node stamp lastPodEventTime at most every 10 s, and that an expired NodeClaim is deleted and
// counted.
//
// Where the work queue would wait on the real clock for a requeue, the test advances the fake
// clock and runs the reconcile itself (Reconcile is public for that); pool changes travel the
// informer path. Other integration tests share the API server, so every assertion is about this
// test's objects.

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/hash/drift_hash.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/common/clock.h"
#include "dovetail/controllers/launch/node_claim_builder.h"
#include "dovetail/controllers/nodeclaim/conditions.h"
#include "dovetail/controllers/nodeclaim/disruption_conditions_controller.h"
#include "dovetail/controllers/nodeclaim/expiration_controller.h"
#include "dovetail/controllers/nodeclaim/pod_events_controller.h"
#include "dovetail/controllers/nodepool/hash_controller.h"
#include "dovetail/controllers/nodepool/status_controller.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/kube/typed_client.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/cluster_informers.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/kube/crds.h"
#include "test/integration/kube/kwok_controller_env.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::controllers::nodeclaim {
namespace {

using kube::testing::UniqueName;
using kube::testing::WaitFor;
namespace core = apis::core;
namespace v1 = apis::v1;

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

const nlohmann::json kNodeClassRef = {
    {"group", "karpenter.kwok.sh"}, {"kind", "KWOKNodeClass"}, {"name", "default"}};

nlohmann::json NodePoolJson(const std::string& name) {
  return {
      {"apiVersion", "karpenter.sh/v1"},
      {"kind", "NodePool"},
      {"metadata", {{"name", name}}},
      {"spec",
       {{"template",
         {{"metadata", {{"labels", {{"team", "a"}}}}},
          {"spec",
           {{"requirements",
             {{{"key", "example.com/tier"}, {"operator", "In"}, {"values", {"gold", "silver"}}}}},
            {"nodeClassRef", kNodeClassRef}}}}},
        {"disruption", {{"consolidateAfter", "30s"}}}}}};
}

class NodeClaimDisruptionIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rest_ = kube::testing::NewRestClient(kube::testing::KubeconfigFromEnv());
    ASSERT_NE(rest_, nullptr);
    client_ = std::make_unique<kube::Client>(*rest_);
    kube::testing::InstallCrds(*client_, DOVETAIL_SOURCE_DIR, "dovetail-nodeclaim-test");
    clock_.Set(absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now())));

    ASSERT_NO_FATAL_FAILURE(env_.Init(*client_, cluster_, clock_, &metrics_));

    pool_ = UniqueName("nc-it");
    auto created = client_->Create(kube::resources::kNodePools, "", NodePoolJson(pool_).dump());
    ASSERT_TRUE(created.ok()) << created.status();

    hash_ = std::make_unique<nodepool::HashController>(*env_.deps);
    status_ = std::make_unique<nodepool::StatusController>(
        *env_.deps, nodepool::StatusOptions{.period = absl::Seconds(1)});
    conditions_ = std::make_unique<DisruptionConditionsController>(*env_.deps);
    expiration_ = std::make_unique<ExpirationController>(*env_.deps);
    pod_events_ = std::make_unique<PodEventsController>(*env_.deps);
    ASSERT_NO_FATAL_FAILURE(env_.StartInformers());
    hash_->Start();
    status_->Start();
    conditions_->Start();
    expiration_->Start();
    pod_events_->Start();
    ASSERT_TRUE(conditions_->node_pools().WaitForSync(absl::Now() + absl::Seconds(60)));
    // The NodePool hash controller stamps the pool (static drift compares against the stamp).
    ASSERT_TRUE(WaitFor([&] {
      return GetPool().metadata.annotations.contains(v1::kNodePoolHashVersionAnnotationKey);
    }));
  }

  void TearDown() override {
    if (hash_ != nullptr) hash_->Stop();
    if (status_ != nullptr) status_->Stop();
    if (conditions_ != nullptr) conditions_->Stop();
    if (expiration_ != nullptr) expiration_->Stop();
    if (pod_events_ != nullptr) pod_events_->Stop();
    env_.StopInformers();
    hash_.reset();
    status_.reset();
    conditions_.reset();
    expiration_.reset();
    pod_events_.reset();
    if (client_ == nullptr) return;
    // Grace period 0: there is no kubelet to confirm the pods' termination.
    for (const std::string& name : pods_) {
      (void)client_->Delete(kube::resources::kPods, ns_, name, {.grace_period_seconds = 0});
    }
    if (!ns_.empty()) (void)client_->Delete(kube::resources::kNamespaces, "", ns_);
    for (const std::string& name : claims_) {
      (void)client_->Delete(kube::resources::kNodeClaims, "", name);
    }
    (void)client_->Delete(kube::resources::kNodePools, "", pool_);
    for (const std::string& name : extra_pools_) {
      (void)client_->Delete(kube::resources::kNodePools, "", name);
    }
  }

  v1::NodePool GetPool() {
    kube::TypedClient<v1::NodePool> pools(*client_, kube::resources::kNodePools);
    auto pool = pools.Get("", pool_);
    EXPECT_TRUE(pool.ok()) << pool.status();
    v1::NodePool out = pool.ok() ? *pool : v1::NodePool{};
    v1::ApplyDefaults(out);
    return out;
  }

  void PatchPool(const nlohmann::json& patch) {
    auto patched = client_->Patch(kube::resources::kNodePools, "", pool_, kube::PatchType::kMerge,
                                  patch.dump());
    ASSERT_TRUE(patched.ok()) << patched.status();
  }

  // A NodeClaim of the pool stamped with the pool's current hash, launched, registered and
  // initialized at the fake clock's now.
  std::string CreateClaim(const std::string& tier, const std::string& expire_after = "720h") {
    return CreateClaimOf(pool_, launch::NodePoolHash(GetPool()), "v3", tier, expire_after);
  }

  // A NodeClaim of `pool` stamped with `hash` under `version`, launched, registered and
  // initialized at the fake clock's now.
  std::string CreateClaimOf(const std::string& pool, const std::string& hash,
                            const std::string& version, const std::string& tier,
                            const std::string& expire_after = "720h") {
    const std::string name = UniqueName(pool);
    const nlohmann::json claim = {
        {"apiVersion", "karpenter.sh/v1"},
        {"kind", "NodeClaim"},
        {"metadata",
         {{"name", name},
          {"labels", {{"karpenter.sh/nodepool", pool}, {"team", "a"}, {"example.com/tier", tier}}},
          {"annotations",
           {{"karpenter.sh/nodepool-hash", hash},
            {"karpenter.sh/nodepool-hash-version", version}}}}},
        {"spec",
         {{"requirements", {{{"key", "example.com/tier"}, {"operator", "In"}, {"values", {tier}}}}},
          {"nodeClassRef", kNodeClassRef},
          {"expireAfter", expire_after}}}};
    auto created = client_->Create(kube::resources::kNodeClaims, "", claim.dump());
    EXPECT_TRUE(created.ok()) << created.status();
    claims_.push_back(name);
    nlohmann::json conditions = nlohmann::json::array();
    for (std::string_view type :
         {kConditionLaunched, kConditionRegistered, kConditionInitialized, kConditionReady}) {
      conditions.push_back({{"type", std::string(type)},
                            {"status", "True"},
                            {"reason", std::string(type)},
                            {"message", ""},
                            {"observedGeneration", 1},
                            {"lastTransitionTime", Rfc3339(clock_.Now())}});
    }
    const nlohmann::json status = {
        {"status",
         {{"providerID", "kwok://" + name}, {"nodeName", name}, {"conditions", conditions}}}};
    auto patched = client_->Patch(kube::resources::kNodeClaims, "", name, kube::PatchType::kMerge,
                                  status.dump(), {}, "status");
    EXPECT_TRUE(patched.ok()) << patched.status();
    return name;
  }

  std::optional<v1::NodeClaim> GetClaim(const std::string& name) {
    kube::TypedClient<v1::NodeClaim> claims(*client_, kube::resources::kNodeClaims);
    auto claim = claims.Get("", name);
    if (!claim.ok()) return std::nullopt;
    return *claim;
  }

  // The condition of `type` on the server, or nullopt.
  std::optional<core::Condition> Condition(const std::string& name, std::string_view type) {
    std::optional<v1::NodeClaim> claim = GetClaim(name);
    if (!claim.has_value()) return std::nullopt;
    const core::Condition* c = v1::FindCondition(claim->status.conditions, type);
    if (c == nullptr) return std::nullopt;
    return *c;
  }

  bool DriftedWith(const std::string& name, std::string_view reason) {
    std::optional<core::Condition> c = Condition(name, kConditionDrifted);
    return c.has_value() && c->status == core::ConditionStatus::kTrue && c->reason == reason;
  }

  FakeClock clock_;
  state::Cluster cluster_{clock_};
  metrics::Registry metrics_;
  std::unique_ptr<kube::RestClient> rest_;
  std::unique_ptr<kube::Client> client_;
  kube::testing::KwokControllerEnv env_;
  std::unique_ptr<nodepool::HashController> hash_;
  std::unique_ptr<nodepool::StatusController> status_;
  std::unique_ptr<DisruptionConditionsController> conditions_;
  std::unique_ptr<ExpirationController> expiration_;
  std::unique_ptr<PodEventsController> pod_events_;
  std::string pool_;
  std::vector<std::string> extra_pools_;
  std::vector<std::string> claims_;
  std::string ns_;
  std::vector<std::string> pods_;
};

TEST_F(NodeClaimDisruptionIntegrationTest, ConsolidatableBecomesTrueAfterConsolidateAfter) {
  const std::string claim = CreateClaim("gold");
  // Not yet: the reconcile asks to come back when consolidateAfter (30 s) has passed.
  absl::StatusOr<kube::ReconcileResult> result;
  ASSERT_TRUE(WaitFor([&] {
    result = conditions_->Reconcile(claim);
    return result.ok();
  })) << result.status();
  ASSERT_TRUE(result->requeue_after.has_value());
  EXPECT_LE(*result->requeue_after, absl::Seconds(30));
  EXPECT_GT(*result->requeue_after, absl::Seconds(25));
  EXPECT_FALSE(Condition(claim, kConditionConsolidatable).has_value());

  clock_.Advance(absl::Seconds(30));
  ASSERT_TRUE(WaitFor([&] {
    (void)conditions_->Reconcile(claim);
    std::optional<core::Condition> c = Condition(claim, kConditionConsolidatable);
    return c.has_value() && c->status == core::ConditionStatus::kTrue;
  }));
  // Nothing drifted meanwhile.
  EXPECT_FALSE(Condition(claim, kConditionDrifted).has_value());
}

TEST_F(NodeClaimDisruptionIntegrationTest, TemplateLabelChangeDriftsTheNodeClaim) {
  const std::string claim = CreateClaim("gold");
  ASSERT_TRUE(WaitFor([&] { return conditions_->Reconcile(claim).ok(); }));
  EXPECT_FALSE(Condition(claim, kConditionDrifted).has_value());

  PatchPool({{"spec", {{"template", {{"metadata", {{"labels", {{"team", "b"}}}}}}}}}});
  // The NodePool's update reaches the controller through its informer.
  ASSERT_TRUE(WaitFor([&] { return DriftedWith(claim, kReasonNodePoolDrifted); }))
      << "Drifted: "
      << (Condition(claim, kConditionDrifted).has_value()
              ? Condition(claim, kConditionDrifted)->reason
              : "absent");

  // Changing it back undoes the drift.
  PatchPool({{"spec", {{"template", {{"metadata", {{"labels", {{"team", "a"}}}}}}}}}});
  ASSERT_TRUE(WaitFor([&] { return !Condition(claim, kConditionDrifted).has_value(); }));
}

TEST_F(NodeClaimDisruptionIntegrationTest, PoolCarriesUpstreamsHashOfWhatTheServerStores) {
  absl::StatusOr<std::string> raw = client_->Get(kube::resources::kNodePools, "", pool_);
  ASSERT_TRUE(raw.ok()) << raw.status();
  const nlohmann::json stored = nlohmann::json::parse(*raw);
  absl::StatusOr<std::string> want = apis::hash::NodePoolHash(stored);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(WaitFor([&] {
    const core::StringMap& a = GetPool().metadata.annotations;
    return a.contains("karpenter.sh/nodepool-hash") &&
           a.at("karpenter.sh/nodepool-hash") == *want &&
           a.at("karpenter.sh/nodepool-hash-version") == "v3";
  }));
  // A template change is stamped too (and a present but empty map hashes as upstream's).
  PatchPool(
      {{"spec", {{"template", {{"metadata", {{"annotations", nlohmann::json::object()}}}}}}}});
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<std::string> now = client_->Get(kube::resources::kNodePools, "", pool_);
    if (!now.ok()) return false;
    const nlohmann::json pool = nlohmann::json::parse(*now);
    absl::StatusOr<std::string> hash = apis::hash::NodePoolHash(pool);
    return hash.ok() && *hash != *want &&
           pool["metadata"]["annotations"].value("karpenter.sh/nodepool-hash", "") == *hash;
  }));
}

TEST_F(NodeClaimDisruptionIntegrationTest, NodePoolStatusAsUpstreamWritesIt) {
  const std::string a = CreateClaim("gold");
  const std::string b = CreateClaim("silver");
  // Usage and the node count from the cluster state; Ready over ValidationSucceeded and
  // NodeClassReady (kwok has no node class objects); registration seen after the reset.
  auto status_is = [&](const v1::NodePool& pool) {
    const v1::NodePoolStatus& s = pool.status;
    auto is_true = [&](std::string_view type) {
      const core::Condition* c = v1::FindCondition(s.conditions, type);
      return c != nullptr && c->status == core::ConditionStatus::kTrue;
    };
    return s.nodes == 2 && s.resources.contains("nodes") && s.resources.at("nodes").Value() == 2 &&
           s.resources.contains("cpu") && s.resources.contains("ephemeral-storage") &&
           is_true("ValidationSucceeded") && is_true("NodeClassReady") && is_true("Ready") &&
           is_true("NodeRegistrationHealthy");
  };
  ASSERT_TRUE(WaitFor([&] { return status_is(GetPool()); }))
      << core::EncodeJson(GetPool().status).dump();
  // kubectl's default columns (the CRD's printer columns): NAME NODECLASS NODES READY AGE.
  const std::string command = absl::StrCat(std::getenv("DOVETAIL_K8S_BIN"),
                                           "/kubectl get nodepool ", pool_, " --no-headers 2>&1");
  std::string out;
  ASSERT_TRUE(WaitFor([&] {
    out.clear();
    if (FILE* pipe = popen(command.c_str(), "r")) {
      char buf[256];
      while (fgets(buf, sizeof(buf), pipe) != nullptr) out += buf;
      pclose(pipe);
    }
    const std::vector<std::string> columns = absl::StrSplit(out, ' ', absl::SkipEmpty());
    return columns.size() >= 4 && columns[1] == "default" && columns[2] == "2" &&
           columns[3] == "True";
  })) << command
      << ": " << out;
  // A deleted NodeClaim leaves the count.
  ASSERT_TRUE(client_->Delete(kube::resources::kNodeClaims, "", b).ok());
  ASSERT_TRUE(WaitFor([&] { return GetPool().status.nodes == 1; }));
  (void)a;
}

TEST_F(NodeClaimDisruptionIntegrationTest, EarlierStampsAreRestampedNotDrifted) {
  // NodeClaims stamped before the pool carried upstream's stamps: by Dovetail before it computed
  // upstream's hash (its own hash under v3, pool never stamped), and by an older hash version
  // (pool and claims at v2). Each is re-stamped with the pool's hash, and none drifts.
  const std::string legacy = UniqueName("nc-legacy");
  const std::string older = UniqueName("nc-v2");
  const std::string own = CreateClaimOf(legacy, "1234567890", "v3", "gold");
  const std::string v2 = CreateClaimOf(older, "42", "v2", "gold");
  ASSERT_TRUE(WaitFor([&] {
    return env_.informers->node_claims().store().Get(own) != nullptr &&
           env_.informers->node_claims().store().Get(v2) != nullptr;
  }));
  nlohmann::json legacy_pool = NodePoolJson(legacy);
  nlohmann::json older_pool = NodePoolJson(older);
  older_pool["metadata"]["annotations"] = {{"karpenter.sh/nodepool-hash", "42"},
                                           {"karpenter.sh/nodepool-hash-version", "v2"}};
  for (const nlohmann::json& pool : {legacy_pool, older_pool}) {
    extra_pools_.push_back(pool["metadata"]["name"]);
    auto created = client_->Create(kube::resources::kNodePools, "", pool.dump());
    ASSERT_TRUE(created.ok()) << created.status();
  }
  auto stamped_as_pool = [&](const std::string& claim, const std::string& pool) {
    absl::StatusOr<std::string> raw = client_->Get(kube::resources::kNodePools, "", pool);
    std::optional<v1::NodeClaim> got = GetClaim(claim);
    if (!raw.ok() || !got.has_value()) return false;
    const nlohmann::json annotations = nlohmann::json::parse(*raw)["metadata"]["annotations"];
    if (!annotations.is_object() || !annotations.contains("karpenter.sh/nodepool-hash")) {
      return false;
    }
    const core::StringMap& a = got->metadata.annotations;
    return annotations["karpenter.sh/nodepool-hash-version"] == "v3" &&
           a.at("karpenter.sh/nodepool-hash") == annotations["karpenter.sh/nodepool-hash"] &&
           a.at("karpenter.sh/nodepool-hash-version") == "v3";
  };
  ASSERT_TRUE(WaitFor([&] { return stamped_as_pool(own, legacy); }));
  ASSERT_TRUE(WaitFor([&] { return stamped_as_pool(v2, older); }));
  for (const std::string& claim : {own, v2}) {
    ASSERT_TRUE(WaitFor([&] { return conditions_->Reconcile(claim).ok(); }));
    EXPECT_FALSE(Condition(claim, kConditionDrifted).has_value()) << claim;
  }
}

TEST_F(NodeClaimDisruptionIntegrationTest, NarrowedRequirementsDriftOnlyTheNodeClaimOutside) {
  const std::string gold = CreateClaim("gold");
  const std::string silver = CreateClaim("silver");
  PatchPool({{"spec",
              {{"template",
                {{"spec",
                  {{"requirements",
                    {{{"key", "example.com/tier"},
                      {"operator", "In"},
                      {"values", {"gold", "bronze"}}}}}}}}}}}});
  ASSERT_TRUE(WaitFor([&] { return DriftedWith(silver, kReasonRequirementsDrifted); }));
  ASSERT_TRUE(WaitFor([&] { return conditions_->Reconcile(gold).ok(); }));
  EXPECT_FALSE(Condition(gold, kConditionDrifted).has_value());
}

TEST_F(NodeClaimDisruptionIntegrationTest, PodEventsStampLastPodEventTimeAtMostEveryTenSeconds) {
  ns_ = UniqueName("nc-it");
  kube::testing::CreateNamespace(*client_, ns_);
  // The NodeClaim's status.nodeName stands for its Node (there is no kubelet here).
  const std::string claim = CreateClaim("gold");
  ASSERT_TRUE(WaitFor([&] {
    std::optional<state::StateNode> node = cluster_.GetByNodeName(claim);
    return node.has_value() && node->node_claim != nullptr;
  }));
  auto last_pod_event = [&]() -> std::optional<absl::Time> {
    std::optional<v1::NodeClaim> got = GetClaim(claim);
    return got.has_value() ? got->status.last_pod_event_time : std::nullopt;
  };
  EXPECT_EQ(last_pod_event(), std::nullopt);

  // A pod created bound to the node.
  const absl::Time first = clock_.Now();
  pods_.push_back("p1");
  ASSERT_TRUE(
      client_->Create(kube::resources::kPods, ns_, kube::testing::PodJson(ns_, "p1", claim).dump())
          .ok());
  ASSERT_TRUE(WaitFor([&] { return last_pod_event() == first; }));

  // Within 10 s of the last stamp a pod event changes nothing.
  clock_.Advance(absl::Seconds(5));
  ASSERT_TRUE(pod_events_->Reconcile(claim).ok());
  EXPECT_EQ(last_pod_event(), first);

  // After that, the pod's deletion stamps again.
  clock_.Advance(absl::Seconds(5));
  ASSERT_TRUE(client_->Delete(kube::resources::kPods, ns_, "p1", {.grace_period_seconds = 0}).ok());
  ASSERT_TRUE(WaitFor([&] { return last_pod_event() == first + absl::Seconds(10); }));
}

TEST_F(NodeClaimDisruptionIntegrationTest, ExpiredNodeClaimIsDeleted) {
  const std::string claim = CreateClaim("gold", "2h");
  absl::StatusOr<kube::ReconcileResult> result;
  ASSERT_TRUE(WaitFor([&] {
    result = expiration_->Reconcile(claim);
    return result.ok();
  })) << result.status();
  ASSERT_TRUE(result->requeue_after.has_value());
  EXPECT_GT(*result->requeue_after, absl::Minutes(110));
  std::optional<v1::NodeClaim> created = GetClaim(claim);
  ASSERT_TRUE(created.has_value() && created->metadata.creation_timestamp.has_value());

  // Exactly expireAfter past the creation timestamp: the fake clock was set when the fixture
  // started, which may be a second or more before the API server stamped the NodeClaim.
  clock_.Set(*created->metadata.creation_timestamp + absl::Hours(2));
  ASSERT_TRUE(WaitFor([&] {
    (void)expiration_->Reconcile(claim);
    return !GetClaim(claim).has_value();
  }));
  // The controller's own worker may be the one that deleted it, counting just after the delete.
  auto& disrupted = metrics_.NewCounter("karpenter_nodeclaims_disrupted_total", "",
                                        {"reason", "nodepool", "capacity_type"});
  EXPECT_TRUE(WaitFor([&] { return disrupted.Value({"expired", pool_, ""}) >= 1; }));
  EXPECT_EQ(disrupted.Value({"expired", pool_, ""}), 1);
}

}  // namespace
}  // namespace dovetail::controllers::nodeclaim
