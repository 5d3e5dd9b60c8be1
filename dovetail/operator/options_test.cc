#include "dovetail/operator/options.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::op {
namespace {

using ::testing::ElementsAre;
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
  EXPECT_FALSE(o->instance_type_metrics);  // Dovetail's own, off: high cardinality
  o->cluster_name = "prod";                // the aws provider, the default, needs it
  EXPECT_TRUE(Validate(*o).ok());
}

TEST(OptionsTest, ReadsUpstreamsEnvironmentVariables) {
  auto o = FromEnv({{"BATCH_IDLE_DURATION", "2s"},
                    {"BATCH_MAX_DURATION", "1m30s"},
                    {"CLUSTER_NAME", "prod"},
                    {"FEATURE_GATES", "SpotToSpotConsolidation=true, NodeRepair=false"},
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
  EXPECT_FALSE(o->feature_gates.at("NodeRepair"));
  EXPECT_TRUE(o->disable_leader_election);
  EXPECT_EQ(o->leader_election_namespace, "karpenter");
  EXPECT_EQ(o->kube_client_qps, 50);
  EXPECT_EQ(o->kube_client_burst, 60);
  EXPECT_TRUE(Validate(*o).ok());
}

TEST(OptionsTest, MetricsBindAddressAndExplanationsAreDovetailsOwn) {
  auto defaults = FromEnv({{"CLUSTER_NAME", "prod"}});
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->metrics_bind_address, "0.0.0.0");  // every interface, as before
  EXPECT_FALSE(defaults->disruption_explanations);       // pod and PDB names: opt in
  for (const char* address : {"127.0.0.1", "::1", "::", "10.1.2.3"}) {
    auto o = FromEnv({{"CLUSTER_NAME", "prod"},
                      {"DOVETAIL_METRICS_BIND_ADDRESS", address},
                      {"DOVETAIL_DISRUPTION_EXPLANATIONS", "true"}});
    ASSERT_TRUE(o.ok()) << o.status();
    EXPECT_EQ(o->metrics_bind_address, address);
    EXPECT_TRUE(o->disruption_explanations);
    EXPECT_TRUE(Validate(*o).ok()) << address;
  }
  for (const char* address : {"localhost", "0.0.0.0:8080", "300.1.1.1", " 127.0.0.1"}) {
    auto o = FromEnv({{"CLUSTER_NAME", "prod"}, {"DOVETAIL_METRICS_BIND_ADDRESS", address}});
    ASSERT_TRUE(o.ok()) << o.status();
    absl::Status s = Validate(*o);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << address;
    EXPECT_THAT(s.message(), HasSubstr("DOVETAIL_METRICS_BIND_ADDRESS")) << address;
  }
  EXPECT_THAT(FromEnv({{"DOVETAIL_DISRUPTION_EXPLANATIONS", "yes please"}}).status().message(),
              HasSubstr("DOVETAIL_DISRUPTION_EXPLANATIONS"));
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

// What upstream v1.14's chart renders by default (charts/karpenter's Deployment): every variable
// is accepted as it is, so a cluster can switch without editing its values.
TEST(OptionsTest, UpstreamChartDefaultsAreAccepted) {
  auto o = FromEnv({{"KUBERNETES_MIN_VERSION", "1.19.0-0"},
                    {"KARPENTER_SERVICE", "karpenter"},
                    {"LOG_LEVEL", "info"},
                    {"LOG_OUTPUT_PATHS", "stdout"},
                    {"LOG_ERROR_OUTPUT_PATHS", "stderr"},
                    {"METRICS_PORT", "8080"},
                    {"HEALTH_PROBE_PORT", "8081"},
                    {"SYSTEM_NAMESPACE", "kube-system"},
                    {"CPU_REQUESTS", "1000"},
                    {"MEMORY_LIMIT", "1073741824"},
                    {"FEATURE_GATES",
                     "ReservedCapacity=true,SpotToSpotConsolidation=false,NodeRepair=false,"
                     "NodeOverlay=false,StaticCapacity=false"},
                    {"BATCH_MAX_DURATION", "10s"},
                    {"BATCH_IDLE_DURATION", "1s"},
                    {"PREFERENCE_POLICY", "Respect"},
                    {"MIN_VALUES_POLICY", "Strict"},
                    {"CLUSTER_NAME", "prod"},
                    {"ISOLATED_VPC", "false"},
                    {"EKS_CONTROL_PLANE", "false"},
                    {"VM_MEMORY_OVERHEAD_PERCENT", "0.075"},
                    {"ENABLE_ZONAL_SHIFT", "false"},
                    {"RESERVED_ENIS", "0"},
                    {"IGNORE_DRA_REQUESTS", "true"},
                    {"DISABLE_CLUSTER_STATE_OBSERVABILITY", "false"},
                    {"DISABLE_DRY_RUN", "false"},
                    {"AMI_REFRESH_INTERVAL", "1m"},
                    {"SUBNET_REFRESH_INTERVAL", "1m"},
                    {"SECURITY_GROUP_REFRESH_INTERVAL", "1m"},
                    {"AWS_FEATURE_GATES", "NodeClassCEL=false"}});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(Validate(*o).ok()) << Validate(*o);
  EXPECT_EQ(o->log_output_paths, std::vector<std::string>{"stdout"});
  EXPECT_EQ(o->log_error_output_paths, std::vector<std::string>{"stderr"});
  // MEMORY_LIMIT is set (the chart passes the container's limit): the log says it does nothing.
  EXPECT_THAT(InertSettingNotes(*o), ElementsAre(HasSubstr("MEMORY_LIMIT=1073741824")));
}

TEST(OptionsTest, ReadsTheSettingsThatChangeWhatDovetailComputes) {
  auto o = FromEnv({{"CLUSTER_NAME", "prod"},
                    {"RESERVED_ENIS", "1"},
                    {"VM_MEMORY_OVERHEAD_PERCENT", "0.05"},
                    {"ISOLATED_VPC", "true"},
                    {"EKS_CONTROL_PLANE", "true"},
                    {"AMI_REFRESH_INTERVAL", "5m"},
                    {"SUBNET_REFRESH_INTERVAL", "2m"},
                    {"DISABLE_CLUSTER_STATE_OBSERVABILITY", "true"},
                    {"DOVETAIL_INSTANCE_TYPE_METRICS", "true"},
                    {"LOG_OUTPUT_PATHS", "stdout, /var/log/dovetail.log"},
                    {"LOG_ERROR_OUTPUT_PATHS", "stderr"}});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->reserved_enis, 1);
  EXPECT_DOUBLE_EQ(o->vm_memory_overhead_percent, 0.05);
  EXPECT_TRUE(o->isolated_vpc);
  EXPECT_TRUE(o->eks_control_plane);
  EXPECT_EQ(o->ami_refresh_interval, absl::Minutes(5));
  EXPECT_EQ(o->subnet_refresh_interval, absl::Minutes(2));
  EXPECT_EQ(o->security_group_refresh_interval, absl::Minutes(1));
  EXPECT_TRUE(o->disable_cluster_state_observability);
  EXPECT_TRUE(o->instance_type_metrics);
  EXPECT_EQ(o->log_output_paths, (std::vector<std::string>{"stdout", "/var/log/dovetail.log"}));
  EXPECT_TRUE(Validate(*o).ok());
  EXPECT_TRUE(InertSettingNotes(*o).empty());
}

TEST(OptionsTest, UpstreamsRangesAreChecked) {
  auto base = [] {
    Options o;
    o.cluster_name = "prod";
    return o;
  };
  Options o = base();
  o.reserved_enis = -1;
  EXPECT_THAT(Validate(o).message(), HasSubstr("RESERVED_ENIS"));
  o = base();
  o.vm_memory_overhead_percent = -0.1;
  EXPECT_THAT(Validate(o).message(), HasSubstr("VM_MEMORY_OVERHEAD_PERCENT"));
  o.vm_memory_overhead_percent = 7.5;  // a percentage where a fraction is meant
  EXPECT_THAT(Validate(o).message(), HasSubstr("fraction"));
  o = base();
  o.ami_refresh_interval = absl::Seconds(30);
  EXPECT_THAT(Validate(o).message(), HasSubstr("AMI_REFRESH_INTERVAL"));
  EXPECT_THAT(FromEnv({{"RESERVED_ENIS", "two"}}).status().message(), HasSubstr("RESERVED_ENIS"));
  EXPECT_THAT(FromEnv({{"VM_MEMORY_OVERHEAD_PERCENT", "7.5%"}}).status().message(),
              HasSubstr("VM_MEMORY_OVERHEAD_PERCENT"));
  EXPECT_THAT(FromEnv({{"ISOLATED_VPC", "yes please"}}).status().message(),
              HasSubstr("ISOLATED_VPC"));
  EXPECT_THAT(FromEnv({{"DOVETAIL_INSTANCE_TYPE_METRICS", "on"}}).status().message(),
              HasSubstr("DOVETAIL_INSTANCE_TYPE_METRICS"));
  EXPECT_THAT(FromEnv({{"SUBNET_REFRESH_INTERVAL", "soon"}}).status().message(),
              HasSubstr("SUBNET_REFRESH_INTERVAL"));
  EXPECT_THAT(FromEnv({{"AWS_FEATURE_GATES", "NodeClassCEL"}}).status().message(),
              HasSubstr("AWS_FEATURE_GATES"));
  EXPECT_THAT(FromEnv({{"LOG_OUTPUT_PATHS", " , "}}).status().message(),
              HasSubstr("LOG_OUTPUT_PATHS"));
}

// Upstream settings that ask for what Dovetail does not do stop it with a message naming them,
// instead of being silently ignored.
TEST(OptionsTest, WhatDovetailDoesNotDoIsRefused) {
  const std::pair<std::map<std::string, std::string>, std::string> cases[] = {
      {{{"ENABLE_ZONAL_SHIFT", "true"}}, "ENABLE_ZONAL_SHIFT"},
      {{{"ENABLE_PROFILING", "true"}}, "ENABLE_PROFILING"},
      {{{"IGNORE_DRA_REQUESTS", "false"}}, "IGNORE_DRA_REQUESTS"},
      {{{"FEATURE_GATES", "NodeRepair=true"}}, "NodeRepair=true"},
      {{{"FEATURE_GATES", "NodeOverlay=true"}}, "NodeOverlay=true"},
      {{{"FEATURE_GATES", "StaticCapacity=true"}}, "StaticCapacity=true"},
      {{{"FEATURE_GATES", "CapacityBuffer=true"}}, "CapacityBuffer=true"},
      {{{"FEATURE_GATES", "PodDeletionCostManagement=true"}}, "PodDeletionCostManagement=true"},
      {{{"AWS_FEATURE_GATES", "NodeClassCEL=true"}}, "NodeClassCEL=true"},
  };
  for (const auto& [env, name] : cases) {
    auto with_name = env;
    with_name["CLUSTER_NAME"] = "prod";
    auto o = FromEnv(with_name);
    ASSERT_TRUE(o.ok()) << o.status();
    EXPECT_THAT(Validate(*o).message(), HasSubstr(name)) << name;
  }
}

TEST(OptionsTest, SettingsThatChangeNothingAreNamedAtStart) {
  Options o;
  o.disable_controller_warmup = false;
  o.cpu_requests = 4000;
  o.disable_dry_run = true;
  EXPECT_THAT(InertSettingNotes(o),
              ElementsAre(HasSubstr("DISABLE_CONTROLLER_WARMUP"), HasSubstr("CPU_REQUESTS=4000"),
                          HasSubstr("DISABLE_DRY_RUN")));
}

}  // namespace
}  // namespace dovetail::op
