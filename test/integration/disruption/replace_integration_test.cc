// DisruptionController::Replace (replacer.h) against a real kube-apiserver: the real informers,
// cluster state, event recorder, kwok CloudProvider (synthetic catalog), simulation and queue
// (its worker running). The test registers the machines itself (NodeClaim with provider id and
// conditions, and its Node) and plays the lifecycle controllers for the replacements (it marks
// them Initialized).
//
// A node with a pod that fits nowhere else: Replace creates a replacement NodeClaim of the pool
// and keeps the node until the replacement is Initialized, then deletes its NodeClaim; a second
// Replace of a held node reports already_held. A pre-launch (delete_when_ready=false, cordon=false)
// leaves the node untainted and deletes it only at the deadline, without its replacement ever
// initializing. Unknown NodeClaims are NotFound.
//
// Other integration tests share the API server, so every object is this test's own.

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dovetail/common/clock.h"
#include "dovetail/controllers/disruption/disruption_controller.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/state/cluster.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/kube/crds.h"
#include "test/integration/kube/kwok_controller_env.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::controllers::disruption {
namespace {

using kube::testing::UniqueName;
using kube::testing::WaitFor;
using nlohmann::json;

json Condition(const std::string& type, const std::string& status) {
  return {{"type", type},
          {"status", status},
          {"reason", type},
          {"message", ""},
          {"lastTransitionTime", "2026-01-01T00:00:00Z"}};
}

class ReplaceIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rest_ = kube::testing::NewRestClient(kube::testing::KubeconfigFromEnv());
    ASSERT_NE(rest_, nullptr);
    client_ = std::make_unique<kube::Client>(*rest_);
    kube::testing::InstallCrds(*client_, DOVETAIL_SOURCE_DIR, "dovetail-disruption-test");
    ASSERT_NO_FATAL_FAILURE(env_.Init(*client_, cluster_, clock_, &metrics_));
    namespace_ = UniqueName("replace");
    kube::testing::CreateNamespace(*client_, namespace_);
    pool_ = UniqueName("replace");
    // No voluntary disruption of this pool (the loop does not run anyway).
    const json pool = {{"apiVersion", "karpenter.sh/v1"},
                       {"kind", "NodePool"},
                       {"metadata", {{"name", pool_}}},
                       {"spec",
                        {{"disruption",
                          {{"consolidationPolicy", "WhenEmpty"},
                           {"consolidateAfter", "Never"},
                           {"budgets", {{{"nodes", "0"}}}}}},
                         {"template",
                          {{"spec",
                            {{"requirements", json::array()},
                             {"nodeClassRef",
                              {{"group", "karpenter.kwok.sh"},
                               {"kind", "KWOKNodeClass"},
                               {"name", "default"}}}}}}}}}};
    auto created = client_->Create(kube::resources::kNodePools, "", pool.dump());
    ASSERT_TRUE(created.ok()) << created.status();
    ASSERT_NO_FATAL_FAILURE(env_.StartInformers());

