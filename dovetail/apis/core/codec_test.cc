#include "dovetail/apis/core/codec.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "dovetail/apis/core/int_or_string.h"
#include "dovetail/apis/core/node.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/apis/core/pod_disruption_budget.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::apis::core {
namespace {

using ::nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

TEST(CodecTest, WrongTypeErrorNamesJsonPath) {
  Pod pod;
  const absl::Status status =
      DecodeJson(json::parse(R"({"spec": {"containers": [{"name": "a"}, {"name": 7}]}})"), pod);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(status), "spec.containers[1].name: expected string, got number");
}

TEST(CodecTest, MapKeysWithDotsAreQuotedInPaths) {
  Pod pod;
  const absl::Status status =
      DecodeJson(json::parse(R"({"metadata": {"labels": {"app.kubernetes.io/name": true}}})"), pod);
  EXPECT_EQ(Message(status),
            "metadata.labels[\"app.kubernetes.io/name\"]: expected string, got boolean");
}

TEST(CodecTest, TopLevelMustBeAnObject) {
  Node node;
  const absl::Status status = DecodeJson(json::parse(R"(["not", "an", "object"])"), node);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(status), "expected object, got array");
}

TEST(CodecTest, UnsupportedEnumValueListsTheSupportedOnes) {
  Node node;
  const absl::Status status = DecodeJson(
      json::parse(R"({"spec": {"taints": [{"key": "a", "effect": "Sometimes"}]}})"), node);
  EXPECT_EQ(Message(status),
            "spec.taints[0].effect: unsupported value \"Sometimes\": supported values: "
            "\"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"");
}

TEST(CodecTest, NullAndMissingLeaveFieldsUnset) {
  Pod pod;
  ASSERT_TRUE(DecodeJson(json::parse(R"({"spec": {"priority": null, "nodeName": null,
      "affinity": null, "containers": null}})"),
                         pod)
                  .ok());
  EXPECT_FALSE(pod.spec.priority.has_value());
  EXPECT_FALSE(pod.spec.affinity.has_value());
  EXPECT_TRUE(pod.spec.node_name.empty());
  EXPECT_TRUE(pod.spec.unknown_fields.empty());
}

TEST(CodecTest, NullMapValuesAndListItemsTakeTheZeroValue) {
  Pod pod;
  ASSERT_TRUE(DecodeJson(json::parse(R"({"spec": {"nodeSelector": {"dedicated": null},
      "tolerations": [null, {"operator": "Exists"}]}})"),
                         pod)
                  .ok());
  EXPECT_EQ(pod.spec.node_selector.at("dedicated"), "");
  ASSERT_EQ(pod.spec.tolerations.size(), 2);
  EXPECT_EQ(pod.spec.tolerations[0], Toleration{});
  EXPECT_EQ(DecodeJson(json(nullptr), pod).code(), absl::StatusCode::kInvalidArgument);
}

TEST(CodecTest, IntegersAreRangeCheckedAndIntegralFloatsAccepted) {
  Pod pod;
  EXPECT_EQ(Message(DecodeJson(json::parse(R"({"spec": {"priority": 3000000000}})"), pod)),
            "spec.priority: integer 3000000000 out of range [-2147483648, 2147483647]");
  EXPECT_EQ(Message(DecodeJson(json::parse(R"({"spec": {"priority": 1.5}})"), pod)),
            "spec.priority: expected integer, got number 1.5");
  EXPECT_EQ(Message(DecodeJson(json::parse(R"({"spec": {"priority": "5"}})"), pod)),
            "spec.priority: expected integer, got string");
  ASSERT_TRUE(DecodeJson(json::parse(R"({"spec": {"priority": 7.0}})"), pod).ok());
  EXPECT_EQ(pod.spec.priority, 7);
}

TEST(CodecTest, QuantitiesAcceptNumbersAndStringsAndEncodeCanonically) {
  Pod pod;
  ASSERT_TRUE(DecodeJson(json::parse(R"({"spec": {"overhead": {"cpu": 0.5, "memory": "1000",
      "nvidia.com/gpu": 2}}})"),
                         pod)
                  .ok());
  EXPECT_EQ(pod.spec.overhead.at("cpu").MilliValue(), 500);
  EXPECT_EQ(pod.spec.overhead.at("nvidia.com/gpu").Value(), 2);
  const json encoded = EncodeJson(pod);
  EXPECT_EQ(encoded["spec"]["overhead"],
            json::parse(R"({"cpu": "500m", "memory": "1k", "nvidia.com/gpu": "2"})"));
}

