#include "dovetail/apis/validation/validation.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dovetail::apis::validation {
namespace {

using Json = nlohmann::json;
using ::testing::Contains;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// ---- Builders -----------------------------------------------------------------------------------

Json NodePoolJson() {
  return Json::parse(R"json({
    "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
    "spec": {"template": {"spec": {
      "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
      "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}}}
  })json");
}

Json NodeClaimJson() {
  return Json::parse(R"json({
    "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "default-abc12"},
    "spec": {
      "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                        "values": ["m5.large"]}],
      "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}
  })json");
}

Json EC2NodeClassJson() {
  return Json::parse(R"json({
    "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
    "spec": {"role": "KarpenterNodeRole",
             "amiSelectorTerms": [{"alias": "al2023@latest"}],
             "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
             "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}]}
  })json");
}

std::string StringAt(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// What core::ParseManifests makes of a document (without source positions).
core::Manifest ManifestOf(Json json) {
  core::Manifest m;
  m.api_version = StringAt(json, "apiVersion");
  m.kind = StringAt(json, "kind");
  if (const auto meta = json.find("metadata"); meta != json.end() && meta->is_object()) {
    m.name = StringAt(*meta, "name");
  }
  m.json = std::move(json);
  m.position = core::SourcePosition{"test.yaml", 1, 1};
  return m;
}

std::vector<FieldError> ErrorsOf(Json json) {
  std::vector<ObjectErrors> results = ValidateManifests({ManifestOf(std::move(json))});
  std::vector<FieldError> out;
  for (const ObjectErrors::Error& e : results.at(0).errors) out.push_back(e);
  return out;
}

std::string Dump(const std::vector<FieldError>& errors) {
  std::string out;
  for (const FieldError& e : errors) out += "\n  " + ToString(e);
  return out.empty() ? " (none)" : out;
}

// ---- Table of invalid objects -------------------------------------------------------------------

enum class Base { kNodePool, kNodeClaim, kEC2NodeClass };

struct InvalidCase {
  std::string name;
  Base base;
  std::vector<std::pair<std::string, Json>> set;  // JSON pointer -> value
  std::vector<std::string> remove;                // JSON pointers
  std::string field;                              // an error must have exactly this path
};

Json Build(const InvalidCase& c) {
  Json json = c.base == Base::kNodePool    ? NodePoolJson()
              : c.base == Base::kNodeClaim ? NodeClaimJson()
                                           : EC2NodeClassJson();
  for (const auto& [pointer, value] : c.set) json[Json::json_pointer(pointer)] = value;
  for (const std::string& pointer : c.remove) {
    const Json::json_pointer p(pointer);
    json[p.parent_pointer()].erase(p.back());
  }
  return json;
}

const std::vector<InvalidCase>& InvalidCases() {
  static const auto* const kCases = new std::vector<InvalidCase>{
      // NodePool: spec fields.
      {"WeightAbove100", Base::kNodePool, {{"/spec/weight", 101}}, {}, "spec.weight"},
      {"WeightZero", Base::kNodePool, {{"/spec/weight", 0}}, {}, "spec.weight"},
      {"WeightNotANumber", Base::kNodePool, {{"/spec/weight", "high"}}, {}, "spec.weight"},
      {"ReplicasNegative", Base::kNodePool, {{"/spec/replicas", -2}}, {}, "spec.replicas"},
      {"WeightOnStaticPool",
       Base::kNodePool,
       {{"/spec/replicas", 2}, {"/spec/weight", 5}},
       {},
       "spec.weight"},
      {"MemoryLimitOnStaticPool",
       Base::kNodePool,
       {{"/spec/replicas", 2}, {"/spec/limits", {{"memory", "10Gi"}, {"nodes", 4}}}},
       {},
       "spec.limits"},
      {"LimitNotAQuantity", Base::kNodePool, {{"/spec/limits/cpu", "many"}}, {}, "spec.limits.cpu"},
      {"MissingTemplate", Base::kNodePool, {}, {"/spec/template"}, "spec.template"},
      {"MissingSpec", Base::kNodePool, {}, {"/spec"}, "spec"},
      {"UnknownSpecField", Base::kNodePool, {{"/spec/wieght", 5}}, {}, "spec.wieght"},
      {"MissingName", Base::kNodePool, {}, {"/metadata/name"}, "metadata.name"},
      {"UppercaseName", Base::kNodePool, {{"/metadata/name", "Default"}}, {}, "metadata.name"},
      // NodePool: disruption.
      {"ConsolidateAfterDays",
       Base::kNodePool,
       {{"/spec/disruption/consolidateAfter", "1d"}},
       {},
       "spec.disruption.consolidateAfter"},
      {"ConsolidationPolicyV1beta1",
       Base::kNodePool,
       {{"/spec/disruption/consolidationPolicy", "WhenUnderutilized"}},
       {},
       "spec.disruption.consolidationPolicy"},
      {"BudgetNodesNegative",
       Base::kNodePool,
       {{"/spec/disruption/budgets", Json::parse(R"([{"nodes": "-1"}])")}},
       {},
       "spec.disruption.budgets[0].nodes"},
      {"BudgetNodesDecimalPercent",
       Base::kNodePool,
       {{"/spec/disruption/budgets", Json::parse(R"([{"nodes": "5.5%"}])")}},
       {},
       "spec.disruption.budgets[0].nodes"},
      {"BudgetNodesInteger",
       Base::kNodePool,
       {{"/spec/disruption/budgets", Json::parse(R"([{"nodes": 5}])")}},
       {},
       "spec.disruption.budgets[0].nodes"},
      {"BudgetCronMinuteOutOfRange",
       Base::kNodePool,
       {{"/spec/disruption/budgets",
         Json::parse(R"([{"nodes": "0", "schedule": "61 * * * *", "duration": "1h"}])")}},
       {},
       "spec.disruption.budgets[0].schedule"},
      {"BudgetCronSixFields",
       Base::kNodePool,
       {{"/spec/disruption/budgets",
         Json::parse(R"([{"nodes": "0", "schedule": "0 0 * * * *", "duration": "1h"}])")}},
       {},
       "spec.disruption.budgets[0].schedule"},
      {"BudgetCronBackwardsRange",
       Base::kNodePool,
       {{"/spec/disruption/budgets",
         Json::parse(R"([{"nodes": "0", "schedule": "0 0 * * fri-mon", "duration": "1h"}])")}},
       {},
       "spec.disruption.budgets[0].schedule"},
      {"BudgetDurationDays",
       Base::kNodePool,
       {{"/spec/disruption/budgets",
         Json::parse(R"([{"nodes": "0", "schedule": "@daily", "duration": "2d"}])")}},
       {},
       "spec.disruption.budgets[0].duration"},
      {"BudgetScheduleWithoutDuration",
       Base::kNodePool,
       {{"/spec/disruption/budgets", Json::parse(R"([{"nodes": "0", "schedule": "@hourly"}])")}},
       {},
       "spec.disruption.budgets[0]"},
      {"BudgetUnknownReason",
       Base::kNodePool,
       {{"/spec/disruption/budgets",
         Json::parse(R"([{"nodes": "1", "reasons": ["Empty", "Expired"]}])")}},
       {},
       "spec.disruption.budgets[0].reasons[1]"},
      {"BudgetDuplicateReason",
       Base::kNodePool,
       {{"/spec/disruption/budgets",
         Json::parse(R"([{"nodes": "1", "reasons": ["Drifted", "Drifted"]}])")}},
       {},
       "spec.disruption.budgets[0].reasons[1]"},
      // NodePool: template.
      {"ExpireAfterWeeks",
       Base::kNodePool,
       {{"/spec/template/spec/expireAfter", "2w"}},
       {},
       "spec.template.spec.expireAfter"},
      {"TerminationGracePeriodNever",
       Base::kNodePool,
       {{"/spec/template/spec/terminationGracePeriod", "Never"}},
       {},
       "spec.template.spec.terminationGracePeriod"},
      {"TerminationGracePeriodOverflows",
       Base::kNodePool,
       {{"/spec/template/spec/terminationGracePeriod", "99999999999h"}},
       {},
       "spec.template.spec.terminationGracePeriod"},
      {"RequirementKeyKubernetesIo",
       Base::kNodePool,
       {{"/spec/template/spec/requirements/0/key", "kubernetes.io/role"}},
       {},
       "spec.template.spec.requirements[0].key"},
      {"RequirementKeyAwsSubdomain",
       Base::kNodePool,
       {{"/spec/template/spec/requirements/0/key", "team.karpenter.k8s.aws/size"}},
       {},
       "spec.template.spec.requirements[0].key"},
      {"RequirementKeyWithoutSlashInRestrictedDomain",
       Base::kNodePool,
       {{"/spec/template/spec/requirements/0/key", "karpenter.sh"}},
       {},
       "spec.template.spec.requirements[0].key"},
      {"RequirementValueInvalid",
       Base::kNodePool,
       {{"/spec/template/spec/requirements/0/values", {"amd64", "not valid"}}},
       {},
       "spec.template.spec.requirements[0].values[1]"},
      {"RequirementOperatorLowercase",
       Base::kNodePool,
       {{"/spec/template/spec/requirements/0/operator", "in"}},
       {},
       "spec.template.spec.requirements[0].operator"},
      {"RequirementMissingOperator",
       Base::kNodePool,
       {},
       {"/spec/template/spec/requirements/0/operator"},
       "spec.template.spec.requirements[0].operator"},
      {"RequirementLteNoValues",
       Base::kNodePool,
       {{"/spec/template/spec/requirements/0",
         {{"key", "karpenter.k8s.aws/instance-cpu"}, {"operator", "Lte"}}}},
       {},
       "spec.template.spec.requirements[0].values"},
      {"RequirementGtHuge",
       Base::kNodePool,
       {{"/spec/template/spec/requirements/0",
         {{"key", "karpenter.k8s.aws/instance-cpu"},
          {"operator", "Gt"},
          {"values", {"99999999999999999999"}}}}},
       {},
       "spec.template.spec.requirements[0].values"},
      {"RequirementMinValuesAboveValues",
       Base::kNodePool,
       {{"/spec/template/spec/requirements/0/minValues", 2}},
       {},
       "spec.template.spec.requirements[0].minValues"},
      {"RequirementTenancyUnknown",
       Base::kNodePool,
       {{"/spec/template/spec/requirements/0",
         {{"key", "karpenter.k8s.aws/instance-tenancy"},
          {"operator", "In"},
          {"values", {"host"}}}}},
       {},
       "spec.template.spec.requirements[0]"},
      {"RequirementCapacityTypeMinValuesAboveKnown",
       Base::kNodePool,
       {{"/spec/template/spec/requirements/0",
         {{"key", "karpenter.sh/capacity-type"},
          {"operator", "In"},
          {"values", {"spot", "cheap"}},
          {"minValues", 2}}}},
       {},
       "spec.template.spec.requirements[0]"},
      {"RequirementUnknownField",
       Base::kNodePool,
       {{"/spec/template/spec/requirements/0/value", "amd64"}},
       {},
       "spec.template.spec.requirements[0].value"},
      {"LabelNormalizedToNodePool",
       Base::kNodePool,
       {{"/spec/template/metadata/labels/karpenter.sh~1nodepool", "x"}},
       {},
       R"(spec.template.metadata.labels["karpenter.sh/nodepool"])"},
      {"LabelValueTooLong",
       Base::kNodePool,
       {{"/spec/template/metadata/labels/team", std::string(64, 'a')}},
       {},
       "spec.template.metadata.labels.team"},
      {"LabelValueNotAString",
       Base::kNodePool,
       {{"/spec/template/metadata/labels/team", 7}},
       {},
       "spec.template.metadata.labels.team"},
      {"TaintEmptyKey",
       Base::kNodePool,
       {{"/spec/template/spec/taints", Json::parse(R"([{"key": "", "effect": "NoSchedule"}])")}},
       {},
       "spec.template.spec.taints[0].key"},
      {"TaintValueWithSlash",
       Base::kNodePool,
       {{"/spec/template/spec/taints",
         Json::parse(R"([{"key": "a", "value": "b/c", "effect": "NoSchedule"}])")}},
       {},
       "spec.template.spec.taints[0].value"},
      {"StartupTaintRepeatsTaint",
       Base::kNodePool,
       {{"/spec/template/spec/taints", Json::parse(R"([{"key": "a", "effect": "NoExecute"}])")},
        {"/spec/template/spec/startupTaints",
         Json::parse(R"([{"key": "a", "value": "x", "effect": "NoExecute"}])")}},
       {},
       "spec.template.spec.startupTaints[0]"},
      {"NodeClassRefGroupWithVersion",
       Base::kNodePool,
       {{"/spec/template/spec/nodeClassRef/group", "karpenter.k8s.aws/v1"}},
       {},
       "spec.template.spec.nodeClassRef.group"},
      {"NodeClassRefEmptyKind",
       Base::kNodePool,
       {{"/spec/template/spec/nodeClassRef/kind", ""}},
       {},
       "spec.template.spec.nodeClassRef.kind"},
      // NodeClaim.
      {"NodeClaimRequirementKarpenterDomain",
       Base::kNodeClaim,
       {{"/spec/requirements/0/key", "karpenter.sh/registered"}},
       {},
       "spec.requirements[0].key"},
      {"NodeClaimMissingRequirements",
       Base::kNodeClaim,
       {},
       {"/spec/requirements"},
       "spec.requirements"},
      {"NodeClaimMinValues51",
       Base::kNodeClaim,
       {{"/spec/requirements/0/minValues", 51}},
       {},
       "spec.requirements[0].minValues"},
      {"NodeClaimTerminationGracePeriodMinutesText",
       Base::kNodeClaim,
       {{"/spec/terminationGracePeriod", "10 minutes"}},
       {},
       "spec.terminationGracePeriod"},
      {"NodeClaimStartupTaintMissingEffect",
       Base::kNodeClaim,
       {{"/spec/startupTaints", Json::parse(R"([{"key": "a"}])")}},
       {},
       "spec.startupTaints[0].effect"},
      {"NodeClaimNodeClassRefMissingName",
       Base::kNodeClaim,
       {},
       {"/spec/nodeClassRef/name"},
       "spec.nodeClassRef.name"},
      // EC2NodeClass.
      {"SubnetIdUppercase",
       Base::kEC2NodeClass,
       {{"/spec/subnetSelectorTerms", Json::parse(R"([{"id": "subnet-ABC"}])")}},
       {},
       "spec.subnetSelectorTerms[0].id"},
      {"SecurityGroupTermEmptyTagKey",
       Base::kEC2NodeClass,
       {{"/spec/securityGroupSelectorTerms", Json::parse(R"([{"tags": {"": "x"}}])")}},
       {},
       "spec.securityGroupSelectorTerms[0].tags"},
      {"TooManySecurityGroupTerms",
       Base::kEC2NodeClass,
       {{"/spec/securityGroupSelectorTerms", Json(std::vector<Json>(31, {{"name", "a"}}))}},
       {},
       "spec.securityGroupSelectorTerms"},
      {"EmptyAmiSelectorTerms",
       Base::kEC2NodeClass,
       {{"/spec/amiSelectorTerms", Json::array()}},
       {},
       "spec.amiSelectorTerms"},
      {"AliasUppercaseFamily",
       Base::kEC2NodeClass,
       {{"/spec/amiSelectorTerms/0/alias", "AL2023@latest"}},
       {},
       "spec.amiSelectorTerms[0].alias"},
      {"AliasTwoAtSigns",
       Base::kEC2NodeClass,
       {{"/spec/amiSelectorTerms/0/alias", "al2023@v1@v2"}},
       {},
       "spec.amiSelectorTerms[0].alias"},
      {"AliasWindows2025Pinned",
       Base::kEC2NodeClass,
       {{"/spec/amiSelectorTerms/0/alias", "windows2025@v1"}},
       {},
       "spec.amiSelectorTerms[0].alias"},
      {"AmiFamilyBottlerocketWithAl2Alias",
       Base::kEC2NodeClass,
       {{"/spec/amiFamily", "Bottlerocket"}, {"/spec/amiSelectorTerms/0/alias", "al2@latest"}},
       {},
       "spec.amiFamily"},
      {"AmiIdWithSsmParameter",
       Base::kEC2NodeClass,
       {{"/spec/amiFamily", "AL2023"},
        {"/spec/amiSelectorTerms",
         Json::parse(R"([{"id": "ami-0123", "ssmParameter": "/aws/service/x"}])")}},
       {},
       "spec.amiSelectorTerms[0]"},
      {"EmptyInstanceProfile",
       Base::kEC2NodeClass,
       {{"/spec/instanceProfile", ""}},
       {"/spec/role"},
       "spec.instanceProfile"},
      {"RestrictedTagNodeClaim",
       Base::kEC2NodeClass,
       {{"/spec/tags", {{"karpenter.sh/nodeclaim", "x"}}}},
       {},
       R"(spec.tags["karpenter.sh/nodeclaim"])"},
      {"HopLimitZero",
       Base::kEC2NodeClass,
       {{"/spec/metadataOptions/httpPutResponseHopLimit", 0}},
       {},
       "spec.metadataOptions.httpPutResponseHopLimit"},
      {"HttpEndpointUnknown",
       Base::kEC2NodeClass,
       {{"/spec/metadataOptions/httpEndpoint", "on"}},
       {},
       "spec.metadataOptions.httpEndpoint"},
      {"VolumeSizeTooLarge",
       Base::kEC2NodeClass,
       {{"/spec/blockDeviceMappings",
         Json::parse(R"([{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "65T"}}])")}},
       {},
       "spec.blockDeviceMappings[0].ebs.volumeSize"},
      {"VolumeSizeInteger",
       Base::kEC2NodeClass,
       {{"/spec/blockDeviceMappings",
         Json::parse(R"([{"deviceName": "/dev/xvda", "ebs": {"volumeSize": 20}}])")}},
       {},
       "spec.blockDeviceMappings[0].ebs.volumeSize"},
      {"VolumeInitializationRateBelow100",
       Base::kEC2NodeClass,
       {{"/spec/blockDeviceMappings",
         Json::parse(R"([{"ebs": {"snapshotID": "snap-1", "volumeInitializationRate": 99}}])")}},
       {},
       "spec.blockDeviceMappings[0].ebs.volumeInitializationRate"},
      {"KubeletPodsPerCoreNegative",
       Base::kEC2NodeClass,
       {{"/spec/kubelet/podsPerCore", -1}},
       {},
       "spec.kubelet.podsPerCore"},
      {"KubeletImageGcLowAbove100",
       Base::kEC2NodeClass,
       {{"/spec/kubelet/imageGCLowThresholdPercent", 101}},
       {},
       "spec.kubelet.imageGCLowThresholdPercent"},
      {"KubeletKubeReservedNegative",
       Base::kEC2NodeClass,
       {{"/spec/kubelet/kubeReserved", {{"memory", "-1Gi"}}}},
       {},
       "spec.kubelet.kubeReserved.memory"},
      {"KubeletGracePeriodNotADuration",
       Base::kEC2NodeClass,
       {{"/spec/kubelet/evictionSoft", {{"memory.available", "10%"}}},
        {"/spec/kubelet/evictionSoftGracePeriod", {{"memory.available", "soon"}}}},
       {},
       R"(spec.kubelet.evictionSoftGracePeriod["memory.available"])"},
      {"NetworkInterfaceNegativeDevice",
       Base::kEC2NodeClass,
       {{"/spec/networkInterfaces",
         Json::parse(R"([{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                         {"networkCardIndex": 0, "deviceIndex": -1, "interfaceType": "efa-only"}])")}},
       {},
       "spec.networkInterfaces[1].deviceIndex"},
      {"NetworkInterfaceMissingType",
       Base::kEC2NodeClass,
       {{"/spec/networkInterfaces", Json::parse(R"([{"networkCardIndex": 0, "deviceIndex": 0}])")}},
       {},
       "spec.networkInterfaces[0].interfaceType"},
      {"UdpStreamTimeoutTooHigh",
       Base::kEC2NodeClass,
       {{"/spec/connectionTracking/udpStreamTimeout", 181}},
       {},
       "spec.connectionTracking.udpStreamTimeout"},
      {"PlacementGroupBadId",
       Base::kEC2NodeClass,
       {{"/spec/placementGroupSelector/id", "placement-1"}},
       {},
       "spec.placementGroupSelector.id"},
      {"CapacityReservationOwnerWithId",
       Base::kEC2NodeClass,
       {{"/spec/capacityReservationSelectorTerms",
         Json::parse(R"([{"id": "cr-0123", "ownerID": "123456789012"}])")}},
       {},
       "spec.capacityReservationSelectorTerms[0]"},
      {"NestedVirtualizationBoolean",
       Base::kEC2NodeClass,
       {{"/spec/cpuOptions/nestedVirtualization", true}},
       {},
       "spec.cpuOptions.nestedVirtualization"},
      {"UnknownTopLevelField", Base::kEC2NodeClass, {{"/specs", Json::object()}}, {}, "specs"},
  };
  return *kCases;
}

class InvalidObjectTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidObjectTest, ReportsTheField) {
  const InvalidCase& c = GetParam();
  const std::vector<FieldError> errors = ErrorsOf(Build(c));
  EXPECT_THAT(errors, Contains(Field(&FieldError::field, c.field)))
      << "expected an error at " << c.field << "; got:" << Dump(errors);
  for (const FieldError& e : errors) EXPECT_FALSE(e.message.empty()) << e.field;
}

INSTANTIATE_TEST_SUITE_P(Table, InvalidObjectTest, ::testing::ValuesIn(InvalidCases()),
                         [](const ::testing::TestParamInfo<InvalidCase>& info) {
                           return info.param.name;
                         });

TEST(InvalidObjectTableTest, HasAtLeastFortyCases) { EXPECT_GE(InvalidCases().size(), 40u); }

// ---- Valid objects and whole-object behaviour ---------------------------------------------------

TEST(ValidateManifestsTest, BaseObjectsAreValid) {
  for (Json json : {NodePoolJson(), NodeClaimJson(), EC2NodeClassJson()}) {
    const std::vector<FieldError> errors = ErrorsOf(json);
    EXPECT_THAT(errors, IsEmpty()) << json["kind"] << ":" << Dump(errors);
  }
}

TEST(ValidateManifestsTest, AcceptsEdgeValuesUpstreamAccepts) {
  Json pool = NodePoolJson();
  pool["spec"]["weight"] = 100;
  pool["spec"]["disruption"] = Json::parse(R"({
    "consolidateAfter": "Never", "consolidationPolicy": "Balanced",
    "budgets": [{"nodes": "100%"}, {"nodes": "0%"}, {"nodes": "1000"},
                {"nodes": "0", "schedule": "*/5 0-6 ? JAN-dec Sun", "duration": "1h30m0s"}]})");
  pool["spec"]["template"]["spec"]["expireAfter"] = "1h0m0s";
  pool["spec"]["template"]["spec"]["requirements"] = Json::parse(R"([
    {"key": "failure-domain.beta.kubernetes.io/zone", "operator": "In", "values": ["a"]},
    {"key": "node-restriction.kubernetes.io/pool", "operator": "Exists"},
    {"key": "kops.k8s.io/instancegroup", "operator": "Exists", "minValues": 50},
    {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gte", "values": ["0"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "x"],
     "minValues": 1}])");
  pool["spec"]["template"]["metadata"]["labels"] = {{"example.com/team", ""}};
  EXPECT_THAT(ErrorsOf(pool), IsEmpty()) << Dump(ErrorsOf(pool));

  Json node_class = EC2NodeClassJson();
  node_class["spec"]["blockDeviceMappings"] = Json::parse(R"([
    {"ebs": {"volumeSize": "59000Gi"}}, {"ebs": {"volumeSize": "64000G"}},
    {"ebs": {"volumeSize": "58Ti"}}, {"ebs": {"volumeSize": "64T", "volumeType": "gp3"}},
    {"rootVolume": true, "ebs": {"snapshotID": "snap-1", "volumeInitializationRate": 100}}])");
  node_class["spec"]["kubelet"] = Json::parse(R"({
    "evictionHard": {"memory.available": "100%", "nodefs.available": "9.5%",
                     "imagefs.available": "1e3"},
    "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 0})");
  node_class["spec"]["tags"] = {{"kubernetes.io/role", "node"}, {"Name", "x"}};
  EXPECT_THAT(ErrorsOf(node_class), IsEmpty()) << Dump(ErrorsOf(node_class));
}

