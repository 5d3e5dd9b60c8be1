#include "dovetail/controllers/launch/node_claim_builder.h"

#include <memory>
#include <string>
#include <vector>

#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/hash/drift_hash.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "dovetail/scenario/pool_template.h"
#include "dovetail/solver/solver.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::launch {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;

v1::NodePool Pool() {
  const nlohmann::json json = {
      {"apiVersion", "karpenter.sh/v1"},
      {"kind", "NodePool"},
      {"metadata", {{"name", "general"}, {"uid", "pool-uid"}}},
      {"spec",
       {{"template",
         {{"metadata",
           {{"labels", {{"team", "infra"}}}, {"annotations", {{"example.com/owner", "me"}}}}},
          {"spec",
           {{"requirements",
             {{{"key", "karpenter.sh/capacity-type"},
               {"operator", "In"},
               {"values", {"on-demand", "spot"}}},
              {{"key", "kubernetes.io/arch"}, {"operator", "In"}, {"values", {"amd64"}}},
              {{"key", "example.com/tier"}, {"operator", "Exists"}}}},
            {"taints", {{{"key", "dedicated"}, {"value", "infra"}, {"effect", "NoSchedule"}}}},
            {"startupTaints", {{{"key", "example.com/agent"}, {"effect", "NoExecute"}}}},
            {"expireAfter", "24h"},
            {"terminationGracePeriod", "1h"},
            {"nodeClassRef",
             {{"group", "karpenter.kwok.sh"}, {"kind", "KWOKNodeClass"}, {"name", "default"}}}}}}},
        {"limits", {{"cpu", "100"}}}}}};
  auto pool = core::DecodeAs<v1::NodePool>(json);
  EXPECT_TRUE(pool.ok()) << pool.status();
  return pool.ok() ? *pool : v1::NodePool{};
}

std::unique_ptr<core::Pod> TolerantPod(const std::string& name, const std::string& cpu) {
  const nlohmann::json json = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", "uid-" + name}}},
      {"spec",
       {{"nodeSelector", {{"example.com/tier", "gold"}}},
        {"tolerations", {{{"key", "dedicated"}, {"operator", "Exists"}}}},
        {"containers",
         {{{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}, {"memory", "1Gi"}}}}}}}}}}};
  auto pod = core::DecodeAs<core::Pod>(json);
  EXPECT_TRUE(pod.ok()) << pod.status();
  return std::make_unique<core::Pod>(pod.ok() ? *pod : core::Pod{});
}

const core::NodeSelectorRequirement* FindRequirement(const v1::NodeClaim& claim,
                                                     std::string_view key) {
  for (const auto& r : claim.spec.requirements) {
    if (r.key == key) return &r;
  }
  return nullptr;
}

class NodeClaimBuilderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto catalog = cloudprovider::kwok::SyntheticCatalog();
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    catalog_ = std::move(*catalog);
  }

  solver::Plan Solve(const v1::NodePool& pool, const std::vector<const core::Pod*>& pods) {
    auto t = scenario::BuildPoolTemplate(pool, catalog_.instance_types(), std::nullopt);
    EXPECT_TRUE(t.ok()) << t.status();
    solver::Input input;
    input.pools.push_back(std::move(*t));
    input.pods = pods;
    input.options.lower_bound = false;
    auto plan = solver::Solve(input);
    EXPECT_TRUE(plan.ok()) << plan.status();
    return plan.ok() ? *plan : solver::Plan{};
  }

  cloudprovider::Catalog catalog_;
};