TEST(CodecTest, InvalidQuantityNamesPathAndText) {
  Pod pod;
  const absl::Status status =
      DecodeJson(json::parse(R"({"spec": {"overhead": {"cpu": "lots"}}})"), pod);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(status), HasSubstr("spec.overhead.cpu: invalid quantity \"lots\""));
}

TEST(CodecTest, TimesRoundTripInUtcWithZ) {
  Pod pod;
  ASSERT_TRUE(
      DecodeJson(json::parse(R"({"status": {"startTime": "2025-06-01T13:00:04+02:00"}})"), pod)
          .ok());
  ASSERT_TRUE(pod.status.start_time.has_value());
  EXPECT_EQ(*pod.status.start_time, absl::FromUnixSeconds(1748775604));
  EXPECT_EQ(EncodeJson(pod)["status"]["startTime"], "2025-06-01T11:00:04Z");
  EXPECT_EQ(FormatKubeTime(absl::FromUnixMillis(1748775604250)), "2025-06-01T11:00:04.25Z");
  EXPECT_THAT(Message(DecodeJson(json::parse(R"({"status": {"startTime": "yesterday"}})"), pod)),
              HasSubstr("status.startTime: invalid RFC 3339 time \"yesterday\""));
}

TEST(CodecTest, UnknownFieldsAreKeptPerLevelAndWrittenBack) {
  const json input = json::parse(R"({
    "apiVersion": "v1", "kind": "Pod", "extraTop": 1,
    "metadata": {"name": "p", "managedFields": [{"manager": "kubectl"}]},
    "spec": {"dnsPolicy": "ClusterFirst",
             "containers": [{"name": "c", "command": ["sleep", "1"],
                             "resources": {"claims": [{"name": "gpu"}]}}]},
    "status": {"qosClass": "BestEffort"}})");
  Pod pod;
  ASSERT_TRUE(DecodeJson(input, pod).ok());
  EXPECT_EQ(pod.unknown_fields, json::parse(R"({"extraTop": 1})"));
  EXPECT_EQ(pod.metadata.unknown_fields,
            json::parse(R"({"managedFields": [{"manager": "kubectl"}]})"));
  EXPECT_EQ(pod.spec.unknown_fields, json::parse(R"({"dnsPolicy": "ClusterFirst"})"));
  EXPECT_EQ(pod.spec.containers[0].unknown_fields, json::parse(R"({"command": ["sleep", "1"]})"));
  EXPECT_EQ(pod.spec.containers[0].resources.unknown_fields,
            json::parse(R"({"claims": [{"name": "gpu"}]})"));
  EXPECT_EQ(pod.status.unknown_fields, json::parse(R"({"qosClass": "BestEffort"})"));
  EXPECT_EQ(EncodeJson(pod), input);
}

TEST(CodecTest, ModelledFieldsWinOverStaleUnknownFieldsOnEncode) {
  Pod pod;
  pod.spec.node_name = "real";
  pod.spec.unknown_fields = json::parse(R"({"nodeName": "stale", "hostNetwork": true})");
  const json encoded = EncodeJson(pod);
  EXPECT_EQ(encoded["spec"]["nodeName"], "real");
  EXPECT_EQ(encoded["spec"]["hostNetwork"], true);
}

TEST(CodecTest, UnknownFieldPathsAreReportedIncludingDroppedOnes) {
  std::vector<std::string> paths;
  Node node;
  ASSERT_TRUE(DecodeJson(json::parse(R"({"spek": {}, "spec": {"podCIDR": "x",
      "taints": [{"key": "a", "effect": "NoSchedule", "colour": "red"}]},
      "metadata": {"labels": {"a": "b"}, "managedFields": []}})"),
                         node, DecodeOptions{.unknown_field_paths = &paths})
                  .ok());
  EXPECT_THAT(paths, UnorderedElementsAre("spek", "spec.podCIDR", "spec.taints[0].colour",
                                          "metadata.managedFields"));
  // Taint has no unknown slot: its extra key is reported but not kept.
  EXPECT_FALSE(EncodeJson(node)["spec"]["taints"][0].contains("colour"));
}