TEST(ValidateManifestsTest, CollectsEveryError) {
  Json pool = NodePoolJson();
  pool["spec"]["weight"] = 500;
  pool["spec"]["disruption"] = {{"consolidationPolicy", "Sometimes"}, {"consolidateAfter", "soon"}};
  pool["spec"]["template"]["spec"]["requirements"][0]["operator"] = "Equals";
  pool["spec"]["template"]["spec"]["taints"] = Json::parse(R"([{"key": "a", "effect": "Maybe"}])");
  pool["spec"]["template"]["metadata"]["labels"] = {{"kubernetes.io/hostname", "x"}};
  const std::vector<FieldError> errors = ErrorsOf(pool);
  for (const char* field :
       {"spec.weight", "spec.disruption.consolidationPolicy", "spec.disruption.consolidateAfter",
        "spec.template.spec.requirements[0].operator", "spec.template.spec.taints[0].effect",
        R"(spec.template.metadata.labels["kubernetes.io/hostname"])"}) {
    EXPECT_THAT(errors, Contains(Field(&FieldError::field, field))) << field << Dump(errors);
  }
}

TEST(ValidateManifestsTest, DecodeErrorsDoNotCauseFollowOnErrors) {
  // The bad operator must not also be reported as "In without values".
  Json pool = NodePoolJson();
  pool["spec"]["template"]["spec"]["requirements"][0] = {{"key", "a"}, {"operator", "Has"}};
  const std::vector<FieldError> errors = ErrorsOf(pool);
  ASSERT_EQ(errors.size(), 1u) << Dump(errors);
  EXPECT_EQ(errors[0].field, "spec.template.spec.requirements[0].operator");
  EXPECT_THAT(errors[0].message, HasSubstr("\"Has\""));
}

