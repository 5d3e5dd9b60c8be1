#include "dovetail/apis/v1/nodepool.h"

#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/manifest.h"
#include "dovetail/common/duration.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::apis::v1 {
namespace {

using ::dovetail::apis::core::DecodeJson;
using ::dovetail::apis::core::DecodeOptions;
using ::dovetail::apis::core::EncodeJson;
using ::dovetail::apis::core::Manifest;
using ::dovetail::apis::core::ReadManifests;
using ::dovetail::apis::core::SelectorOperator;
using ::nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

std::string TestData(const std::string& name) {
  return std::string(DOVETAIL_APIS_TESTDATA) + "/" + name;
}

std::vector<Manifest> Read(const std::string& file) {
  absl::StatusOr<std::vector<Manifest>> manifests = ReadManifests(TestData(file));
  EXPECT_TRUE(manifests.ok()) << manifests.status();
  return manifests.ok() ? *manifests : std::vector<Manifest>{};
}

NodePool Decode(const json& in) {
  NodePool pool;
  const absl::Status status = DecodeJson(in, pool);
  EXPECT_TRUE(status.ok()) << status;
  return pool;
}

NodePool DecodeFixture(const std::string& file, const std::string& name) {
  for (const Manifest& m : Read(file)) {
    if (m.name == name) return Decode(m.json);
  }
  ADD_FAILURE() << name << " not in " << file;
  return NodePool{};
}

void ExpectLosslessRoundTrip(const Manifest& m) {
  const json encoded = EncodeJson(Decode(m.json));
  EXPECT_EQ(encoded, m.json) << m.Describe() << " differs: " << json::diff(m.json, encoded);
  // The JSON spelling of the same object decodes to the same thing.
  absl::StatusOr<std::vector<Manifest>> again = core::ParseManifests(m.json.dump(), "x.json");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(EncodeJson(Decode((*again)[0].json)), encoded);
}

TEST(NodePoolTest, DocumentedShapesRoundTripLosslessly) {
  std::vector<Manifest> manifests = Read("nodepool_kitchen_sink.yaml");
  for (const Manifest& m : Read("nodepool_variants.yaml")) manifests.push_back(m);
  for (const Manifest& m : Read("nodepool.json")) manifests.push_back(m);
  for (const Manifest& m : Read("nodepool_list.json")) {
    if (m.kind == kNodePoolKind) manifests.push_back(m);
  }
  ASSERT_EQ(manifests.size(), 8);
  for (const Manifest& m : manifests) ExpectLosslessRoundTrip(m);
}

TEST(NodePoolTest, QuantitiesAreWrittenBackCanonically) {
  const std::vector<Manifest> manifests = Read("nodepool_default.yaml");
  ASSERT_EQ(manifests.size(), 1);
  json expected = manifests[0].json;
  ASSERT_EQ(expected["spec"]["limits"]["cpu"], "1000");
  expected["spec"]["limits"]["cpu"] = "1k";  // the same quantity, as the API server prints it
  EXPECT_EQ(EncodeJson(Decode(manifests[0].json)), expected);
}

TEST(NodePoolTest, KitchenSinkFieldsAreDecoded) {
  const NodePool pool = DecodeFixture("nodepool_kitchen_sink.yaml", "kitchen-sink");
  EXPECT_EQ(pool.api_version, kApiVersion);
  EXPECT_EQ(pool.kind, kNodePoolKind);
  EXPECT_EQ(pool.metadata.generation, 3);
  const NodeClaimTemplate& tmpl = pool.spec.template_;
  EXPECT_EQ(tmpl.metadata.labels.at("billing-team"), "my-team");
  EXPECT_EQ(tmpl.metadata.annotations.at("example.com/owner"), "my-team");
  ASSERT_TRUE(tmpl.spec.node_class_ref.has_value());
  EXPECT_EQ(*tmpl.spec.node_class_ref,
            (NodeClassReference{
                .group = "karpenter.k8s.aws", .kind = "EC2NodeClass", .name = "default"}));
  EXPECT_EQ(tmpl.spec.taints[0].value, "true");
  EXPECT_EQ(tmpl.spec.startup_taints[0].key, "example.com/another-taint");
  EXPECT_EQ(tmpl.spec.expire_after, "720h");
  EXPECT_EQ(tmpl.spec.termination_grace_period, "48h");
  ASSERT_EQ(tmpl.spec.requirements.size(), 14);
  EXPECT_EQ(tmpl.spec.requirements[0].min_values, 2);
  EXPECT_EQ(tmpl.spec.requirements[1].min_values, 5);
  EXPECT_FALSE(tmpl.spec.requirements[2].min_values.has_value());
  EXPECT_EQ(tmpl.spec.requirements[4].op, SelectorOperator::kGt);
  EXPECT_EQ(tmpl.spec.requirements[5].op, SelectorOperator::kLt);
  EXPECT_EQ(tmpl.spec.requirements[6].op, SelectorOperator::kGte);
  EXPECT_EQ(tmpl.spec.requirements[7].op, SelectorOperator::kLte);
  EXPECT_EQ(tmpl.spec.requirements[11].op, SelectorOperator::kDoesNotExist);
  EXPECT_TRUE(tmpl.spec.requirements[11].values.empty());
  EXPECT_EQ(tmpl.spec.requirements[13].op, SelectorOperator::kNotIn);

  ASSERT_TRUE(pool.spec.disruption.has_value());
  const Disruption& disruption = *pool.spec.disruption;
  EXPECT_EQ(disruption.consolidation_policy, ConsolidationPolicy::kWhenEmptyOrUnderutilized);
  EXPECT_EQ(disruption.consolidate_after, "1m");
  ASSERT_TRUE(disruption.budgets.has_value());
  ASSERT_EQ(disruption.budgets->size(), 4);
  EXPECT_EQ((*disruption.budgets)[0].nodes, "10%");
  EXPECT_TRUE((*disruption.budgets)[0].reasons.empty());
  EXPECT_EQ((*disruption.budgets)[1].schedule, "0 9 * * mon-fri");
  EXPECT_EQ((*disruption.budgets)[1].duration, "8h");
  EXPECT_THAT((*disruption.budgets)[1].reasons,
              ElementsAre(DisruptionReason::kDrifted, DisruptionReason::kUnderutilized));
  EXPECT_THAT((*disruption.budgets)[2].reasons, ElementsAre(DisruptionReason::kEmpty));
  EXPECT_EQ((*disruption.budgets)[3].schedule, "@daily");

  EXPECT_EQ(pool.spec.limits.at("cpu").Value(), 100);
  EXPECT_EQ(pool.spec.limits.at("memory").Value(), 1000LL << 30);
  EXPECT_EQ(pool.spec.limits.at("nvidia.com/gpu").Value(), 8);
  EXPECT_EQ(pool.spec.limits.at("nodes").Value(), 50);
  EXPECT_EQ(pool.spec.weight, 10);
  EXPECT_FALSE(pool.spec.replicas.has_value());

  EXPECT_EQ(pool.status.nodes, 3);
  EXPECT_EQ(pool.status.node_class_observed_generation, 1);
  EXPECT_EQ(pool.status.resources.at("pods").Value(), 396);
  const core::Condition* ready = FindCondition(pool.status.conditions, "Ready");
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->status, core::ConditionStatus::kTrue);
  EXPECT_EQ(ready->observed_generation, 3);
  EXPECT_EQ(FindCondition(pool.status.conditions, "NodeRegistrationHealthy")->status,
            core::ConditionStatus::kUnknown);
}