    ControllerOptions options;
    options.queue.poll = absl::Milliseconds(100);
    options.replace_sync_timeout = absl::Milliseconds(300);
    controller_ = std::make_unique<DisruptionController>(*env_.deps, options);
    ASSERT_TRUE(controller_->WaitForInformers(absl::Now() + absl::Seconds(60)));
    // The pool must be in the controller's informer before a simulation can launch in it.
    ASSERT_TRUE(WaitFor([&] {
      absl::StatusOr<ClusterView> view = controller_->BuildView();
      return view.ok() && view->node_pools.contains(pool_);
    }));
    controller_->queue().Start();
  }

  void TearDown() override {
    controller_.reset();
    env_.StopInformers();
    if (client_ == nullptr) return;
    for (const std::string& name : nodes_) {
      (void)client_->Delete(kube::resources::kNodes, "", name);
      (void)client_->Delete(kube::resources::kNodeClaims, "", name);
    }
    for (const std::string& name : replacements_) {
      (void)client_->Delete(kube::resources::kNodeClaims, "", name);
    }
    (void)client_->Delete(kube::resources::kNamespaces, "", namespace_);
    (void)client_->Delete(kube::resources::kNodePools, "", pool_);
  }

  // An initialized m7k.xlarge machine of the pool, with a pod requesting 3 CPUs bound to it (it
  // fits on no other node: its nodeSelector names the pool).
  std::string AddNodeWithPod(const std::string& prefix) {
    const std::string name = UniqueName(prefix);
    const std::string provider = absl::StrCat("kwok://", name);
    const json labels = {{"karpenter.sh/nodepool", pool_},
                         {"karpenter.sh/capacity-type", "spot"},
                         {"node.kubernetes.io/instance-type", "m7k.xlarge"},
                         {"topology.kubernetes.io/zone", "test-zone-a"},
                         {"kubernetes.io/arch", "amd64"},
                         {"kubernetes.io/os", "linux"}};
    const json claim = {
        {"apiVersion", "karpenter.sh/v1"},
        {"kind", "NodeClaim"},
        {"metadata", {{"name", name}, {"labels", labels}}},
        {"spec",
         {{"requirements", json::array()},
          {"nodeClassRef",
           {{"group", "karpenter.kwok.sh"}, {"kind", "KWOKNodeClass"}, {"name", "default"}}}}}};
    auto created = client_->Create(kube::resources::kNodeClaims, "", claim.dump());
    EXPECT_TRUE(created.ok()) << created.status();
    nodes_.push_back(name);
    SetStatus(name, provider, name);
    json node_labels = labels;
    node_labels["karpenter.sh/registered"] = "true";
    node_labels["karpenter.sh/initialized"] = "true";
    node_labels["kubernetes.io/hostname"] = name;
    const json node = {{"apiVersion", "v1"},
                       {"kind", "Node"},
                       {"metadata", {{"name", name}, {"labels", node_labels}}},
                       {"spec", {{"providerID", provider}}}};
    auto node_created = client_->Create(kube::resources::kNodes, "", node.dump());
    EXPECT_TRUE(node_created.ok()) << node_created.status();
    const json node_status = {
        {"status",
         {{"capacity", {{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "58"}}},
          {"allocatable", {{"cpu", "3920m"}, {"memory", "15Gi"}, {"pods", "58"}}},
          {"conditions", {Condition("Ready", "True")}}}}};
    EXPECT_TRUE(client_
                    ->Patch(kube::resources::kNodes, "", name, kube::PatchType::kMerge,
                            node_status.dump(), {}, "status")
                    .ok());
    json pod = kube::testing::PodJson(namespace_, absl::StrCat("pod-", name), name);
    pod["spec"]["containers"][0]["resources"]["requests"] = {{"cpu", "3"}, {"memory", "1Gi"}};
    pod["spec"]["nodeSelector"] = {{"karpenter.sh/nodepool", pool_}};
    auto pod_created = client_->Create(kube::resources::kPods, namespace_, pod.dump());
    EXPECT_TRUE(pod_created.ok()) << pod_created.status();
    EXPECT_TRUE(WaitFor([&] {
      auto s = cluster_.GetByNodeName(name);
      if (!s.has_value() || s->node == nullptr || s->node_claim == nullptr ||
          s->node_claim->status.conditions.empty()) {
        return false;
      }
      const state::Snapshot snapshot = cluster_.TakeSnapshot();
      auto pods = snapshot.pods_by_node.find(name);
      return pods != snapshot.pods_by_node.end() && !pods->second.empty();
    }));
    return name;
  }

  // What the lifecycle controllers would write: launched, registered, initialized.
  void SetStatus(const std::string& claim, const std::string& provider, const std::string& node) {
    const json status = {{"status",
                          {{"providerID", provider},
                           {"nodeName", node},
                           {"capacity", {{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "58"}}},
                           {"allocatable", {{"cpu", "3920m"}, {"memory", "15Gi"}, {"pods", "58"}}},
                           {"conditions",
                            {Condition("Launched", "True"), Condition("Registered", "True"),
                             Condition("Initialized", "True")}}}}};
    auto patched = client_->Patch(kube::resources::kNodeClaims, "", claim, kube::PatchType::kMerge,
                                  status.dump(), {}, "status");
    EXPECT_TRUE(patched.ok()) << patched.status();
  }

  json Get(const kube::Resource& resource, const std::string& name) {
    auto body = client_->Get(resource, "", name);
    return body.ok() ? json::parse(*body) : json();
  }
  bool Tainted(const std::string& node) {
    const json n = Get(kube::resources::kNodes, node);
    if (n.is_null()) return false;
    for (const json& t : n["spec"].value("taints", json::array())) {
      if (t.value("key", "") == "karpenter.sh/disrupted") return true;
    }
    return false;
  }
  bool Gone(const std::string& claim) {
    auto body = client_->Get(kube::resources::kNodeClaims, "", claim);
    if (!body.ok()) return kube::IsNotFound(body.status());
    return json::parse(*body)["metadata"].contains("deletionTimestamp");
  }

  RealClock clock_;
  metrics::Registry metrics_;
  state::Cluster cluster_{clock_};
  std::unique_ptr<kube::RestClient> rest_;
  std::unique_ptr<kube::Client> client_;
  kube::testing::KwokControllerEnv env_;
  std::unique_ptr<DisruptionController> controller_;
  std::string namespace_;
  std::string pool_;
  std::vector<std::string> nodes_;
  std::vector<std::string> replacements_;
};

