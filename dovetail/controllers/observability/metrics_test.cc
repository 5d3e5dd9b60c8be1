#include <sstream>
#include <string>

#include "dovetail/controllers/observability/node_metrics.h"
#include "dovetail/controllers/observability/pod_metrics.h"
#include "dovetail/state/state_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::controllers::observability {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace st = state::testing;

// The exposition line of `family` whose labels include every `parts`, or "".
std::string Line(const std::string& text, const std::string& family,
                 std::initializer_list<std::string> parts) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(family + "{", 0) != 0 && line.rfind(family + " ", 0) != 0) continue;
    bool all = true;
    for (const std::string& p : parts) all = all && line.find(p) != std::string::npos;
    if (all) return line;
  }
  return "";
}

double Value(const std::string& line) { return std::stod(line.substr(line.rfind(' ') + 1)); }

TEST(NodeMetricsTest, ExportsAllocatableRequestsLimitsOverheadAndUtilizationPerNode) {
  metrics::Registry registry;
  NodeMetrics metrics(registry);
  FakeClock clock;
  state::Cluster cluster(clock);
  st::Objects objects;
  nlohmann::json node = st::NodeJson("n1", "kwok://n1", "4", "16Gi",
                                     {{"karpenter.sh/nodepool", "default"},
                                      {"topology.kubernetes.io/zone", "zone-a"},
                                      {"node.kubernetes.io/instance-type", "c7k.xlarge"}});
  node["status"]["capacity"]["cpu"] = "4";
  node["status"]["allocatable"]["cpu"] = "3800m";
  node["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z";
  cluster.UpdateNode(objects.Node(node));
  cluster.UpdateNodeClaim(objects.NodeClaim(st::NodeClaimJson("c1", "default", "kwok://n1")));
  nlohmann::json web = st::PodJson("ns", "web", "n1", "1");
  web["spec"]["containers"][0]["resources"]["limits"] = {{"cpu", "2"}, {"memory", "1Gi"}};
  cluster.UpdatePod(objects.Pod(web));
  nlohmann::json ds = st::PodJson("ns", "agent", "n1", "500m", "64Mi");
  ds["metadata"]["ownerReferences"] = {
      {{"apiVersion", "apps/v1"}, {"kind", "DaemonSet"}, {"name", "agent"}, {"uid", "ds"}}};
  ds["spec"]["containers"][0]["resources"]["limits"] = {{"memory", "128Mi"}};
  cluster.UpdatePod(objects.Pod(ds));

  metrics.Collect(cluster, absl::FromUnixSeconds(1767225600 + 3600));  // 2026-01-01T01:00:00Z
  const std::string text = registry.Expose();
  const std::string n1 = "node_name=\"n1\"";
  EXPECT_EQ(Value(Line(text, "karpenter_nodes_allocatable", {n1, "resource_type=\"cpu\""})), 3.8);
  EXPECT_EQ(Value(Line(text, "karpenter_nodes_system_overhead", {n1, "resource_type=\"cpu\""})),
            0.2);
  EXPECT_EQ(Value(Line(text, "karpenter_nodes_total_pod_requests", {n1, "resource_type=\"cpu\""})),
            1.5);
  EXPECT_EQ(Value(Line(text, "karpenter_nodes_total_pod_limits", {n1, "resource_type=\"cpu\""})),
            2);
  EXPECT_EQ(
      Value(Line(text, "karpenter_nodes_total_daemon_requests", {n1, "resource_type=\"cpu\""})),
      0.5);
  EXPECT_EQ(
      Value(Line(text, "karpenter_nodes_total_daemon_limits", {n1, "resource_type=\"memory\""})),
      128.0 * 1024 * 1024);
  const std::string lifetime = Line(text, "karpenter_nodes_current_lifetime_seconds", {n1});
  EXPECT_EQ(Value(lifetime), 3600);
  // The well-known labels, with "" for those the node lacks; managed: it has a NodeClaim.
  EXPECT_THAT(lifetime, HasSubstr("nodepool=\"default\""));
  EXPECT_THAT(lifetime, HasSubstr("zone=\"zone-a\""));
  EXPECT_THAT(lifetime, HasSubstr("instance_type=\"c7k.xlarge\""));
  EXPECT_THAT(lifetime, HasSubstr("capacity_reservation_id=\"\""));
  EXPECT_THAT(lifetime, HasSubstr("managed=\"true\""));
  EXPECT_THAT(lifetime, Not(HasSubstr("resource_type")));
  EXPECT_NEAR(Value(Line(text, "karpenter_cluster_utilization_percent", {"\"cpu\""})),
              100 * 1.5 / 3.8, 1e-9);

  metrics.Clear();
  EXPECT_EQ(Line(registry.Expose(), "karpenter_nodes_allocatable", {}), "");
}

TEST(PodMetricsTest, StateUnboundUnstartedAndTheDurationsOfTransitions) {
  metrics::Registry registry;
  PodMetrics metrics(registry);
  st::Objects objects;
  state::PodSchedulingTimes times;
  const absl::Time created = absl::FromUnixSeconds(1767225600);  // 2026-01-01T00:00:00Z
  nlohmann::json pending = st::PodJson("ns", "web", "", "1");
  pending["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z";
  pending["metadata"]["ownerReferences"] = {
      {{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "web-1"}, {"uid", "rs"}}};
  std::vector<state::PodPtr> pods = {objects.Pod(pending)};
  nlohmann::json node = st::NodeJson(
      "n1", "kwok://n1", "4", "16Gi",
      {{"karpenter.sh/nodepool", "default"}, {"topology.kubernetes.io/zone", "zone-a"}});
  std::vector<state::NodePtr> nodes = {objects.Node(node)};

  // Acked at +1 s, not decided yet: undecided; pending and unbound since creation.
  times.Ack({"ns/web"}, created + absl::Seconds(1));
  metrics.Collect(pods, nodes, times, created + absl::Seconds(4));
  std::string text = registry.Expose();
  EXPECT_EQ(Value(Line(text, "karpenter_pods_provisioning_scheduling_undecided_time_seconds",
                       {"name=\"web\""})),
            3);
  EXPECT_EQ(Value(Line(text, "karpenter_pods_unbound_time_seconds", {"name=\"web\""})), 4);
  EXPECT_EQ(Value(Line(text, "karpenter_pods_unstarted_time_seconds", {"name=\"web\""})), 4);
  const std::string state = Line(text, "karpenter_pods_state", {"name=\"web\""});
  EXPECT_THAT(state, HasSubstr("owner=\"/apis/apps/v1/namespaces/ns/replicasets/web-1\""));
  EXPECT_THAT(state, HasSubstr("scheduled=\"false\""));
  EXPECT_THAT(state, HasSubstr("phase=\"Pending\""));

  // Placed at +5 s: decided, provisioning times count from there.
  times.Decide({"ns/web"}, {}, created + absl::Seconds(5));
  metrics.Collect(pods, nodes, times, created + absl::Seconds(6));
  text = registry.Expose();
  EXPECT_EQ(Line(text, "karpenter_pods_provisioning_scheduling_undecided_time_seconds", {}), "");
  EXPECT_EQ(Value(Line(text, "karpenter_pods_provisioning_unbound_time_seconds", {"name=\"web\""})),
            1);

  // Bound at +8 s and Ready at +20 s: every duration observed once, the gauges gone.
  nlohmann::json running = pending;
  running["spec"]["nodeName"] = "n1";
  running["status"] = {
      {"phase", "Running"},
      {"conditions",
       {{{"type", "PodScheduled"},
         {"status", "True"},
         {"lastTransitionTime", "2026-01-01T00:00:08Z"}},
        {{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", "2026-01-01T00:00:20Z"}}}}};
  pods = {objects.Pod(running)};
  metrics.Collect(pods, nodes, times, created + absl::Seconds(30));
  metrics.Collect(pods, nodes, times, created + absl::Seconds(40));
  text = registry.Expose();
  EXPECT_THAT(text, HasSubstr("karpenter_pods_bound_duration_seconds_sum 8\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_pods_bound_duration_seconds_count 1\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_pods_provisioning_bound_duration_seconds_sum 3\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_pods_startup_duration_seconds_sum 20\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_pods_startup_duration_seconds_count 1\n"));
  EXPECT_THAT(text, HasSubstr("karpenter_pods_provisioning_startup_duration_seconds_sum 15\n"));
  EXPECT_EQ(Line(text, "karpenter_pods_unbound_time_seconds", {}), "");
  EXPECT_EQ(Line(text, "karpenter_pods_unstarted_time_seconds", {}), "");
  EXPECT_EQ(times.AckTime("ns/web"), std::nullopt);  // started: forgotten
  const std::string bound = Line(text, "karpenter_pods_state", {"name=\"web\""});
  EXPECT_THAT(bound, HasSubstr("node=\"n1\""));
  EXPECT_THAT(bound, HasSubstr("nodepool=\"default\""));
  EXPECT_THAT(bound, HasSubstr("zone=\"zone-a\""));
  EXPECT_THAT(bound, HasSubstr("ready=\"true\""));
  EXPECT_THAT(bound, HasSubstr("managed=\"true\""));

  // Gone: its series go.
  metrics.Collect({}, nodes, times, created + absl::Seconds(50));
  EXPECT_EQ(Line(registry.Expose(), "karpenter_pods_state", {}), "");
}

}  // namespace
}  // namespace dovetail::controllers::observability