TEST_F(NodeClaimBuilderTest, NodeClaimCarriesTheTemplateThePlanAndTheOwner) {
  const v1::NodePool pool = Pool();
  auto a = TolerantPod("a", "2500m");
  const solver::Plan plan = Solve(pool, {a.get()});
  ASSERT_TRUE(plan.unschedulable.empty()) << plan.unschedulable.front().reason;
  ASSERT_EQ(plan.node_claims.size(), 1u);
  const solver::NewNodeClaim& planned = plan.node_claims.front();
  const v1::NodeClaim claim = BuildNodeClaim(pool, planned);

  EXPECT_EQ(claim.metadata.generate_name, "general-");
  EXPECT_TRUE(claim.metadata.name.empty());
  ASSERT_EQ(claim.metadata.owner_references.size(), 1u);
  const core::OwnerReference& owner = claim.metadata.owner_references.front();
  EXPECT_EQ(owner.api_version, "karpenter.sh/v1");
  EXPECT_EQ(owner.kind, "NodePool");
  EXPECT_EQ(owner.name, "general");
  EXPECT_EQ(owner.uid, "pool-uid");
  EXPECT_EQ(owner.block_owner_deletion, true);

  // Labels: template, nodepool, node class, and the custom key resolved from the pods.
  EXPECT_EQ(claim.metadata.labels.at("team"), "infra");
  EXPECT_EQ(claim.metadata.labels.at("karpenter.sh/nodepool"), "general");
  EXPECT_EQ(claim.metadata.labels.at("karpenter.kwok.sh/kwoknodeclass"), "default");
  EXPECT_EQ(claim.metadata.labels.at("example.com/tier"), "gold");
  EXPECT_FALSE(claim.metadata.labels.contains("karpenter.sh/registered"));
  EXPECT_FALSE(claim.metadata.labels.contains("kubernetes.io/hostname"));

  EXPECT_EQ(claim.metadata.annotations.at("example.com/owner"), "me");
  EXPECT_EQ(claim.metadata.annotations.at("karpenter.sh/nodepool-hash"), NodePoolHash(pool));
  EXPECT_EQ(claim.metadata.annotations.at("karpenter.sh/nodepool-hash-version"), "v3");
  EXPECT_FALSE(claim.metadata.annotations.contains("karpenter.sh/nodeclaim-min-values-relaxed"));

  // Requirements: the instance types in price order, the capacity types, pool and pod keys;
  // nothing internal.
  const auto* types = FindRequirement(claim, v1::kLabelInstanceType);
  ASSERT_NE(types, nullptr);
  EXPECT_EQ(types->op, core::SelectorOperator::kIn);
  ASSERT_EQ(types->values.size(), planned.instance_types.size());
  for (size_t i = 0; i < types->values.size(); ++i) {
    EXPECT_EQ(types->values[i], planned.instance_types[i]->name()) << i;
  }
  const auto* cts = FindRequirement(claim, v1::kCapacityTypeLabelKey);
  ASSERT_NE(cts, nullptr);
  EXPECT_FALSE(cts->values.empty());
  for (const std::string& ct : cts->values) EXPECT_TRUE(ct == "on-demand" || ct == "spot") << ct;
  const auto* arch = FindRequirement(claim, v1::kLabelArch);
  ASSERT_NE(arch, nullptr);
  EXPECT_EQ(arch->values, std::vector<std::string>{"amd64"});
  const auto* tier = FindRequirement(claim, "example.com/tier");
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->values, std::vector<std::string>{"gold"});
  const auto* nodepool = FindRequirement(claim, v1::kNodePoolLabelKey);
  ASSERT_NE(nodepool, nullptr);
  EXPECT_EQ(nodepool->values, std::vector<std::string>{"general"});
  EXPECT_EQ(FindRequirement(claim, v1::kNodeRegisteredLabelKey), nullptr);
  EXPECT_EQ(FindRequirement(claim, v1::kNodeInitializedLabelKey), nullptr);
  EXPECT_EQ(FindRequirement(claim, v1::kLabelHostname), nullptr);

  // Every listed type fits the pod.
  for (const auto& type : planned.instance_types) {
    EXPECT_GE(type->Allocatable().at("cpu").MilliValue(), 2500) << type->name();
  }
  EXPECT_EQ(claim.spec.resources.requests.at("cpu").MilliValue(), 2500);
  EXPECT_EQ(claim.spec.resources.requests.at("pods").MilliValue(), 1000);

  ASSERT_EQ(claim.spec.taints.size(), 1u);
  EXPECT_EQ(claim.spec.taints[0].key, "dedicated");
  ASSERT_EQ(claim.spec.startup_taints.size(), 1u);
  EXPECT_EQ(claim.spec.startup_taints[0].key, "example.com/agent");
  ASSERT_TRUE(claim.spec.node_class_ref.has_value());
  EXPECT_EQ(claim.spec.node_class_ref->kind, "KWOKNodeClass");
  EXPECT_EQ(claim.spec.expire_after, "24h");
  EXPECT_EQ(claim.spec.termination_grace_period, "1h");

  // It encodes as a NodeClaim the API server accepts (the CRD shape).
  const nlohmann::json json = core::EncodeJson(claim);
  EXPECT_EQ(json["metadata"]["generateName"], "general-");
  EXPECT_EQ(json["spec"]["nodeClassRef"]["group"], "karpenter.kwok.sh");
}