TEST_F(ReplaceIntegrationTest, LaunchesAReplacementAndDeletesTheNodeOnceItIsInitialized) {
  const std::string node = AddNodeWithPod("interrupted");
  absl::StatusOr<ReplaceResult> result =
      controller_->Replace({.node_claim = node,
                            .reason = "SpotInterrupted",
                            .deadline = absl::Now() + absl::Minutes(2),
                            .delete_when_ready = true,
                            .cordon = true});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->already_held);
  EXPECT_EQ(result->pods, 1);
  EXPECT_TRUE(result->unschedulable.empty());
  ASSERT_FALSE(result->replacements.empty());
  replacements_ = result->replacements;
  const std::string replacement = result->replacements.front();
  const json claim = Get(kube::resources::kNodeClaims, replacement);
  ASSERT_FALSE(claim.is_null()) << replacement;
  EXPECT_EQ(claim["metadata"]["labels"].value("karpenter.sh/nodepool", ""), pool_);
  EXPECT_TRUE(Tainted(node));
  EXPECT_EQ(controller_->queue().Held().count(cluster_.GetByNodeName(node)->Key()), 1u);
  // The simulation is measured as upstream's disruption simulations are.
  EXPECT_EQ(
      metrics_
          .NewHistogram("karpenter_scheduler_scheduling_duration_seconds", "", {"controller"}, {})
          .Count({"disruption"}),
      1u);

  // Not deleted while the replacement has not initialized.
  absl::SleepFor(absl::Milliseconds(500));  // several queue polls
  EXPECT_FALSE(Gone(node));

  // At-least-once delivery: the second request finds the node held.
  absl::StatusOr<ReplaceResult> again =
      controller_->Replace({.node_claim = node,
                            .reason = "SpotInterrupted",
                            .deadline = absl::Now() + absl::Minutes(2)});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->already_held);
  EXPECT_EQ(again->command_id, result->command_id);
  EXPECT_EQ(again->replacements, result->replacements);

  for (const std::string& r : result->replacements) SetStatus(r, absl::StrCat("kwok://", r), r);
  ASSERT_TRUE(WaitFor([&] { return Gone(node); }));
  // The queue counts after the delete.
  ASSERT_TRUE(WaitFor([&] { return controller_->queue().stats().terminated == 1; }));
  EXPECT_EQ(controller_->queue().stats().rolled_back, 0);
  EXPECT_EQ(metrics_
                .NewCounter("karpenter_nodeclaims_disrupted_total", "",
                            {"reason", "nodepool", "capacity_type"})
                .Value({"spotinterrupted", pool_, "spot"}),
            1);
  EXPECT_EQ(metrics_
                .NewCounter("karpenter_voluntary_disruption_decisions_total", "",
                            {"decision", "reason", "consolidation_type"})
                .Value({"replace", "drifted", ""}),
            0);
  EXPECT_EQ(controller_->stats().replacements_started, 1);
}

TEST_F(ReplaceIntegrationTest, PreLaunchKeepsTheNodeUntaintedUntilTheDeadline) {
  const std::string node = AddNodeWithPod("rebalance");
  const absl::Time deadline = absl::Now() + absl::Seconds(3);
  absl::StatusOr<ReplaceResult> result =
      controller_->Replace({.node_claim = node,
                            .reason = "SpotRebalanceRecommendation",
                            .deadline = deadline,
                            .delete_when_ready = false,
                            .cordon = false});
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_FALSE(result->replacements.empty());
  replacements_ = result->replacements;
  EXPECT_FALSE(Tainted(node));
  EXPECT_FALSE(cluster_.GetByNodeName(node)->marked_for_deletion);
  // The replacement never initializes; the node goes at the deadline, not before.
  ASSERT_TRUE(WaitFor([&] { return Gone(node); }, absl::Seconds(30)));
  EXPECT_GE(absl::Now(), deadline);
  EXPECT_EQ(controller_->queue().stats().rolled_back, 0);
}

TEST_F(ReplaceIntegrationTest, UnknownNodeClaimIsNotFound) {
  EXPECT_EQ(controller_->Replace({.node_claim = UniqueName("missing"), .reason = "SpotInterrupted"})
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace dovetail::controllers::disruption
