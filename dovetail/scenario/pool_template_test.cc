#include "dovetail/scenario/pool_template.h"

#include <memory>
#include <string>

#include "dovetail/apis/core/codec.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dovetail::scenario {
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

TEST(BuildPoolTemplateTest, RequirementsIncludeLabelsAndRejectBadOnes) {
  v1::NodePool pool = Pool();
  auto t = BuildPoolTemplate(pool, {}, ResourceList{{"cpu", Quantity::FromUnits(3)}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->name, "general");
  EXPECT_EQ(t->requirements.SingleValuedLabels().at("team"), "infra");
  EXPECT_TRUE(t->requirements.Has("karpenter.sh/nodepool"));
  EXPECT_TRUE(t->requirements.Has("karpenter.kwok.sh/kwoknodeclass"));
  EXPECT_TRUE(t->requirements.Has("karpenter.sh/registered"));
  ASSERT_TRUE(t->remaining_limits.has_value());
  EXPECT_EQ(t->remaining_limits->at("cpu").MilliValue(), 3000);

  core::NodeSelectorRequirement bad;
  bad.key = "example.com/size";
  bad.op = core::SelectorOperator::kGt;
  bad.values = {"x"};
  pool.spec.template_.spec.requirements.push_back(bad);
  EXPECT_EQ(BuildPoolTemplate(pool, {}, std::nullopt).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DaemonSetPodTest, IsTheTemplateOwnedByTheDaemonSet) {
  core::DaemonSet ds;
  ds.metadata.name = "agent";
  ds.metadata.namespace_ = "kube-system";
  ds.metadata.uid = "ds-uid";
  ds.spec.template_.metadata.labels["app"] = "agent";
  ds.spec.template_.spec.node_selector["kubernetes.io/os"] = "linux";
  const std::unique_ptr<core::Pod> pod = DaemonSetPod(ds);
  EXPECT_EQ(pod->metadata.name, "agent");
  EXPECT_EQ(pod->metadata.namespace_, "kube-system");
  EXPECT_EQ(pod->metadata.uid, "daemonset-ds-uid");
  EXPECT_EQ(pod->metadata.labels.at("app"), "agent");
  ASSERT_EQ(pod->metadata.owner_references.size(), 1u);
  EXPECT_EQ(pod->metadata.owner_references[0].kind, "DaemonSet");
  EXPECT_TRUE(pod->metadata.owner_references[0].controller.value_or(false));
  EXPECT_TRUE(core::IsOwnedByDaemonSet(*pod));
  EXPECT_EQ(pod->spec.node_selector.at("kubernetes.io/os"), "linux");
}

}  // namespace
}  // namespace dovetail::scenario