TEST(NodePoolTest, VariantsDecodeStaticNeverAndBalancedSettings) {
  const NodePool gpu = DecodeFixture("nodepool_variants.yaml", "gpu");
  EXPECT_EQ(gpu.spec.weight, 50);
  EXPECT_EQ(gpu.spec.template_.spec.taints[0].effect, core::TaintEffect::kNoSchedule);
  EXPECT_TRUE(gpu.spec.template_.spec.taints[0].value.empty());
  EXPECT_FALSE(gpu.spec.disruption.has_value());

  const NodePool fixed = DecodeFixture("nodepool_variants.yaml", "static");
  EXPECT_TRUE(IsStatic(fixed));
  EXPECT_EQ(fixed.spec.replicas, 3);
  EXPECT_TRUE(fixed.spec.template_.spec.requirements.empty());

  const NodePool batch = DecodeFixture("nodepool_variants.yaml", "batch");
  EXPECT_EQ(batch.spec.template_.spec.expire_after, "Never");
  EXPECT_EQ(batch.spec.disruption->consolidation_policy, ConsolidationPolicy::kWhenEmpty);
  EXPECT_EQ(batch.spec.disruption->consolidate_after, "Never");
  ASSERT_TRUE(batch.spec.disruption->budgets.has_value());
  EXPECT_TRUE(batch.spec.disruption->budgets->empty());
  absl::StatusOr<std::optional<absl::Duration>> never =
      ParseNillableDuration(*batch.spec.disruption->consolidate_after);
  ASSERT_TRUE(never.ok());
  EXPECT_FALSE(never->has_value());

  const NodePool balanced = DecodeFixture("nodepool_variants.yaml", "balanced");
  EXPECT_EQ(balanced.spec.disruption->consolidation_policy, ConsolidationPolicy::kBalanced);
}