TEST(ValidateManifestsTest, ListOfEnumsWithAWrongTypeIsOneError) {
  Json pool = NodePoolJson();
  pool["spec"]["disruption"]["budgets"] =
      Json::parse(R"([{"nodes": "1", "reasons": ["Empty", 7, "Foo"]}])");
  const std::vector<FieldError> errors = ErrorsOf(pool);
  ASSERT_EQ(errors.size(), 2u) << Dump(errors);
  EXPECT_EQ(errors[0].field, "spec.disruption.budgets[0].reasons[1]");
  EXPECT_THAT(errors[0].message, HasSubstr("expected string"));
  EXPECT_EQ(errors[1].field, "spec.disruption.budgets[0].reasons[2]");
}

TEST(ValidateManifestsTest, EmptyRoleIsOneError) {
  Json node_class = EC2NodeClassJson();
  node_class["spec"]["role"] = "";
  const std::vector<FieldError> errors = ErrorsOf(node_class);
  ASSERT_EQ(errors.size(), 1u) << Dump(errors);
  EXPECT_EQ(errors[0].field, "spec.role");
}

TEST(ValidateManifestsTest, MissingAmiSelectorTermsIsOneError) {
  Json node_class = EC2NodeClassJson();
  node_class["spec"].erase("amiSelectorTerms");
  const std::vector<FieldError> errors = ErrorsOf(node_class);
  ASSERT_EQ(errors.size(), 1u) << Dump(errors);
  EXPECT_EQ(errors[0].field, "spec.amiSelectorTerms");
}

