// StatusConditionMetrics: the operator_* families against upstream's inventory
// (test/testdata/upstream-metrics.json: names, types, label names in order, buckets), and their
// values for objects observed, changed, deleted and gone.

#include "dovetail/controllers/observability/status_condition_metrics_controller.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "dovetail/metrics/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dovetail::controllers::observability {
namespace {

using ::testing::ElementsAreArray;
namespace core = apis::core;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

core::Condition Cond(std::string type, core::ConditionStatus status, std::string reason,
                     absl::Time transition) {
  core::Condition c;
  c.type = std::move(type);
  c.status = status;
  c.reason = std::move(reason);
  c.last_transition_time = transition;
  return c;
}

apis::v1::NodeClaim Claim(const std::string& name, std::vector<core::Condition> conditions) {
  apis::v1::NodeClaim claim;
  claim.metadata.name = name;
  claim.metadata.labels = {{"karpenter.sh/nodepool", "default"},
                           {"karpenter.k8s.aws/ec2nodeclass", "gp"},
                           {"team", "a"}};
  claim.status.conditions = std::move(conditions);
  return claim;
}

apis::v1::NodePool Pool(const std::string& name, std::vector<core::Condition> conditions) {
  apis::v1::NodePool pool;
  pool.metadata.name = name;
  pool.status.conditions = std::move(conditions);
  return pool;
}

apis::aws::v1::EC2NodeClass NodeClass(const std::string& name,
                                      std::vector<core::Condition> conditions) {
  apis::aws::v1::EC2NodeClass nc;
  nc.metadata.name = name;
  nc.status.conditions = std::move(conditions);
  return nc;
}

// Interned strings for the compact Node (objects.h): pointers that outlive the test.
const std::string* Interned(const std::string& s) {
  static auto* pool = new std::set<std::string>();
  return &*pool->insert(s).first;
}

kube::NodeInfo Node(const std::string& name, core::ConditionStatus ready,
                    std::optional<absl::Time> ready_transition) {
  kube::NodeInfo node;
  node.meta.namespace_ = Interned("");
  node.meta.name = name;
  node.meta.labels = {{Interned("karpenter.sh/nodepool"), "default"},
                      {Interned("karpenter.sh/initialized"), "true"}};
  node.ready = ready;
  node.ready_transition = ready_transition;
  node.conditions = {{Interned("MemoryPressure"), core::ConditionStatus::kFalse},
                     {Interned("Ready"), ready}};
  return node;
}

class StatusConditionMetricsTest : public ::testing::Test {
 protected:
  metrics::Gauge& G(const std::string& name) { return registry_.NewGauge(name, ""); }
  metrics::Counter& C(const std::string& name) { return registry_.NewCounter(name, ""); }
  metrics::Histogram& H(const std::string& name) {
    return registry_.NewHistogram(name, "", {}, {});
  }
  // Every sample line of `name` (exactly, or name_bucket/_sum/_count), from the exposition.
  std::vector<std::string> Samples(const std::string& name) {
    std::vector<std::string> out;
    for (absl::string_view line : absl::StrSplit(registry_.Expose(), '\n')) {
      if (absl::StartsWith(line, name + "{") || absl::StartsWith(line, name + " ")) {
        out.emplace_back(line);
      }
    }
    return out;
  }
  // Observes `object`, then the same object with its first condition Ready=True since `ready_at`
  // and deleted at kT0 + 4 s.
  template <typename T>
  void ObserveReadyThenDeleted(ConditionKind kind, ConditionedObject (*from)(const T&), T& object,
                               absl::Time ready_at) {
    metrics_.Observe(kind, from(object));
    object.status.conditions[0] = Cond("Ready", core::ConditionStatus::kTrue, "Ready", ready_at);
    object.metadata.deletion_timestamp = kT0 + absl::Seconds(4);
    metrics_.Observe(kind, from(object));
  }

