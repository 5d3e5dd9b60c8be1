// The DisruptionController's whole loop against a real kube-apiserver: the real informers, cluster
// state, event recorder, kwok CloudProvider (synthetic catalog), decisions and queue. The test
// registers the machines itself (NodeClaim with provider id and conditions, and its Node), as the
// lifecycle controllers would.
//
// On Start() the controller removes a stale karpenter.sh/disrupted taint and DisruptionReason
// condition (left by a killed process), then a pass removes an empty, consolidatable node within
// the pool's budget (emptiness, validated after the delay): its NodeClaim is deleted, with the
// decision metric and an explanation. A node annotated karpenter.sh/do-not-disrupt stays, and is
// explained.
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

class DisruptionControllerIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rest_ = kube::testing::NewRestClient(kube::testing::KubeconfigFromEnv());
    ASSERT_NE(rest_, nullptr);
    client_ = std::make_unique<kube::Client>(*rest_);
    kube::testing::InstallCrds(*client_, DOVETAIL_SOURCE_DIR, "dovetail-disruption-test");
    ASSERT_NO_FATAL_FAILURE(env_.Init(*client_, cluster_, clock_, &metrics_));
    pool_ = UniqueName("disr-ctl");
    const json pool = {{"apiVersion", "karpenter.sh/v1"},
                       {"kind", "NodePool"},
                       {"metadata", {{"name", pool_}}},
                       {"spec",
                        {{"disruption",
                          {{"consolidationPolicy", "WhenEmptyOrUnderutilized"},
                           {"consolidateAfter", "0s"},
                           {"budgets", {{{"nodes", "1"}}}}}},
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
  }

  void TearDown() override {
    if (controller_ != nullptr) controller_->Stop();
    controller_.reset();
    env_.StopInformers();
    if (client_ == nullptr) return;
    for (const std::string& name : nodes_) {
      (void)client_->Delete(kube::resources::kNodes, "", name);
      (void)client_->Delete(kube::resources::kNodeClaims, "", name);
    }
    (void)client_->Delete(kube::resources::kNodePools, "", pool_);
  }

  // An initialized, consolidatable m7k.xlarge machine of the pool with no pods.
  std::string AddNode(const std::string& prefix, bool stale, bool do_not_disrupt) {
    const std::string name = UniqueName(prefix);
    const std::string provider = absl::StrCat("kwok://", name);
    const json labels = {{"karpenter.sh/nodepool", pool_},
                         {"karpenter.sh/capacity-type", "on-demand"},
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
    json conditions = {Condition("Launched", "True"), Condition("Registered", "True"),
                       Condition("Initialized", "True"), Condition("Consolidatable", "True")};
    if (stale) {
      json reason = Condition("DisruptionReason", "True");
      reason["reason"] = "Empty";
      conditions.push_back(reason);
    }
    const json status = {{"status",
                          {{"providerID", provider},
                           {"nodeName", name},
                           {"capacity", {{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "58"}}},
                           {"allocatable", {{"cpu", "3920m"}, {"memory", "15Gi"}, {"pods", "58"}}},
                           {"conditions", conditions}}}};
    auto patched = client_->Patch(kube::resources::kNodeClaims, "", name, kube::PatchType::kMerge,
                                  status.dump(), {}, "status");
    EXPECT_TRUE(patched.ok()) << patched.status();
    json node_labels = labels;
    node_labels["karpenter.sh/registered"] = "true";
    node_labels["karpenter.sh/initialized"] = "true";
    node_labels["kubernetes.io/hostname"] = name;
    json node = {{"apiVersion", "v1"},
                 {"kind", "Node"},
                 {"metadata", {{"name", name}, {"labels", node_labels}}},
                 {"spec", {{"providerID", provider}}}};
    if (do_not_disrupt) {
      node["metadata"]["annotations"] = {{"karpenter.sh/do-not-disrupt", "true"}};
    }
    if (stale) {
      node["spec"]["taints"] = {{{"key", "karpenter.sh/disrupted"}, {"effect", "NoSchedule"}}};
    }
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
    nodes_.push_back(name);
    EXPECT_TRUE(WaitFor([&] {
      auto s = cluster_.GetByNodeName(name);
      return s.has_value() && s->node != nullptr && s->node_claim != nullptr &&
             !s->node_claim->status.conditions.empty();
    }));
    return name;
  }

  bool Tainted(const std::string& node) {
    auto body = client_->Get(kube::resources::kNodes, "", node);
    if (!body.ok()) return false;
    for (const json& t : json::parse(*body)["spec"].value("taints", json::array())) {
      if (t.value("key", "") == "karpenter.sh/disrupted") return true;
    }
    return false;
  }
  bool HasDisruptionReason(const std::string& claim) {
    auto body = client_->Get(kube::resources::kNodeClaims, "", claim);
    if (!body.ok()) return false;
    for (const json& c : json::parse(*body)["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "DisruptionReason") return true;
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
  std::string pool_;
  std::vector<std::string> nodes_;
};

TEST_F(DisruptionControllerIntegrationTest, RemovesStaleMarksThenAnEmptyNodeWithinBudget) {
  const std::string kept = AddNode("disr-keep", /*stale=*/true, /*do_not_disrupt=*/true);
  const std::string empty = AddNode("disr-empty", /*stale=*/false, /*do_not_disrupt=*/false);
  ASSERT_TRUE(Tainted(kept));
  ASSERT_TRUE(HasDisruptionReason(kept));

  ControllerOptions options;
  options.poll_interval = absl::Milliseconds(200);
  options.validation_delay = absl::Milliseconds(500);
  options.queue.poll = absl::Milliseconds(100);
  controller_ = std::make_unique<DisruptionController>(*env_.deps, options);
  controller_->Start();

  // Crash recovery first.
  ASSERT_TRUE(WaitFor([&] { return !Tainted(kept) && !HasDisruptionReason(kept); }))
      << controller_->stats().last_error;
  // The API server shows the writes before the controller counts them.
  EXPECT_TRUE(WaitFor([&] { return controller_->stats().stale_marks_removed >= 2; }))
      << controller_->stats().stale_marks_removed;

  // Then emptiness removes the empty node (budget: 1 node).
  ASSERT_TRUE(WaitFor([&] { return Gone(empty); }))
      << "passes=" << controller_->stats().passes
      << " last_error=" << controller_->stats().last_error
      << " explanations=" << controller_->ExplanationsJson();
  EXPECT_EQ(metrics_
                .NewCounter("karpenter_voluntary_disruption_decisions_total", "",
                            {"decision", "reason", "consolidation_type"})
                .Value({"delete", "empty", "empty"}),
            1);
  // Let a few more passes run: the do-not-disrupt node stays, explained.
  const int64_t passes = controller_->stats().passes;
  ASSERT_TRUE(WaitFor([&] { return controller_->stats().passes >= passes + 3; }));
  EXPECT_FALSE(Gone(kept));
  EXPECT_FALSE(Tainted(kept));
  const auto explanations = controller_->explanations();
  ASSERT_TRUE(explanations.contains(kept)) << controller_->ExplanationsJson();
  EXPECT_FALSE(explanations.at(kept).disrupted);
  EXPECT_EQ(explanations.at(kept).event_reason, "DisruptionBlocked");
  EXPECT_NE(explanations.at(kept).message.find("do-not-disrupt"), std::string::npos);
  EXPECT_NE(controller_->ExplanationsJson().find(kept), std::string::npos);
}

}  // namespace
}  // namespace dovetail::controllers::disruption