// Every value of some rich objects replaced by every JSON type: never a crash or an exception,
// always one result per object.
void ReplaceEachValue(const Json& root, Json& node, const std::string& where, int* checked) {
  const Json replacements[] = {nullptr, 0, -1, 1.5, "x", true, Json::array(), Json::object()};
  auto visit = [&](Json& child, const std::string& child_path) {
    const Json original = child;
    for (const Json& replacement : replacements) {
      child = replacement;
      Json copy = root;
      const std::vector<ObjectErrors> results = ValidateManifests({ManifestOf(std::move(copy))});
      ASSERT_EQ(results.size(), 1u) << child_path;
      ++*checked;
    }
    child = original;
    ReplaceEachValue(root, child, child_path, checked);
  };
  if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it) visit(it.value(), where + "." + it.key());
  } else if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i) visit(node[i], where + "[" + std::to_string(i) + "]");
  }
}

TEST(ValidateManifestsTest, SurvivesAnyTypeInAnyField) {
  Json pool = NodePoolJson();
  pool["spec"]["disruption"] = Json::parse(R"({"consolidateAfter": "1m", "budgets": [
      {"nodes": "1", "schedule": "@daily", "duration": "1h", "reasons": ["Empty"]}]})");
  pool["spec"]["template"]["spec"]["taints"] =
      Json::parse(R"([{"key": "a", "value": "b", "effect": "NoSchedule"}])");
  pool["spec"]["limits"] = {{"cpu", "10"}};
  Json node_class = EC2NodeClassJson();
  node_class["spec"]["kubelet"] = Json::parse(R"({"maxPods": 10,
      "evictionSoft": {"memory.available": "5%"},
      "evictionSoftGracePeriod": {"memory.available": "1m"}})");
  node_class["spec"]["blockDeviceMappings"] =
      Json::parse(R"([{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi"}}])");
  node_class["spec"]["networkInterfaces"] =
      Json::parse(R"([{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}])");
  int checked = 0;
  for (Json root : {pool, NodeClaimJson(), node_class}) {
    Json mutable_root = root;
    ReplaceEachValue(mutable_root, mutable_root, "", &checked);
  }
  EXPECT_GT(checked, 500);
}