  metrics::Registry registry_;
  StatusConditionMetrics metrics_{registry_};
};

// One object of every kind, deleted and changed, so every family has a series; then each
// upstream operator_* family (but CapacityBuffer's) must be exposed with upstream's type, label
// names in upstream's order and, for histograms, upstream's buckets.
TEST_F(StatusConditionMetricsTest, FamiliesMatchUpstreamInventory) {
  auto claim = Claim("c1", {Cond("Ready", core::ConditionStatus::kUnknown, "Launching", kT0)});
  ObserveReadyThenDeleted(ConditionKind::kNodeClaim, FromNodeClaim, claim, kT0 + absl::Seconds(3));
  auto pool = Pool("p1", {Cond("Ready", core::ConditionStatus::kFalse, "NodeClassNotReady", kT0)});
  ObserveReadyThenDeleted(ConditionKind::kNodePool, FromNodePool, pool, kT0 + absl::Seconds(1));
  auto nc = NodeClass("n1", {Cond("Ready", core::ConditionStatus::kFalse, "AMIsNotFound", kT0)});
  ObserveReadyThenDeleted(ConditionKind::kEC2NodeClass, FromEC2NodeClass, nc,
                          kT0 + absl::Seconds(2));

  kube::NodeInfo node = Node("n1", core::ConditionStatus::kFalse, kT0);
  metrics_.Observe(ConditionKind::kNode, FromNode(node));
  node = Node("n1", core::ConditionStatus::kTrue, kT0 + absl::Seconds(5));
  node.meta.deletion = kT0 + absl::Seconds(6);
  metrics_.Observe(ConditionKind::kNode, FromNode(node));

  metrics_.Export(kT0 + absl::Seconds(10));
  // Gauges are exposed before the objects go; the termination histograms after.
  const std::string before = registry_.Expose();
  metrics_.Gone(ConditionKind::kNodeClaim, FromNodeClaim(claim), kT0 + absl::Seconds(20));
  metrics_.Gone(ConditionKind::kNodePool, FromNodePool(pool), kT0 + absl::Seconds(20));
  metrics_.Gone(ConditionKind::kEC2NodeClass, FromEC2NodeClass(nc), kT0 + absl::Seconds(20));
  metrics_.Gone(ConditionKind::kNode, FromNode(node), kT0 + absl::Seconds(20));
  const std::string after = registry_.Expose();

  std::ifstream in(DOVETAIL_TESTDATA_DIR "/upstream-metrics.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json inventory = nlohmann::json::parse(in);
  int checked = 0;
  for (const nlohmann::json& family : inventory) {
    const std::string name = family["name"];
    if (!absl::StartsWith(name, "operator_")) continue;
    const std::string text = absl::StrContains(name, "termination_duration") ? after : before;
    if (absl::StartsWith(name, "operator_capacitybuffer_")) {
      EXPECT_FALSE(absl::StrContains(text, name)) << name << " is exported";
      continue;
    }
    ++checked;
    const std::string type = family["type"];
    EXPECT_TRUE(absl::StrContains(text, "# TYPE " + name + " " + type + "\n")) << name;
    const std::string sample = type == "histogram" ? name + "_bucket" : name;
    std::vector<std::string> label_names;
    std::vector<double> buckets;
    bool found = false;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (!absl::StartsWith(line, sample + "{") && !absl::StartsWith(line, sample + " ")) continue;
      std::vector<std::string> names;
      std::string le;
      const size_t open = line.find('{');
      if (open != std::string_view::npos) {
        const absl::string_view body = line.substr(open + 1, line.find('}') - open - 1);
        for (absl::string_view pair : absl::StrSplit(body, "\",")) {
          const size_t eq = pair.find('=');
          const std::string key(pair.substr(0, eq));
          if (key == "le") {
            le = std::string(absl::StripSuffix(pair.substr(eq + 2), "\""));
          } else {
            names.push_back(key);
          }
        }
      }
      if (!found) label_names = names;
      found = true;
      EXPECT_EQ(names, label_names) << line;
      if (type == "histogram" && le != "+Inf" && names == label_names &&
          buckets.size() < family["buckets"].size()) {
        buckets.push_back(std::stod(le));
      }
    }
    ASSERT_TRUE(found) << "no sample of " << name;
    EXPECT_EQ(label_names, family["labels"].get<std::vector<std::string>>()) << name;
    if (type == "histogram") {
      EXPECT_THAT(buckets, ElementsAreArray(family["buckets"].get<std::vector<double>>())) << name;
    }
  }
  EXPECT_EQ(checked, 4 * 6 + 6);
}

TEST_F(StatusConditionMetricsTest, CountAndCurrentStatusSecondsFollowTheConditions) {
  auto claim = Claim("c1", {Cond("Launched", core::ConditionStatus::kTrue, "Launched", kT0),
                            Cond("Ready", core::ConditionStatus::kUnknown, "Registering", kT0)});
  metrics_.Observe(ConditionKind::kNodeClaim, FromNodeClaim(claim));
  metrics_.Export(kT0 + absl::Seconds(30));
  const metrics::LabelValues launched = {"", "c1", "Launched", "True", "Launched", "gp", "default"};
  const metrics::LabelValues unknown = {"",   "c1",     "Ready", "Unknown", "Registering",
                                        "gp", "default"};
  EXPECT_EQ(G("operator_nodeclaim_status_condition_count").Value(launched), 1);
  EXPECT_EQ(G("operator_nodeclaim_status_condition_count").Value(unknown), 1);
  EXPECT_EQ(G("operator_nodeclaim_status_condition_current_status_seconds").Value(launched), 30);
  EXPECT_EQ(G("operator_status_condition_count")
                .Value({"", "c1", "Ready", "Unknown", "Registering", "karpenter.sh", "NodeClaim"}),
            1);
  EXPECT_EQ(G("operator_status_condition_current_status_seconds")
                .Value({"", "c1", "Launched", "True", "Launched", "karpenter.sh", "NodeClaim"}),
            30);

  // Ready turns True: the Unknown series goes, a True one with its own age appears.
  claim.status.conditions[1] =
      Cond("Ready", core::ConditionStatus::kTrue, "Ready", kT0 + absl::Seconds(40));
  metrics_.Observe(ConditionKind::kNodeClaim, FromNodeClaim(claim));
  metrics_.Export(kT0 + absl::Seconds(45));
  EXPECT_EQ(Samples("operator_nodeclaim_status_condition_count").size(), 2u);
  EXPECT_EQ(G("operator_nodeclaim_status_condition_count").Value(unknown), 0);
  EXPECT_EQ(G("operator_nodeclaim_status_condition_current_status_seconds")
                .Value({"", "c1", "Ready", "True", "Ready", "gp", "default"}),
            5);
  EXPECT_EQ(G("operator_nodeclaim_status_condition_current_status_seconds").Value(launched), 45);

  // A NodePool's series carry no object labels; the kind-less ones say NodePool.
  metrics_.Observe(
      ConditionKind::kNodePool,
      FromNodePool(Pool("p1", {Cond("Ready", core::ConditionStatus::kTrue, "Ready", kT0)})));
  metrics_.Export(kT0 + absl::Seconds(60));
  EXPECT_EQ(G("operator_nodepool_status_condition_current_status_seconds")
                .Value({"", "p1", "Ready", "True", "Ready"}),
            60);
  EXPECT_EQ(G("operator_status_condition_count")
                .Value({"", "p1", "Ready", "True", "Ready", "karpenter.sh", "NodePool"}),
            1);
}

TEST_F(StatusConditionMetricsTest, TransitionsAreCountedAndTimedAgainstTheLastStateSeen) {
  // First sight: True and False count (upstream reads an unseen condition as Unknown), Unknown
  // does not; nothing is timed.
  auto nc = NodeClass("n1", {Cond("AMIsReady", core::ConditionStatus::kTrue, "AMIsReady", kT0),
                             Cond("Ready", core::ConditionStatus::kUnknown, "Reconciling", kT0)});
  metrics_.Observe(ConditionKind::kEC2NodeClass, FromEC2NodeClass(nc));
  metrics::Counter& total = C("operator_ec2nodeclass_status_condition_transitions_total");
  metrics::Histogram& seconds = H("operator_ec2nodeclass_status_condition_transition_seconds");
  EXPECT_EQ(total.Value({"AMIsReady", "True", "AMIsReady"}), 1);
  EXPECT_EQ(total.Value({"Ready", "Unknown", "Reconciling"}), 0);
  EXPECT_EQ(seconds.Count({"AMIsReady", "Unknown"}), 0u);

  // The same state again: nothing.
  metrics_.Observe(ConditionKind::kEC2NodeClass, FromEC2NodeClass(nc));
  EXPECT_EQ(total.Value({"AMIsReady", "True", "AMIsReady"}), 1);

  // Ready Unknown -> False after 90 s: counted with the new reason, timed under the old status.
  nc.status.conditions[1] =
      Cond("Ready", core::ConditionStatus::kFalse, "AMIsNotReady", kT0 + absl::Seconds(90));
  metrics_.Observe(ConditionKind::kEC2NodeClass, FromEC2NodeClass(nc));
  EXPECT_EQ(total.Value({"Ready", "False", "AMIsNotReady"}), 1);
  EXPECT_EQ(seconds.Count({"Ready", "Unknown"}), 1u);
  EXPECT_EQ(seconds.Sum({"Ready", "Unknown"}), 90);
  EXPECT_EQ(C("operator_status_condition_transitions_total")
                .Value({"Ready", "False", "AMIsNotReady", "karpenter.k8s.aws", "EC2NodeClass"}),
            1);
  EXPECT_EQ(H("operator_status_condition_transition_seconds")
                .Sum({"Ready", "Unknown", "karpenter.k8s.aws", "EC2NodeClass"}),
            90);

  // A reason change alone is no transition (upstream compares statuses).
  nc.status.conditions[1].reason = "SubnetsNotFound";
  metrics_.Observe(ConditionKind::kEC2NodeClass, FromEC2NodeClass(nc));
  EXPECT_EQ(total.Value({"Ready", "False", "SubnetsNotFound"}), 0);

  // NodeClaims carry their object labels on both.
  auto claim = Claim("c1", {Cond("Ready", core::ConditionStatus::kFalse, "NotReady", kT0)});
  metrics_.Observe(ConditionKind::kNodeClaim, FromNodeClaim(claim));
  claim.status.conditions[0] =
      Cond("Ready", core::ConditionStatus::kTrue, "Ready", kT0 + absl::Seconds(12));
  metrics_.Observe(ConditionKind::kNodeClaim, FromNodeClaim(claim));
  EXPECT_EQ(C("operator_nodeclaim_status_condition_transitions_total")
                .Value({"Ready", "True", "Ready", "gp", "default"}),
            1);
  EXPECT_EQ(H("operator_nodeclaim_status_condition_transition_seconds")
                .Sum({"Ready", "False", "gp", "default"}),
            12);
}

TEST_F(StatusConditionMetricsTest, NodesHaveNoReasonsAndOnlyReadyIsTimed) {
  metrics_.Observe(ConditionKind::kNode, FromNode(Node("n1", core::ConditionStatus::kFalse, kT0)));
  metrics_.Observe(ConditionKind::kNode,
                   FromNode(Node("n1", core::ConditionStatus::kTrue, kT0 + absl::Seconds(20))));
  metrics_.Export(kT0 + absl::Seconds(50));
  const metrics::LabelValues ready = {"", "n1", "Ready", "True", "", "", "default", "true"};
  EXPECT_EQ(G("operator_node_status_condition_count").Value(ready), 1);
  EXPECT_EQ(G("operator_node_status_condition_count")
                .Value({"", "n1", "MemoryPressure", "False", "", "", "default", "true"}),
            1);
  EXPECT_EQ(G("operator_node_status_condition_current_status_seconds").Value(ready), 30);
  // MemoryPressure's lastTransitionTime is not kept by the compact Node: no age series.
  EXPECT_EQ(Samples("operator_node_status_condition_current_status_seconds").size(), 1u);
  EXPECT_EQ(C("operator_node_status_condition_transitions_total")
                .Value({"Ready", "True", "", "", "default", "true"}),
            1);
  EXPECT_EQ(H("operator_node_status_condition_transition_seconds")
                .Sum({"Ready", "False", "", "default", "true"}),
            20);
  // Upstream emits no kind-less series for Nodes.
  EXPECT_TRUE(Samples("operator_status_condition_count").empty());
  EXPECT_TRUE(Samples("operator_status_condition_transitions_total").empty());
}

TEST_F(StatusConditionMetricsTest, TerminationIsTimedFromTheDeletionTimestamp) {
  auto claim = Claim("c1", {Cond("Ready", core::ConditionStatus::kTrue, "Ready", kT0)});
  metrics_.Observe(ConditionKind::kNodeClaim, FromNodeClaim(claim));
  metrics_.Export(kT0 + absl::Seconds(1));
  EXPECT_TRUE(Samples("operator_nodeclaim_termination_current_time_seconds").empty());

  claim.metadata.deletion_timestamp = kT0 + absl::Seconds(100);
  metrics_.Observe(ConditionKind::kNodeClaim, FromNodeClaim(claim));
  metrics_.Export(kT0 + absl::Seconds(130));
  EXPECT_EQ(
      G("operator_nodeclaim_termination_current_time_seconds").Value({"", "c1", "gp", "default"}),
      30);
  EXPECT_EQ(
      G("operator_termination_current_time_seconds").Value({"", "c1", "karpenter.sh", "NodeClaim"}),
      30);

  metrics_.Gone(ConditionKind::kNodeClaim, FromNodeClaim(claim), kT0 + absl::Seconds(400));
  EXPECT_EQ(H("operator_nodeclaim_termination_duration_seconds").Count({"gp", "default"}), 1u);
  EXPECT_EQ(H("operator_nodeclaim_termination_duration_seconds").Sum({"gp", "default"}), 300);
  EXPECT_EQ(H("operator_termination_duration_seconds").Sum({"karpenter.sh", "NodeClaim"}), 300);
  metrics_.Export(kT0 + absl::Seconds(401));
  EXPECT_TRUE(Samples("operator_nodeclaim_termination_current_time_seconds").empty());
  EXPECT_TRUE(Samples("operator_nodeclaim_status_condition_count").empty());

  // Gone without ever being deleting (no deletionTimestamp seen): not a termination.
  metrics_.Observe(ConditionKind::kNodePool, FromNodePool(Pool("p1", {})));
  metrics_.Gone(ConditionKind::kNodePool, FromNodePool(Pool("p1", {})), kT0);
  EXPECT_EQ(H("operator_nodepool_termination_duration_seconds").Count({}), 0u);
}

TEST_F(StatusConditionMetricsTest, ClearForgetsObjectsAndGauges) {
  auto pool = Pool("p1", {Cond("Ready", core::ConditionStatus::kTrue, "Ready", kT0)});
  pool.metadata.deletion_timestamp = kT0;
  metrics_.Observe(ConditionKind::kNodePool, FromNodePool(pool));
  metrics_.Export(kT0 + absl::Seconds(1));
  EXPECT_FALSE(Samples("operator_nodepool_status_condition_count").empty());
  metrics_.Clear();
  for (const char* name :
       {"operator_nodepool_status_condition_count",
        "operator_nodepool_status_condition_current_status_seconds",
        "operator_nodepool_termination_current_time_seconds", "operator_status_condition_count"}) {
    EXPECT_TRUE(Samples(name).empty()) << name;
  }
  // Forgotten: the next export has nothing, and seeing it again counts it again (as upstream's
  // controller does when it starts).
  metrics_.Export(kT0 + absl::Seconds(2));
  EXPECT_TRUE(Samples("operator_nodepool_status_condition_count").empty());
  metrics_.Observe(ConditionKind::kNodePool, FromNodePool(pool));
  EXPECT_EQ(
      C("operator_nodepool_status_condition_transitions_total").Value({"Ready", "True", "Ready"}),
      2);
}

}  // namespace
}  // namespace dovetail::controllers::observability
