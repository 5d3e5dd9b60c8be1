#include "dovetail/scenario/pool_template.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace dovetail::scenario {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;

// A pool labelled team=infra with a kwok node class and one custom requirement.
v1::NodePool Pool() {
  v1::NodePool pool;
  pool.metadata.name = "general";
  pool.spec.template_.metadata.labels["team"] = "infra";
  v1::NodeClassReference ref;
  ref.group = "karpenter.kwok.sh";
  ref.kind = "KWOKNodeClass";
  ref.name = "default";
  pool.spec.template_.spec.node_class_ref = ref;
  core::NodeSelectorRequirement tier;
  tier.key = "example.com/tier";
  tier.op = core::SelectorOperator::kExists;
  pool.spec.template_.spec.requirements.push_back(tier);
  return pool;
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

TEST(BuildPoolTemplateTest, TheNodeOverheadAnnotationIsAPriceOrAnError) {
  v1::NodePool pool = Pool();
  EXPECT_EQ(BuildPoolTemplate(pool, {}, std::nullopt)->node_overhead_per_hour, 0);
  pool.metadata.annotations[std::string(kNodeOverheadAnnotationKey)] = "0.012";
  EXPECT_DOUBLE_EQ(BuildPoolTemplate(pool, {}, std::nullopt)->node_overhead_per_hour, 0.012);
  for (const char* bad : {"", "ten cents", "-0.01", "1e9", "nan", "inf"}) {
    pool.metadata.annotations[std::string(kNodeOverheadAnnotationKey)] = bad;
    absl::StatusOr<solver::PoolTemplate> t = BuildPoolTemplate(pool, {}, std::nullopt);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(t.status().message()).find(kNodeOverheadAnnotationKey), std::string::npos)
        << t.status();
  }
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
  EXPECT_EQ(pod->metadata.owner_references[0].api_version, "apps/v1");
  EXPECT_EQ(pod->spec.node_selector.at("kubernetes.io/os"), "linux");
}

}  // namespace
}  // namespace dovetail::scenario