TEST(ValidateManifestsTest, ReportsLinesOfTheOffendingFields) {
  constexpr std::string_view kYaml = R"(apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: lines
spec:
  weight: 300
  template:
    spec:
      requirements: []
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ignored
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
)";
  absl::StatusOr<std::vector<core::Manifest>> manifests = core::ParseManifests(kYaml, "f.yaml");
  ASSERT_TRUE(manifests.ok()) << manifests.status();
  const std::vector<ObjectErrors> results = ValidateManifests(*manifests);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].Describe(), "NodePool/lines");
  EXPECT_TRUE(results[0].validated);
  ASSERT_EQ(results[0].errors.size(), 1u);
  EXPECT_EQ(results[0].errors[0].field, "spec.weight");
  EXPECT_EQ(results[0].errors[0].position.file, "f.yaml");
  EXPECT_EQ(results[0].errors[0].position.line, 6);
  EXPECT_FALSE(results[1].validated);
  EXPECT_THAT(results[1].notes, IsEmpty());
  EXPECT_THAT(results[1].errors, IsEmpty());
  EXPECT_FALSE(results[2].validated);
  ASSERT_EQ(results[2].notes.size(), 1u);
  EXPECT_THAT(results[2].notes[0], HasSubstr("example.com"));
}

TEST(ValidateManifestsTest, OldApiVersionsAreValidatedAsTheirConversion) {
  Json pool = NodePoolJson();
  pool["apiVersion"] = "karpenter.sh/v1beta1";
  pool["spec"]["template"]["spec"]["nodeClassRef"] = {
      {"apiVersion", "karpenter.k8s.aws/v1beta1"}, {"kind", "EC2NodeClass"}, {"name", "default"}};
  std::vector<ObjectErrors> results = ValidateManifests({ManifestOf(pool)});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].validated);
  EXPECT_THAT(results[0].errors, IsEmpty());
  EXPECT_EQ(results[0].api_version, "karpenter.sh/v1beta1");
  ASSERT_FALSE(results[0].notes.empty());
  EXPECT_THAT(results[0].notes[0], HasSubstr("validated as its conversion to karpenter.sh/v1"));

  // A v1 rule broken in the old object is reported on it.
  pool["spec"]["weight"] = 101;
  results = ValidateManifests({ManifestOf(pool)});
  ASSERT_EQ(results.size(), 1u);
  ASSERT_EQ(results[0].errors.size(), 1u);
  EXPECT_EQ(results[0].errors[0].field, "spec.weight");
}