TEST(CodecTest, KeepUnknownFieldsCanBeTurnedOff) {
  Node node;
  ASSERT_TRUE(DecodeJson(json::parse(R"({"spec": {"podCIDR": "x"}, "other": 1})"), node,
                         DecodeOptions{.keep_unknown_fields = false})
                  .ok());
  EXPECT_TRUE(node.unknown_fields.empty());
  EXPECT_TRUE(node.spec.unknown_fields.empty());
}

TEST(CodecTest, OmitEmptyButKeepSetOptionalsAndRequiredFields) {
  Pod pod;
  pod.spec.containers.emplace_back();  // required name is written even when empty
  pod.spec.containers[0].ports.push_back(ContainerPort{.container_port = 0});
  pod.spec.priority = 0;  // a set optional is written even when zero
  pod.spec.volumes.push_back(Volume{.name = "v", .empty_dir = EmptyDirVolumeSource{}});
  const json encoded = EncodeJson(pod);
  EXPECT_EQ(encoded, json::parse(R"({"spec": {
      "containers": [{"name": "", "ports": [{"containerPort": 0}]}],
      "priority": 0,
      "volumes": [{"name": "v", "emptyDir": {}}]}})"));
}

TEST(CodecTest, DecodeAsReturnsTheValue) {
  absl::StatusOr<Node> node = DecodeAs<Node>(json::parse(R"({"spec": {"unschedulable": true}})"));
  ASSERT_TRUE(node.ok());
  EXPECT_TRUE(node->spec.unschedulable);
  EXPECT_EQ(DecodeAs<Node>(json::parse(R"({"spec": {"unschedulable": "yes"}})")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CodecTest, IntOrStringDecodesBothFormsAndScales) {
  PodDisruptionBudget pdb;
  ASSERT_TRUE(
      DecodeJson(json::parse(R"({"spec": {"minAvailable": 2, "maxUnavailable": "25%"}})"), pdb)
          .ok());
  ASSERT_TRUE(pdb.spec.min_available.has_value());
  EXPECT_TRUE(pdb.spec.min_available->is_int());
  EXPECT_EQ(pdb.spec.min_available->int_value(), 2);
  EXPECT_EQ(pdb.spec.max_unavailable->string_value(), "25%");
  EXPECT_EQ(*pdb.spec.max_unavailable->ScaledValue(10, /*round_up=*/true), 3);
  EXPECT_EQ(*pdb.spec.max_unavailable->ScaledValue(10, /*round_up=*/false), 2);
  EXPECT_EQ(*pdb.spec.min_available->ScaledValue(10, true), 2);
  EXPECT_EQ(IntOrString::FromString("ten").ScaledValue(10, true).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeJson(pdb)["spec"],
            json::parse(R"({"minAvailable": 2, "maxUnavailable": "25%"})"));
  EXPECT_THAT(Message(DecodeJson(json::parse(R"({"spec": {"minAvailable": true}})"), pdb)),
              HasSubstr("spec.minAvailable: expected integer or string, got boolean"));
}

TEST(CodecTest, EnumHelpersMapNamesBothWays) {
  EXPECT_EQ(EnumName(SelectorOperator::kGte), "Gte");
  EXPECT_EQ(ParseEnum<SelectorOperator>("Lte"), SelectorOperator::kLte);
  EXPECT_EQ(ParseEnum<SelectorOperator>("lte"), std::nullopt);
}

TEST(CodecTest, TolerationOperatorEqualIsTheImplicitDefault) {
  Pod pod;
  ASSERT_TRUE(DecodeJson(json::parse(R"({"spec": {"tolerations": [
      {"key": "a", "operator": "Equal", "value": "b"}, {"operator": "Exists"}]}})"),
                         pod)
                  .ok());
  EXPECT_THAT(pod.spec.tolerations,
              ElementsAre(Toleration{.key = "a", .op = TolerationOperator::kEqual, .value = "b"},
                          Toleration{.op = TolerationOperator::kExists}));
  EXPECT_EQ(EncodeJson(pod)["spec"]["tolerations"],
            json::parse(R"([{"key": "a", "value": "b"}, {"operator": "Exists"}])"));
}

}  // namespace
}  // namespace dovetail::apis::core