TEST(NodePoolTest, DecodingAddsNoDefaults) {
  const json minimal = json::parse(R"({"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
      "metadata": {"name": "m"},
      "spec": {"template": {"spec": {"requirements": [],
          "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                           "name": "d"}}}}})");
  const NodePool pool = Decode(minimal);
  EXPECT_FALSE(pool.spec.template_.spec.expire_after.has_value());
  EXPECT_FALSE(pool.spec.disruption.has_value());
  EXPECT_EQ(EncodeJson(pool), minimal);
}

TEST(NodePoolTest, ApplyDefaultsFillsWhatTheApiServerWould) {
  NodePool pool = Decode(json::parse(R"({"spec": {"template": {"spec": {"requirements": []}}}})"));
  ApplyDefaults(pool);
  EXPECT_EQ(EncodeJson(pool), json::parse(R"({"spec": {
      "template": {"spec": {"requirements": [], "expireAfter": "720h"}},
      "disruption": {"consolidateAfter": "0s", "consolidationPolicy": "WhenEmptyOrUnderutilized",
                     "budgets": [{"nodes": "10%"}]}}})"));
  // Idempotent.
  const json once = EncodeJson(pool);
  ApplyDefaults(pool);
  EXPECT_EQ(EncodeJson(pool), once);
}

TEST(NodePoolTest, ApplyDefaultsKeepsWhatTheUserSet) {
  NodePool pool = Decode(json::parse(R"({"spec": {
      "template": {"spec": {"requirements": [], "expireAfter": "Never"}},
      "disruption": {"consolidationPolicy": "WhenEmpty",
                     "budgets": [{"nodes": "3"}, {"schedule": "@hourly", "duration": "10m"}]}}})"));
  ApplyDefaults(pool);
  EXPECT_EQ(pool.spec.template_.spec.expire_after, "Never");
  EXPECT_EQ(pool.spec.disruption->consolidation_policy, ConsolidationPolicy::kWhenEmpty);
  EXPECT_EQ(pool.spec.disruption->consolidate_after, "0s");
  ASSERT_EQ(pool.spec.disruption->budgets->size(), 2);
  EXPECT_EQ((*pool.spec.disruption->budgets)[0].nodes, "3");
  EXPECT_EQ((*pool.spec.disruption->budgets)[1].nodes, "10%");  // item-level default

  NodePool no_budgets =
      Decode(json::parse(R"({"spec": {"disruption": {"consolidateAfter": "5m", "budgets": []}}})"));
  ApplyDefaults(no_budgets);
  EXPECT_TRUE(no_budgets.spec.disruption->budgets->empty());  // explicitly none stays none
}

TEST(NodePoolTest, TypeErrorsNameTheJsonPath) {
  NodePool pool;
  EXPECT_EQ(DecodeJson(json::parse(R"({"spec": {"template": {"spec": {"requirements": [
                           {"key": "a", "operator": "In", "values": ["x"]},
                           {"key": "b", "operator": 3}]}}}})"),
                       pool)
                .message(),
            "spec.template.spec.requirements[1].operator: expected string, got number");
  EXPECT_EQ(DecodeJson(json::parse(R"({"spec": {"weight": "10"}})"), pool).message(),
            "spec.weight: expected integer, got string");
  EXPECT_EQ(DecodeJson(json::parse(R"({"spec": {"template": {"spec": {"requirements": [
                           {"key": "a", "operator": "In", "minValues": "2"}]}}}})"),
                       pool)
                .message(),
            "spec.template.spec.requirements[0].minValues: expected integer, got string");
  EXPECT_THAT(std::string(DecodeJson(json::parse(R"({"spec": {"disruption": {
                                         "consolidationPolicy": "WhenUnderutilized"}}})"),
                                     pool)
                              .message()),
              HasSubstr("spec.disruption.consolidationPolicy: unsupported value "
                        "\"WhenUnderutilized\": supported values: \"WhenEmptyOrUnderutilized\", "
                        "\"WhenEmpty\", \"Balanced\""));
  EXPECT_EQ(DecodeJson(json::parse(R"({"spec": {"limits": {"cpu": "1 core"}}})"), pool).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      DecodeJson(
          json::parse(R"({"spec": {"disruption": {"budgets": [{"reasons": ["Expired"]}]}}})"), pool)
          .code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(NodePoolTest, UnknownFieldsAreKeptAndReported) {
  const json input = json::parse(R"({"spec": {"ttlSecondsAfterEmpty": 30,
      "template": {"spec": {"requirements": [], "kubelet": {"maxPods": 110}}},
      "disruption": {"consolidateWhen": "WhenCostJustifiesDisruption"}},
      "status": {"extra": true}})");
  std::vector<std::string> paths;
  NodePool pool;
  ASSERT_TRUE(DecodeJson(input, pool, DecodeOptions{.unknown_field_paths = &paths}).ok());
  EXPECT_THAT(paths, UnorderedElementsAre("spec.ttlSecondsAfterEmpty", "spec.template.spec.kubelet",
                                          "spec.disruption.consolidateWhen", "status.extra"));
  EXPECT_EQ(pool.spec.template_.spec.unknown_fields,
            json::parse(R"({"kubelet": {"maxPods": 110}})"));
  EXPECT_EQ(EncodeJson(pool), input);
}