TEST_F(NodeClaimBuilderTest, BestEffortMinValuesAnnotatesTheClaim) {
  const v1::NodePool pool = Pool();
  auto a = TolerantPod("a", "1");
  const solver::Plan plan = Solve(pool, {a.get()});
  ASSERT_EQ(plan.node_claims.size(), 1u);
  const v1::NodeClaim claim =
      BuildNodeClaim(pool, plan.node_claims.front(), {.min_values_strict = false});
  EXPECT_EQ(claim.metadata.annotations.at("karpenter.sh/nodeclaim-min-values-relaxed"), "false");
}

TEST_F(NodeClaimBuilderTest, ExpireAfterDefaultsAndGraceStaysUnset) {
  v1::NodePool pool = Pool();
  pool.spec.template_.spec.expire_after.reset();
  pool.spec.template_.spec.termination_grace_period.reset();
  auto a = TolerantPod("a", "1");
  const solver::Plan plan = Solve(pool, {a.get()});
  ASSERT_EQ(plan.node_claims.size(), 1u);
  const v1::NodeClaim claim = BuildNodeClaim(pool, plan.node_claims.front());
  EXPECT_EQ(claim.spec.expire_after, "720h");
  EXPECT_FALSE(claim.spec.termination_grace_period.has_value());
}

TEST(NodePoolHashTest, ChangesWithTheTemplateButNotWithRequirementsOrBehaviour) {
  const v1::NodePool pool = Pool();
  const std::string hash = NodePoolHash(pool);
  EXPECT_FALSE(hash.empty());
  EXPECT_EQ(NodePoolHash(pool), hash);

  v1::NodePool other = pool;
  other.spec.template_.spec.requirements.clear();
  other.spec.weight = 50;
  other.spec.limits.clear();
  EXPECT_EQ(NodePoolHash(other), hash);

  // Taints are a set: order does not matter.
  other = pool;
  core::Taint extra;
  extra.key = "z";
  extra.effect = core::TaintEffect::kNoExecute;
  other.spec.template_.spec.taints.insert(other.spec.template_.spec.taints.begin(), extra);
  v1::NodePool reordered = pool;
  reordered.spec.template_.spec.taints.push_back(extra);
  EXPECT_EQ(NodePoolHash(other), NodePoolHash(reordered));
  EXPECT_NE(NodePoolHash(other), hash);

  other = pool;
  other.spec.template_.metadata.labels["team"] = "web";
  EXPECT_NE(NodePoolHash(other), hash);
  other = pool;
  other.spec.template_.spec.expire_after = "48h";
  EXPECT_NE(NodePoolHash(other), hash);
  other = pool;
  other.spec.template_.spec.node_class_ref->name = "other";
  EXPECT_NE(NodePoolHash(other), hash);

  // Computed, not read from the pool's annotation (which may lag a spec change).
  other = pool;
  other.metadata.annotations["karpenter.sh/nodepool-hash"] = "12345";
  EXPECT_EQ(NodePoolHash(other), hash);
}

TEST(NodePoolHashTest, DecodedPoolKeepsWhatTheTypedFieldsLose) {
  // Upstream hashes a present but empty `labels` differently from an absent one; the typed
  // object cannot tell them apart, the hash taken at decoding can.
  const nlohmann::json manifest = nlohmann::json::parse(R"({
      "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
      "spec": {"template": {"metadata": {"labels": {}}, "spec": {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "requirements": [], "expireAfter": "720h"}}}})");
  v1::NodePool decoded;
  ASSERT_TRUE(core::DecodeJson(manifest, decoded).ok());
  EXPECT_EQ(NodePoolHash(decoded), *apis::hash::NodePoolHash(manifest));
  v1::NodePool built = decoded;
  built.template_empty_fields.clear();
  EXPECT_NE(NodePoolHash(built), NodePoolHash(decoded));
  nlohmann::json without = manifest;
  without["spec"]["template"].erase("metadata");
  EXPECT_EQ(NodePoolHash(built), *apis::hash::NodePoolHash(without));
  v1::NodePool labelled = decoded;  // no longer empty: hashed as it is now
  labelled.spec.template_.metadata.labels["team"] = "a";
  nlohmann::json with = manifest;
  with["spec"]["template"]["metadata"]["labels"]["team"] = "a";
  EXPECT_EQ(NodePoolHash(labelled), *apis::hash::NodePoolHash(with));
}

}  // namespace
}  // namespace dovetail::controllers::launch
