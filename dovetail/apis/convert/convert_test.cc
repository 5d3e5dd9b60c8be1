#include "dovetail/apis/convert/convert.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "dovetail/apis/core/manifest.h"
#include "dovetail/apis/validation/validation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dovetail::apis::convert {
namespace {

using Json = nlohmann::json;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<Json> Load(const std::string& name) {
  auto manifests = core::ReadManifests(std::string(DOVETAIL_SOURCE_DIR) +
                                       "/dovetail/apis/convert/testdata/" + name);
  EXPECT_TRUE(manifests.ok()) << manifests.status();
  std::vector<Json> out;
  if (manifests.ok()) {
    for (const core::Manifest& m : *manifests) out.push_back(m.json);
  }
  return out;
}

const Json* Find(const std::vector<Json>& objects, const std::string& kind,
                 const std::string& name) {
  for (const Json& o : objects) {
    if (o["kind"] == kind && o["metadata"]["name"] == name) return &o;
  }
  return nullptr;
}

// The YAML output parses back to the same objects, and every object validates clean.
void ExpectValidV1(const std::vector<Json>& objects) {
  auto parsed = core::ParseManifests(ToYaml(objects), "converted.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << ToYaml(objects);
  ASSERT_EQ(parsed->size(), objects.size());
  for (size_t i = 0; i < objects.size(); ++i) EXPECT_EQ((*parsed)[i].json, objects[i]);
  for (const validation::ObjectErrors& object : validation::ValidateManifests(*parsed)) {
    EXPECT_TRUE(object.validated) << object.object;
    for (const auto& error : object.errors) {
      ADD_FAILURE() << object.object << ": " << validation::ToString(error);
    }
  }
}

ConvertResult ConvertOk(const std::string& file) {
  ConvertResult result = Convert(Load(file));
  EXPECT_THAT(result.errors, IsEmpty());
  ExpectValidV1(result.objects);
  return result;
}

TEST(ConvertTest, ProvisionerBecomesNodePoolWithOldSemanticsWrittenOut) {
  ConvertResult result = ConvertOk("provisioner.yaml");
  const Json* pool = Find(result.objects, "NodePool", "default");
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ((*pool)["apiVersion"], "karpenter.sh/v1");
  const Json& spec = (*pool)["spec"];
  EXPECT_EQ(spec["disruption"]["consolidationPolicy"], "WhenEmpty");
  EXPECT_EQ(spec["disruption"]["consolidateAfter"], "30s");
  EXPECT_EQ(spec["template"]["spec"]["expireAfter"], "2592000s");
  EXPECT_EQ(spec["template"]["spec"]["nodeClassRef"],
            Json({{"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", "default"}}));
  EXPECT_EQ(spec["template"]["metadata"]["labels"]["team"], "web");
  EXPECT_EQ(spec["template"]["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"], "true");
  EXPECT_FALSE(
      spec["template"]["metadata"]["annotations"].contains("karpenter.sh/do-not-consolidate"));
  EXPECT_EQ(spec["limits"]["cpu"], 1000);
  EXPECT_EQ(spec["weight"], 10);
  EXPECT_EQ(spec["template"]["spec"]["taints"][0]["key"], "dedicated");
  // The capacity-type requirement is the user's; the other implicit defaults are added.
  const Json& reqs = spec["template"]["spec"]["requirements"];
  ASSERT_EQ(reqs.size(), 5u);
  EXPECT_EQ(reqs[0]["values"], Json({"spot", "on-demand"}));
  EXPECT_THAT(reqs, Contains(Json({{"key", "karpenter.k8s.aws/instance-generation"},
                                   {"operator", "Gt"},
                                   {"values", {"2"}}})));
  EXPECT_THAT(
      reqs,
      Contains(Json({{"key", "kubernetes.io/arch"}, {"operator", "In"}, {"values", {"amd64"}}})));
  // The kubelet block moved to the node class, without containerRuntime.
  const Json* node_class = Find(result.objects, "EC2NodeClass", "default");
  ASSERT_NE(node_class, nullptr);
  EXPECT_EQ((*node_class)["spec"]["kubelet"], Json({{"maxPods", 110}}));
}

TEST(ConvertTest, AWSNodeTemplateBecomesEC2NodeClass) {
  ConvertResult result = ConvertOk("provisioner.yaml");
  const Json* node_class = Find(result.objects, "EC2NodeClass", "default");
  ASSERT_NE(node_class, nullptr);
  const Json& spec = (*node_class)["spec"];
  EXPECT_EQ((*node_class)["apiVersion"], "karpenter.k8s.aws/v1");
  EXPECT_EQ(spec["subnetSelectorTerms"],
            Json::parse(R"([{"tags":{"karpenter.sh/discovery":"my-cluster"}}])"));
  EXPECT_EQ(spec["securityGroupSelectorTerms"],
            Json::parse(R"([{"id":"sg-0123456789abcdef0"},{"id":"sg-0123456789abcdef1"}])"));
  EXPECT_EQ(spec["amiSelectorTerms"], Json::parse(R"([{"alias":"al2023@latest"}])"));
  EXPECT_FALSE(spec.contains("amiFamily"));
  EXPECT_EQ(spec["instanceProfile"], "KarpenterNodeInstanceProfile-my-cluster");
  EXPECT_EQ(spec["metadataOptions"]["httpPutResponseHopLimit"], 2);
  EXPECT_EQ(spec["tags"]["team"], "web");
}

TEST(ConvertTest, ConsolidationAndAmiSelector) {
  ConvertResult result = ConvertOk("consolidation.yaml");
  const Json* pool = Find(result.objects, "NodePool", "consolidated");
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ((*pool)["spec"]["disruption"]["consolidationPolicy"], "WhenEmptyOrUnderutilized");
  EXPECT_EQ((*pool)["spec"]["disruption"]["consolidateAfter"], "0s");
  EXPECT_EQ((*pool)["spec"]["template"]["spec"]["expireAfter"], "Never");
  const Json* node_class = Find(result.objects, "EC2NodeClass", "nodes");
  ASSERT_NE(node_class, nullptr);
  const Json& spec = (*node_class)["spec"];
  EXPECT_EQ(
      spec["subnetSelectorTerms"],
      Json::parse(R"([{"id":"subnet-0123456789abcdef0"},{"id":"subnet-0123456789abcdef1"}])"));
  EXPECT_EQ(
      spec["amiSelectorTerms"],
      Json::parse(
          R"([{"name":"my-ami-*","owner":"123456789012"},{"name":"my-ami-*","owner":"self"}])"));
  EXPECT_EQ(spec["amiFamily"], "AL2");
  EXPECT_FALSE(spec.contains("kubelet"));
}

TEST(ConvertTest, MachineBecomesNodeClaim) {
  ConvertResult result = ConvertOk("machine.yaml");
  ASSERT_EQ(result.objects.size(), 1u);
  const Json& claim = result.objects[0];
  EXPECT_EQ(claim["kind"], "NodeClaim");
  EXPECT_EQ(claim["apiVersion"], "karpenter.sh/v1");
  EXPECT_EQ(claim["metadata"]["labels"]["karpenter.sh/nodepool"], "default");
  EXPECT_FALSE(claim["metadata"]["labels"].contains("karpenter.sh/provisioner-name"));
  EXPECT_EQ(claim["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"], "true");
  EXPECT_EQ(claim["spec"]["nodeClassRef"]["kind"], "EC2NodeClass");
  EXPECT_FALSE(claim["spec"].contains("machineTemplateRef"));
  EXPECT_FALSE(claim.contains("status"));
}

TEST(ConvertTest, V1beta1PoolsWithDifferentKubeletsSplitTheNodeClass) {
  ConvertResult result = ConvertOk("v1beta1_split.yaml");
  const Json* general = Find(result.objects, "NodePool", "general");
  const Json* batch = Find(result.objects, "NodePool", "batch");
  const Json* plain = Find(result.objects, "NodePool", "plain");
  ASSERT_NE(general, nullptr);
  ASSERT_NE(batch, nullptr);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ((*general)["spec"]["template"]["spec"]["expireAfter"], "168h");
  EXPECT_FALSE((*general)["spec"]["disruption"].contains("expireAfter"));
  EXPECT_EQ((*general)["spec"]["disruption"]["consolidationPolicy"], "WhenEmptyOrUnderutilized");
  EXPECT_EQ((*general)["spec"]["disruption"]["consolidateAfter"], "0s");
  EXPECT_EQ((*batch)["spec"]["disruption"]["consolidateAfter"], "30s");
  EXPECT_EQ((*plain)["spec"]["template"]["spec"]["expireAfter"], "720h");
  EXPECT_FALSE((*general)["spec"]["template"]["spec"].contains("kubelet"));
  EXPECT_EQ((*general)["spec"]["template"]["spec"]["nodeClassRef"]["group"], "karpenter.k8s.aws");

  const std::string general_class = (*general)["spec"]["template"]["spec"]["nodeClassRef"]["name"];
  const std::string batch_class = (*batch)["spec"]["template"]["spec"]["nodeClassRef"]["name"];
  EXPECT_NE(general_class, batch_class);
  EXPECT_THAT(general_class, HasSubstr("default-kubelet-"));
  EXPECT_EQ((*plain)["spec"]["template"]["spec"]["nodeClassRef"]["name"], "default");
  const Json* original = Find(result.objects, "EC2NodeClass", "default");
  const Json* general_copy = Find(result.objects, "EC2NodeClass", general_class);
  const Json* batch_copy = Find(result.objects, "EC2NodeClass", batch_class);
  ASSERT_NE(original, nullptr);
  ASSERT_NE(general_copy, nullptr);
  ASSERT_NE(batch_copy, nullptr);
  EXPECT_FALSE((*original)["spec"].contains("kubelet"));
  EXPECT_EQ((*general_copy)["spec"]["kubelet"]["maxPods"], 110);
  EXPECT_EQ((*batch_copy)["spec"]["kubelet"]["maxPods"], 50);
  EXPECT_EQ((*general_copy)["spec"]["amiSelectorTerms"],
            Json::parse(R"([{"alias":"al2@latest"}])"));
  EXPECT_EQ(result.objects.size(), 6u);
  // Deterministic: the same input gives the same names.
  EXPECT_EQ(Convert(Load("v1beta1_split.yaml")).objects, result.objects);
}

TEST(ConvertTest, ConvertingV1OutputAgainChangesNothing) {
  for (const char* file :
       {"provisioner.yaml", "consolidation.yaml", "machine.yaml", "v1beta1_split.yaml"}) {
    ConvertResult first = Convert(Load(file));
    ASSERT_THAT(first.errors, IsEmpty()) << file;
    ConvertResult second = Convert(first.objects);
    EXPECT_THAT(second.errors, IsEmpty()) << file;
    EXPECT_EQ(second.objects, first.objects) << file;
    EXPECT_THAT(second.changes, IsEmpty()) << file;
  }
}

TEST(ConvertTest, UnconvertibleFieldsAreErrorsNamingTheirPathAndNothingIsConverted) {
  ConvertResult result = Convert(Load("errors.yaml"));
  EXPECT_THAT(result.objects, IsEmpty());
  EXPECT_THAT(result.errors,
              Contains("Provisioner/default: spec.provider: inline provider is not supported; "
                       "move it to an AWSNodeTemplate"));
  EXPECT_THAT(result.errors,
              Contains(HasSubstr("Provisioner/default: spec.providerRef: required")));
  EXPECT_THAT(result.errors, Contains(HasSubstr("AWSNodeTemplate/lt: spec.launchTemplate: ")));
  EXPECT_THAT(result.errors,
              Contains(HasSubstr("AWSNodeTemplate/lt: spec.instanceProfile: absent")));
}

TEST(ConvertTest, UnknownFieldsAndUnknownVersionsAreErrors) {
  ConvertResult result =
      Convert({Json::parse(
                   R"({"apiVersion":"karpenter.sh/v1alpha5","kind":"Provisioner",
          "metadata":{"name":"p"},"spec":{"providerRef":{"name":"x"},"surprise":1}})"),
               Json::parse(R"({"apiVersion":"karpenter.sh/v1beta2","kind":"NodePool",
          "metadata":{"name":"q"}})")});
  EXPECT_THAT(result.errors, Contains(HasSubstr("Provisioner/p: spec.surprise: unknown")));
  EXPECT_THAT(result.errors, Contains(HasSubstr("NodePool/q: apiVersion: cannot convert")));
  EXPECT_THAT(result.objects, IsEmpty());
}

TEST(ConvertTest, KubeletNeedsItsNodeClassInTheInput) {
  ConvertResult result = Convert({Json::parse(
      R"({"apiVersion":"karpenter.sh/v1beta1","kind":"NodePool","metadata":{"name":"p"},
          "spec":{"template":{"spec":{"nodeClassRef":{"name":"missing"},"requirements":[],
          "kubelet":{"maxPods":10}}}}})")});
  EXPECT_THAT(result.errors, Contains(HasSubstr("NodePool/p: kubelet: EC2NodeClass/missing is not "
                                                "in the input")));
}

TEST(ConvertTest, ExplainListsEveryChange) {
  ConvertResult result = Convert(Load("provisioner.yaml"));
  EXPECT_THAT(result.changes,
              Contains("Provisioner/default: spec.ttlSecondsAfterEmpty -> "
                       "spec.disruption.consolidationPolicy: WhenEmpty, consolidateAfter: 30s"));
  EXPECT_THAT(result.changes, Contains("Provisioner/default: spec.ttlSecondsUntilExpired -> "
                                       "spec.template.spec.expireAfter: 2592000s"));
  EXPECT_THAT(
      result.changes,
      Contains(HasSubstr("Provisioner/default: spec.template.metadata.annotations[\"karpenter.sh/"
                         "do-not-consolidate\"] -> ")));
  EXPECT_THAT(result.changes, Contains(HasSubstr("EC2NodeClass/default: (from NodePool/default) -> "
                                                 "spec.kubelet")));
  EXPECT_THAT(result.changes,
              Contains("AWSNodeTemplate/default: spec.amiFamily: AL2023 -> spec.amiSelectorTerms: "
                       "[{alias: al2023@latest}]"));
}

TEST(ConvertTest, ToYamlQuotesStringsThatWouldReadAsOtherTypes) {
  const Json object = Json::parse(
      R"({"a":{"yes":"no","b":"2","c":"on-demand","d":["true",null,1.5,""],"e":{},"f":"x: y"}})");
  const std::string yaml = ToYaml({object});
  EXPECT_THAT(yaml, HasSubstr("\"yes\": \"no\""));
  EXPECT_THAT(yaml, HasSubstr("b: \"2\""));
  EXPECT_THAT(yaml, HasSubstr("c: on-demand"));
  auto parsed = core::ParseManifests(yaml, "t.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status() << yaml;
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ((*parsed)[0].json, object);
}

// A manifest file may hold bytes that are not UTF-8; ToYaml writes U+FFFD for them instead of
// throwing (found by test/fuzz/manifest_fuzzer: `dovetail convert` ended with an exception).
TEST(ConvertTest, ToYamlReplacesBytesThatAreNotUtf8) {
  const Json object = {{"a", std::string("x\xffy")}};
  std::string yaml;
  ASSERT_NO_THROW(yaml = ToYaml({object}));
  EXPECT_THAT(yaml, HasSubstr("a: \"x\xEF\xBF\xBDy\""));
}

TEST(ConvertTest, GlobalSettingsBecomeHelmValuesAndNodeDefaults) {
  ConvertResult result = ConvertOk("global_settings.yaml");
  // The ConfigMap itself is not in the output; its settings are Helm values.
  ASSERT_EQ(result.objects.size(), 2u);
  EXPECT_EQ(result.origins, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(result.helm_values["settings"]["clusterName"], "my-cluster");
  EXPECT_EQ(result.helm_values["settings"]["clusterEndpoint"],
            "https://ABCDEF.gr7.us-west-2.eks.amazonaws.com");
  EXPECT_EQ(result.helm_values["settings"]["interruptionQueue"], "my-cluster");
  EXPECT_EQ(result.helm_values["settings"]["isolatedVPC"], false);
  EXPECT_EQ(result.helm_values["settings"]["vmMemoryOverheadPercent"], 0.075);
  EXPECT_EQ(result.helm_values["settings"]["batchMaxDuration"], "10s");
  EXPECT_EQ(result.helm_values["settings"]["reservedENIs"], "0");
  const Json* pool = Find(result.objects, "NodePool", "default");
  ASSERT_NE(pool, nullptr);
  // Drift off -> a budget that blocks drift, next to the default 10%.
  EXPECT_EQ(pool->at("spec").at("disruption").at("budgets"),
            Json::parse(R"([{"nodes":"10%"},{"nodes":"0","reasons":["Drifted"]}])"));
  const Json* node_class = Find(result.objects, "EC2NodeClass", "default");
  ASSERT_NE(node_class, nullptr);
  const Json& spec = node_class->at("spec");
  EXPECT_EQ(spec.at("instanceProfile"), "KarpenterNodeInstanceProfile-my-cluster");
  EXPECT_EQ(spec.at("tags"), Json::parse(R"({"team":"web","cost-center":"42"})"));
  EXPECT_EQ(spec.at("kubelet").at("maxPods"), 110);
  EXPECT_THAT(result.changes, Contains(HasSubstr("aws.enablePodENI\"] -> removed")));
}

TEST(ConvertTest, UnknownGlobalSettingsAreErrorsOnTheConfigMap) {
  ConvertResult result = Convert({Json::parse(
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"karpenter-global-settings"},
          "data":{"aws.assumeRoleARN":"arn:aws:iam::1:role/x","aws.isolatedVPC":"maybe",
          "aws.tags":"[1]"}})")});
  EXPECT_THAT(result.errors, Contains(HasSubstr("data[\"aws.assumeRoleARN\"]: unknown")));
  EXPECT_THAT(result.errors, Contains(HasSubstr("data[\"aws.isolatedVPC\"]: must be")));
  EXPECT_THAT(result.errors, Contains(HasSubstr("data[\"aws.tags\"]: must be")));
  EXPECT_EQ(result.error_inputs, (std::vector<size_t>{0, 0, 0}));
  EXPECT_THAT(result.objects, IsEmpty());
}

TEST(ConvertTest, OriginsFollowSplitNodeClassesAndErrorsNameTheirInput) {
  const std::vector<Json> input = Load("v1beta1_split.yaml");
  ConvertResult result = ConvertOk("v1beta1_split.yaml");
  ASSERT_EQ(result.origins.size(), result.objects.size());
  for (size_t k = 0; k < result.objects.size(); ++k) {
    const Json& in = input[result.origins[k]];
    const std::string name = result.objects[k]["metadata"]["name"];
    EXPECT_EQ(name.rfind(in["metadata"]["name"].get<std::string>(), 0), 0u) << name;
  }
  ConvertResult bad = Convert(
      {Json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}})"),
       Json::parse(
           R"({"apiVersion":"karpenter.sh/v1beta1","kind":"NodePool","metadata":{"name":"p"},
          "spec":{"template":{"spec":{"nodeClassRef":{"name":"missing"},"requirements":[],
          "kubelet":{"maxPods":10}}}}})")});
  EXPECT_EQ(bad.error_inputs, (std::vector<size_t>{1}));
}

TEST(ConvertTest, NeedsConversion) {
  EXPECT_TRUE(
      NeedsConversion(Json::parse(R"({"apiVersion":"karpenter.sh/v1beta1","kind":"NodePool"})")));
  EXPECT_TRUE(NeedsConversion(
      Json::parse(R"({"apiVersion":"karpenter.k8s.aws/v1alpha1","kind":"AWSNodeTemplate"})")));
  EXPECT_TRUE(NeedsConversion(Json::parse(
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"karpenter-global-settings"}})")));
  EXPECT_FALSE(
      NeedsConversion(Json::parse(R"({"apiVersion":"karpenter.sh/v1","kind":"NodePool"})")));
  EXPECT_FALSE(NeedsConversion(
      Json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}})")));
  EXPECT_FALSE(NeedsConversion(Json::parse("[]")));
}

// Every value of every testdata object replaced, in turn, by each JSON type: Convert reports
// errors or converts, and never throws.
void ReplaceEach(Json& root, Json& node, const std::vector<Json>& rest, int* checked) {
  static const std::vector<Json> kValues = {
      nullptr, 5, -1, "x", true, Json::array(), Json::object(), Json::array({1})};
  auto visit = [&](Json& child) {
    const Json saved = child;
    for (const Json& v : kValues) {
      child = v;
      std::vector<Json> input = rest;
      input.push_back(root);
      EXPECT_NO_THROW(Convert(input)) << root.dump();
      ++*checked;
    }
    child = saved;
    ReplaceEach(root, child, rest, checked);
  };
  if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it) visit(it.value());
  } else if (node.is_array()) {
    for (Json& child : node) visit(child);
  }
}

TEST(ConvertTest, SurvivesAnyTypeInAnyField) {
  int checked = 0;
  for (const char* file :
       {"provisioner.yaml", "v1beta1_split.yaml", "global_settings.yaml", "machine.yaml"}) {
    const std::vector<Json> objects = Load(file);
    for (size_t i = 0; i < objects.size(); ++i) {
      std::vector<Json> rest = objects;
      rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
      Json root = objects[i];
      ReplaceEach(root, root, rest, &checked);
    }
  }
  EXPECT_GT(checked, 1000);
}

}  // namespace
}  // namespace dovetail::apis::convert