TEST(NodePoolTest, DecodeErrorsCanBeLocatedInTheManifest) {
  const std::vector<Manifest> manifests = Read("nodepool_kitchen_sink.yaml");
  ASSERT_EQ(manifests.size(), 1);
  json broken = manifests[0].json;
  broken["spec"]["template"]["spec"]["requirements"][2]["operator"] = 5;
  NodePool pool;
  const absl::Status status = DecodeJson(broken, pool);
  const std::string message(status.message());
  const std::string path = message.substr(0, message.find(':'));
  EXPECT_EQ(path, "spec.template.spec.requirements[2].operator");
  EXPECT_EQ(manifests[0].PositionOf(path).line, 46);
}

}  // namespace
}  // namespace dovetail::apis::v1

namespace dovetail::apis::v1 {
namespace {

// Upstream's NodePool hash through the typed object (decode, then TemplateHash) equals upstream's
// own Hash() on every vector of test/testdata/upstream-hashes.json, the present-but-empty
// collections included.
TEST(NodePoolTemplateHashTest, EveryUpstreamVectorThroughTheTypedObject) {
  std::ifstream in(std::string(DOVETAIL_TESTDATA_DIR) + "/upstream-hashes.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  int checked = 0;
  for (const nlohmann::json& v : doc.at("vectors")) {
    if (v.at("kind") != "NodePool") continue;
    NodePool pool;
    ASSERT_TRUE(core::DecodeJson(v.at("object"), pool).ok()) << v.at("name");
    absl::StatusOr<std::string> hash = TemplateHash(pool);
    ASSERT_TRUE(hash.ok()) << v.at("name") << ": " << hash.status();
    EXPECT_EQ(*hash, v.at("hash").get<std::string>()) << v.at("name");
    ++checked;
  }
  EXPECT_GE(checked, 60);
}

}  // namespace
}  // namespace dovetail::apis::v1
