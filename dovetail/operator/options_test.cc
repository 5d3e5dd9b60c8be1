#include "dovetail/operator/options.h"

#include <map>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::op {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<Options> FromEnv(std::map<std::string, std::string> env) {
  return OptionsFromEnvironment([&](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}

TEST(OptionsTest, DefaultsAreUpstreams) {
  auto o = FromEnv({});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->batch_idle_duration, absl::Seconds(1));
  EXPECT_EQ(o->batch_max_duration, absl::Seconds(10));
  EXPECT_EQ(o->preference_policy, "Respect");
  EXPECT_EQ(o->min_values_policy, "Strict");
  EXPECT_EQ(o->kube_client_qps, 200);
  EXPECT_EQ(o->kube_client_burst, 300);
  EXPECT_FALSE(o->disable_leader_election);
  EXPECT_EQ(o->leader_election_name, "karpenter-leader-election");
  EXPECT_FALSE(o->feature_gates.at("SpotToSpotConsolidation"));
  EXPECT_TRUE(o->feature_gates.at("ReservedCapacity"));
  o->cluster_name = "prod";  // the aws provider, the default, needs it
  EXPECT_TRUE(Validate(*o).ok());
}

TEST(OptionsTest, ReadsUpstreamsEnvironmentVariables) {
  auto o = FromEnv({{"BATCH_IDLE_DURATION", "2s"},
                    {"BATCH_MAX_DURATION", "1m30s"},
                    {"CLUSTER_NAME", "prod"},
                    {"FEATURE_GATES", "SpotToSpotConsolidation=true, NodeRepair=true"},
                    {"DISABLE_LEADER_ELECTION", "true"},
                    {"SYSTEM_NAMESPACE", "karpenter"},
                    {"KUBE_CLIENT_QPS", "50"},
                    {"KUBE_CLIENT_BURST", "60"},
                    {"PREFERENCE_POLICY", "Ignore"},
                    {"MIN_VALUES_POLICY", "BestEffort"}});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->batch_idle_duration, absl::Seconds(2));
  EXPECT_EQ(o->batch_max_duration, absl::Seconds(90));
  EXPECT_EQ(o->cluster_name, "prod");
  EXPECT_TRUE(o->feature_gates.at("SpotToSpotConsolidation"));
  EXPECT_TRUE(o->feature_gates.at("NodeRepair"));
  EXPECT_TRUE(o->disable_leader_election);
  EXPECT_EQ(o->leader_election_namespace, "karpenter");
  EXPECT_EQ(o->kube_client_qps, 50);
  EXPECT_EQ(o->kube_client_burst, 60);
  EXPECT_TRUE(Validate(*o).ok());
}

TEST(OptionsTest, BadValuesNameTheVariable) {
  auto d = FromEnv({{"BATCH_MAX_DURATION", "ten seconds"}});
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("BATCH_MAX_DURATION"));
  auto b = FromEnv({{"DISABLE_LEADER_ELECTION", "maybe"}});
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().message(), HasSubstr("DISABLE_LEADER_ELECTION"));
  auto g = FromEnv({{"FEATURE_GATES", "Drift"}});
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("FEATURE_GATES"));
  auto q = FromEnv({{"KUBE_CLIENT_QPS", "fast"}});
  ASSERT_FALSE(q.ok());
}

TEST(OptionsTest, ValidateRejectsUnknownPoliciesAndInvertedBatchWindows) {
  Options o;
  o.cloud_provider = "kwok";
  o.preference_policy = "Sometimes";
  EXPECT_THAT(Validate(o).message(), HasSubstr("PREFERENCE_POLICY"));
  o = Options{.cloud_provider = "kwok"};
  o.batch_idle_duration = absl::Seconds(20);
  EXPECT_THAT(Validate(o).message(), HasSubstr("BATCH_IDLE_DURATION"));
  o = Options{.cloud_provider = "kwok"};
  o.cloud_provider = "gcp";
  EXPECT_THAT(Validate(o).message(), HasSubstr("unknown cloud provider"));
}

TEST(OptionsTest, AwsNeedsAClusterNameAndReadsItsSettings) {
  auto o = FromEnv({{"DOVETAIL_CLOUD_PROVIDER", "aws"},
                    {"CLUSTER_ENDPOINT", "https://example.eks.amazonaws.com"},
                    {"INTERRUPTION_QUEUE", "dovetail-it"}});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->cloud_provider, "aws");
  EXPECT_EQ(o->cluster_endpoint, "https://example.eks.amazonaws.com");
  EXPECT_EQ(o->interruption_queue, "dovetail-it");
  EXPECT_THAT(Validate(*o).message(), HasSubstr("CLUSTER_NAME"));
  o->cluster_name = "prod";
  EXPECT_TRUE(Validate(*o).ok());
  // As the chart and upstream: a real cluster never gets fake Nodes by default.
  EXPECT_EQ(Options{}.cloud_provider, "aws");
  EXPECT_TRUE(Options{}.interruption_queue.empty());
}

}  // namespace
}  // namespace dovetail::op