TEST(ValidateManifestsTest, WhatCannotBeConvertedIsAnErrorOnTheOldObjectOnly) {
  Json provisioner = {{"apiVersion", "karpenter.sh/v1alpha5"},
                      {"kind", "Provisioner"},
                      {"metadata", {{"name", "old"}}},
                      {"spec", {{"providerRef", {{"name", "x"}}}, {"surprise", 1}}}};
  Json pool = NodePoolJson();
  pool["apiVersion"] = "karpenter.sh/v1beta1";
  pool["metadata"]["name"] = "fine";
  std::vector<ObjectErrors> results =
      ValidateManifests({ManifestOf(provisioner), ManifestOf(pool)});
  ASSERT_EQ(results.size(), 2u);
  ASSERT_EQ(results[0].errors.size(), 1u);
  EXPECT_EQ(results[0].errors[0].field, "spec.surprise");
  EXPECT_THAT(results[0].errors[0].message, HasSubstr("cannot convert to v1"));
  EXPECT_THAT(results[1].errors, IsEmpty());
  EXPECT_TRUE(results[1].validated);
}

TEST(ValidateManifestsTest, MissingKindIsAnError) {
  Json json = NodePoolJson();
  json.erase("kind");
  EXPECT_THAT(ErrorsOf(json), Contains(Field(&FieldError::field, "kind")));
}

TEST(ValidateManifestsTest, UnknownKubeletFieldsAreNotesNotErrors) {
  Json node_class = EC2NodeClassJson();
  node_class["spec"]["kubelet"] = {{"shutdownGracePeriod", "30s"}};
  const std::vector<ObjectErrors> results = ValidateManifests({ManifestOf(node_class)});
  EXPECT_THAT(results[0].errors, IsEmpty());
  ASSERT_EQ(results[0].notes.size(), 1u);
  EXPECT_THAT(results[0].notes[0], HasSubstr("spec.kubelet.shutdownGracePeriod"));
}

TEST(ValidateManifestsTest, IgnoresStatus) {
  Json claim = NodeClaimJson();
  claim["status"] = {{"conditions", "not a list"}, {"somethingNew", 1}};
  EXPECT_THAT(ErrorsOf(claim), IsEmpty());
}

// ---- Typed validation ---------------------------------------------------------------------------

v1::NodePool DecodedNodePool() {
  absl::StatusOr<v1::NodePool> pool = core::DecodeAs<v1::NodePool>(NodePoolJson());
  EXPECT_TRUE(pool.ok()) << pool.status();
  return *pool;
}

TEST(ValidateNodePoolTest, ValidPoolHasNoErrors) {
  EXPECT_THAT(ValidateNodePool(DecodedNodePool()), IsEmpty());
}

TEST(ValidateNodePoolTest, ReportsMissingNodeClassRefAndTooManyRequirements) {
  v1::NodePool pool = DecodedNodePool();
  pool.spec.template_.spec.node_class_ref.reset();
  pool.spec.template_.spec.requirements.assign(
      101,
      core::NodeSelectorRequirement{.key = "example.com/a", .op = core::SelectorOperator::kExists});
  const std::vector<FieldError> errors = ValidateNodePool(pool);
  EXPECT_THAT(errors, Contains(Field(&FieldError::field, "spec.template.spec.nodeClassRef")));
  EXPECT_THAT(errors, Contains(Field(&FieldError::field, "spec.template.spec.requirements")));
}

TEST(ValidateNodePoolTest, WeightMessageNamesTheRangeAndValue) {
  v1::NodePool pool = DecodedNodePool();
  pool.spec.weight = 101;
  const std::vector<FieldError> errors = ValidateNodePool(pool);
  ASSERT_EQ(errors.size(), 1u) << Dump(errors);
  EXPECT_EQ(ToString(errors[0]), "spec.weight: must be between 1 and 100, got 101");
  EXPECT_EQ(errors[0].value, "101");
}

TEST(ValidateNodePoolTest, TooManyBudgetsAndLabels) {
  v1::NodePool pool = DecodedNodePool();
  pool.spec.disruption.emplace();
  pool.spec.disruption->budgets.emplace(51, v1::Budget{.nodes = "1"});
  for (int i = 0; i < 101; ++i) pool.spec.template_.metadata.labels["l" + std::to_string(i)] = "v";
  const std::vector<FieldError> errors = ValidateNodePool(pool);
  EXPECT_THAT(errors, Contains(Field(&FieldError::field, "spec.disruption.budgets")));
  EXPECT_THAT(errors, Contains(Field(&FieldError::field, "spec.template.metadata.labels")));
}

TEST(ValidateNodePoolUpdateTest, NodeClassGroupAndKindAreImmutable) {
  v1::NodePool before = DecodedNodePool();
  v1::NodePool after = before;
  after.spec.template_.spec.node_class_ref->group = "karpenter.kwok.sh";
  after.spec.template_.spec.node_class_ref->kind = "KWOKNodeClass";
  after.spec.template_.spec.node_class_ref->name = "other";  // the name may change
  const std::vector<FieldError> errors = ValidateNodePoolUpdate(before, after);
  EXPECT_THAT(errors, Contains(Field(&FieldError::field, "spec.template.spec.nodeClassRef.group")));
  EXPECT_THAT(errors, Contains(Field(&FieldError::field, "spec.template.spec.nodeClassRef.kind")));
  EXPECT_EQ(errors.size(), 2u) << Dump(errors);
}

TEST(ValidateNodePoolUpdateTest, ReplicasCannotBeSetOrUnset) {
  v1::NodePool dynamic = DecodedNodePool();
  v1::NodePool static_pool = dynamic;
  static_pool.spec.replicas = 3;
  EXPECT_THAT(ValidateNodePoolUpdate(dynamic, static_pool),
              Contains(Field(&FieldError::field, "spec.replicas")));
  EXPECT_THAT(ValidateNodePoolUpdate(static_pool, dynamic),
              Contains(Field(&FieldError::field, "spec.replicas")));
  v1::NodePool scaled = static_pool;
  scaled.spec.replicas = 5;
  EXPECT_THAT(ValidateNodePoolUpdate(static_pool, scaled), IsEmpty());
}

TEST(ValidateNodeClaimUpdateTest, SpecIsImmutableButDefaultsAreNotChanges) {
  absl::StatusOr<v1::NodeClaim> claim = core::DecodeAs<v1::NodeClaim>(NodeClaimJson());
  ASSERT_TRUE(claim.ok()) << claim.status();
  v1::NodeClaim defaulted = *claim;
  v1::ApplyDefaults(defaulted);
  EXPECT_THAT(ValidateNodeClaimUpdate(defaulted, *claim), IsEmpty());
  v1::NodeClaim relabelled = *claim;
  relabelled.metadata.labels["team"] = "a";
  EXPECT_THAT(ValidateNodeClaimUpdate(*claim, relabelled), IsEmpty());
  v1::NodeClaim changed = *claim;
  changed.spec.requirements[0].values.push_back("m5.xlarge");
  EXPECT_THAT(ValidateNodeClaimUpdate(*claim, changed),
              Contains(Field(&FieldError::field, "spec")));
}

TEST(ValidateEC2NodeClassUpdateTest, CannotSwitchBetweenRoleAndInstanceProfile) {
  absl::StatusOr<aws::v1::EC2NodeClass> with_role =
      core::DecodeAs<aws::v1::EC2NodeClass>(EC2NodeClassJson());
  ASSERT_TRUE(with_role.ok()) << with_role.status();
  aws::v1::EC2NodeClass with_profile = *with_role;
  with_profile.spec.role.clear();
  with_profile.spec.instance_profile = "profile";
  EXPECT_THAT(ValidateEC2NodeClassUpdate(*with_role, with_profile),
              Contains(Field(&FieldError::field, "spec")));
  EXPECT_THAT(ValidateEC2NodeClassUpdate(with_profile, *with_role),
              Contains(Field(&FieldError::field, "spec")));
  aws::v1::EC2NodeClass other_role = *with_role;
  other_role.spec.role = "other";
  EXPECT_THAT(ValidateEC2NodeClassUpdate(*with_role, other_role), IsEmpty());
}

// ---- The shared corpus --------------------------------------------------------------------------

namespace fs = std::filesystem;

const fs::path& CorpusDir() {
  static const fs::path* const kDir =
      new fs::path(fs::path(DOVETAIL_SOURCE_DIR) / "test" / "testdata" / "validation");
  return *kDir;
}

std::vector<fs::path> CorpusFiles(std::string_view subdir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(CorpusDir() / subdir, ec)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// `# key: value` header comments before the first non-comment line.
std::map<std::string, std::string> CorpusHeader(const fs::path& file) {
  std::map<std::string, std::string> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] != '#') break;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(1, colon - 1);
    std::string value = line.substr(colon + 1);
    auto trim = [](std::string& s) {
      s.erase(0, s.find_first_not_of(" \t"));
      s.erase(s.find_last_not_of(" \t\r") + 1);
    };
    trim(key);
    trim(value);
    out[key] = value;
  }
  return out;
}

// Field paths compared the way the corpus writes them: map keys as `.key` (the codec's
// `["a.b/c"]` becomes `.a.b/c`), so `labels.team` and `labels["team"]` are the same path.
std::string NormalizePath(std::string_view path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path.substr(i).starts_with("[\"")) {
      size_t j = i + 2;
      std::string key;
      while (j < path.size() && path[j] != '"') {
        if (path[j] == '\\' && j + 1 < path.size()) ++j;
        key.push_back(path[j++]);
      }
      out += "." + key;
      i = j + 1;  // the closing ']'
      continue;
    }
    out.push_back(path[i]);
  }
  return out;
}

bool PathStartsWith(std::string_view path, std::string_view prefix) {
  if (!path.starts_with(prefix)) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '.' || path[prefix.size()] == '[';
}

std::vector<ObjectErrors> ValidateFile(const fs::path& file, std::string* failure) {
  absl::StatusOr<std::vector<core::Manifest>> manifests = core::ReadManifests(file.string());
  if (!manifests.ok()) {
    *failure = std::string(manifests.status().message());
    return {};
  }
  return ValidateManifests(*manifests);
}

TEST(CorpusTest, EveryValidObjectValidatesClean) {
  const std::vector<fs::path> files = CorpusFiles("valid");
  ASSERT_FALSE(files.empty()) << "no corpus under " << CorpusDir();
  for (const fs::path& file : files) {
    std::string failure;
    const std::vector<ObjectErrors> results = ValidateFile(file, &failure);
    EXPECT_TRUE(failure.empty()) << file.filename() << ": " << failure;
    EXPECT_FALSE(results.empty()) << file.filename() << ": no objects";
    for (const ObjectErrors& r : results) {
      EXPECT_TRUE(r.validated) << file.filename() << ": " << r.Describe() << " was not validated";
      std::string diff;
      for (const ObjectErrors::Error& e : r.errors) {
        diff +=
            "\n    unexpected: " + ToString(e) + " (line " + std::to_string(e.position.line) + ")";
      }
      EXPECT_TRUE(r.errors.empty()) << "valid/" << file.filename().string() << " (" << r.Describe()
                                    << ") should validate clean:" << diff;
    }
  }
}

TEST(CorpusTest, EveryInvalidObjectIsRejectedAtTheExpectedField) {
  const std::vector<fs::path> files = CorpusFiles("invalid");
  ASSERT_FALSE(files.empty()) << "no corpus under " << CorpusDir();
  int checked = 0;
  for (const fs::path& file : files) {
    const std::map<std::string, std::string> header = CorpusHeader(file);
    const auto expect = header.find("expect-field");
    if (expect == header.end()) {
      ADD_FAILURE() << file.filename() << ": no `# expect-field:` header";
      continue;
    }
    const std::string want = NormalizePath(expect->second);
    std::string failure;
    const std::vector<ObjectErrors> results = ValidateFile(file, &failure);
    if (!failure.empty()) {
      ADD_FAILURE() << file.filename() << ": " << failure;
      continue;
    }
    std::vector<std::string> got;
    bool matched = false;
    for (const ObjectErrors& r : results) {
      for (const ObjectErrors::Error& e : r.errors) {
        got.push_back(ToString(e));
        if (PathStartsWith(NormalizePath(e.field), want)) matched = true;
      }
    }
    ++checked;
    std::string diff = "\n    expected: an error at " + expect->second;
    if (header.contains("expect-message"))
      diff += " (server says: " + header.at("expect-message") + ")";
    if (got.empty()) diff += "\n    got:      no errors at all";
    for (const std::string& g : got) diff += "\n    got:      " + g;
    EXPECT_TRUE(matched) << "invalid/" << file.filename().string() << diff;
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace dovetail::apis::validation
