// dovetail/state against a real kube-apiserver: Nodes, NodeClaims (the CRD from charts/) and Pods
// are written through the API, and the Cluster built by the real informers must follow them —
// a NodeClaim launching (re-keyed to its provider id, sync gate opening), its Node registering
// (linked), pods binding, finishing and going away, and objects being deleted — and its snapshot
// must convert into the solver's input.
//
// Other integration tests share the API server, so every assertion is about this test's objects.

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/scenario/solver_nodes.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/cluster_informers.h"
#include "dovetail/state/snapshot.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/kube/crds.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::state {
namespace {

using kube::testing::UniqueName;
using kube::testing::WaitFor;

int64_t Milli(const ResourceList& list, const std::string& name) {
  auto it = list.find(name);
  return it == list.end() ? 0 : it->second.MilliValue();
}

// Installs the CRDs from charts/dovetail/crds (server-side apply, as crd_validation_test does)
// and waits until NodeClaims are served.
nlohmann::json NodeClaimJson(const std::string& name) {
  return {{"apiVersion", "karpenter.sh/v1"},
          {"kind", "NodeClaim"},
          {"metadata", {{"name", name}, {"labels", {{"karpenter.sh/nodepool", "state-it"}}}}},
          {"spec",
           {{"requirements",
             {{{"key", "node.kubernetes.io/instance-type"},
               {"operator", "In"},
               {"values", {"m7k.large"}}}}},
            {"resources", {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}},
            {"nodeClassRef",
             {{"group", "karpenter.kwok.sh"}, {"kind", "KWOKNodeClass"}, {"name", "default"}}}}}};
}

nlohmann::json NodeJson(const std::string& name, const std::string& provider_id) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"labels",
             {{"kubernetes.io/hostname", name},
              {"karpenter.sh/nodepool", "state-it"},
              {"topology.kubernetes.io/zone", "test-zone-a"}}}}},
          {"spec", {{"providerID", provider_id}}},
          {"status",
           {{"capacity", {{"cpu", "2"}, {"memory", "8Gi"}, {"pods", "110"}}},
            {"allocatable", {{"cpu", "1930m"}, {"memory", "7Gi"}, {"pods", "110"}}}}}};
}

class StateIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rest_ = kube::testing::NewRestClient(kube::testing::KubeconfigFromEnv());
    ASSERT_NE(rest_, nullptr);
    client_ = std::make_unique<kube::Client>(*rest_);
    kube::testing::InstallCrds(*client_, DOVETAIL_SOURCE_DIR, "dovetail-state-test");
    ns_ = UniqueName("state-it");
    kube::testing::CreateNamespace(*client_, ns_);
    informers_ = std::make_unique<ClusterInformers>(*client_, cluster_);
    informers_->Start();
    ASSERT_TRUE(informers_->WaitForSync(absl::Now() + absl::Seconds(60)));
  }

  void TearDown() override {
    if (informers_ != nullptr) informers_->Stop();
    if (client_ == nullptr) return;
    for (const std::string& name : nodes_) {
      (void)client_->Delete(kube::resources::kNodes, "", name);
    }
    for (const std::string& name : claims_) {
      (void)client_->Delete(kube::resources::kNodeClaims, "", name);
    }
    (void)client_->Delete(kube::resources::kNamespaces, "", ns_);
  }

  void CreateNode(const std::string& name, const std::string& provider_id) {
    auto created = client_->Create(kube::resources::kNodes, "", NodeJson(name, provider_id).dump());
    ASSERT_TRUE(created.ok()) << created.status();
    nodes_.push_back(name);
  }

  void CreatePod(const std::string& name, const std::string& node, const std::string& cpu) {
    nlohmann::json pod = kube::testing::PodJson(ns_, name, node);
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu;
    auto created = client_->Create(kube::resources::kPods, ns_, pod.dump());
    ASSERT_TRUE(created.ok()) << created.status();
  }

  RealClock clock_;
  Cluster cluster_{clock_};
  std::unique_ptr<kube::RestClient> rest_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<ClusterInformers> informers_;
  std::string ns_;
  std::vector<std::string> nodes_;
  std::vector<std::string> claims_;
};

TEST_F(StateIntegrationTest, FollowsANodeClaimFromCreationThroughLaunchRegistrationAndDeletion) {
  const std::string claim = UniqueName("state-it-claim");
  const std::string node = claim;  // as the kwok provider names it
  const std::string provider_id = "kwok://" + node;

  // Created, not launched: tracked under its provisional key, and the sync gate is closed.
  auto created = client_->Create(kube::resources::kNodeClaims, "", NodeClaimJson(claim).dump());
  ASSERT_TRUE(created.ok()) << created.status();
  claims_.push_back(claim);
  ASSERT_TRUE(WaitFor([&] { return cluster_.Get(UnlaunchedNodeClaimKey(claim)).has_value(); }));
  EXPECT_FALSE(cluster_.Synced());
  cluster_.Nominate(UnlaunchedNodeClaimKey(claim), absl::Minutes(5));

  // Launched: status.providerID set through the status subresource.
  const nlohmann::json status = {
      {"status",
       {{"providerID", provider_id},
        {"capacity", {{"cpu", "2"}, {"memory", "8Gi"}, {"pods", "110"}}},
        {"allocatable", {{"cpu", "1930m"}, {"memory", "7Gi"}, {"pods", "110"}}}}}};
  auto patched = client_->Patch(kube::resources::kNodeClaims, "", claim, kube::PatchType::kMerge,
                                status.dump(), {}, "status");
  ASSERT_TRUE(patched.ok()) << patched.status();
  ASSERT_TRUE(WaitFor([&] { return cluster_.Get(provider_id).has_value(); }));
  EXPECT_FALSE(cluster_.Get(UnlaunchedNodeClaimKey(claim)).has_value());
  EXPECT_TRUE(cluster_.Get(provider_id)->Nominated(clock_.Now()));  // the mark moved with it
  EXPECT_TRUE(WaitFor([&] { return cluster_.Synced(); }));
  EXPECT_EQ(Milli(cluster_.Get(provider_id)->Allocatable(), "cpu"), 1930);

  // Registered: the Node with the same provider id joins the same StateNode.
  CreateNode(node, provider_id);
  ASSERT_TRUE(WaitFor([&] {
    auto s = cluster_.Get(provider_id);
    return s.has_value() && s->node != nullptr;
  }));
  std::optional<StateNode> linked = cluster_.Get(provider_id);
  EXPECT_TRUE(linked->Managed());
  EXPECT_EQ(linked->Name(), node);
  EXPECT_EQ(cluster_.GetByNodeName(node)->Key(), provider_id);
  EXPECT_EQ(cluster_.GetByNodeClaimName(claim)->Key(), provider_id);

  // Pods bound to it (spec.nodeName set at creation; no scheduler here).
  CreatePod("a", node, "250m");
  CreatePod("b", node, "500m");
  CreatePod("pending", "", "4");
  ASSERT_TRUE(WaitFor([&] { return cluster_.PodsOn(node).size() == 2; }));
  EXPECT_EQ(Milli(cluster_.PodRequests(node), "cpu"), 750);

  // Usage of the pool (for limits) counts the machine once.
  EXPECT_EQ(Milli(cluster_.NodePoolUsage("state-it"), "nodes"), 1000);
  EXPECT_EQ(Milli(cluster_.NodePoolUsage("state-it"), "cpu"), 2000);

  // The snapshot converts into the solver's view with the node and its two pods.
  Snapshot snapshot = cluster_.TakeSnapshot();
  const scenario::SolverNodes solver_nodes = scenario::ToSolverNodes(snapshot);
  int ours = 0;
  for (const auto& n : solver_nodes.nodes) ours += n.name == node;
  EXPECT_EQ(ours, 1);
  int our_pods = 0;
  for (const auto& p : solver_nodes.pods) our_pods += p->metadata.namespace_ == ns_;
  EXPECT_EQ(our_pods, 2);

  // A pod that finished no longer counts; a deleted one neither.
  const nlohmann::json succeeded = {{"status", {{"phase", "Succeeded"}}}};
  auto done = client_->Patch(kube::resources::kPods, ns_, "b", kube::PatchType::kMerge,
                             succeeded.dump(), {}, "status");
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_TRUE(WaitFor([&] { return cluster_.PodsOn(node).size() == 1; }));
  EXPECT_EQ(Milli(cluster_.PodRequests(node), "cpu"), 250);
  ASSERT_TRUE(client_->Delete(kube::resources::kPods, ns_, "a", {.grace_period_seconds = 0}).ok());
  ASSERT_TRUE(WaitFor([&] { return cluster_.PodsOn(node).empty(); }));

  // Disruption marks it; the Node goes first, the NodeClaim after; then nothing is left.
  cluster_.MarkForDeletion({provider_id});
  EXPECT_FALSE(cluster_.Get(provider_id)->Active());
  ASSERT_TRUE(client_->Delete(kube::resources::kNodes, "", node).ok());
  ASSERT_TRUE(WaitFor([&] {
    auto s = cluster_.Get(provider_id);
    return s.has_value() && s->node == nullptr;
  }));
  EXPECT_TRUE(cluster_.Get(provider_id)->marked_for_deletion);
  ASSERT_TRUE(client_->Delete(kube::resources::kNodeClaims, "", claim).ok());
  ASSERT_TRUE(WaitFor([&] { return !cluster_.Get(provider_id).has_value(); }));
}

TEST_F(StateIntegrationTest, NodeWithoutProviderIdIsReKeyedWhenItGetsOne) {
  const std::string node = UniqueName("state-it-node");
  CreateNode(node, "");
  ASSERT_TRUE(WaitFor([&] { return cluster_.Get(node).has_value(); }));
  EXPECT_FALSE(cluster_.Get(node)->Managed());

  // A cloud controller fills spec.providerID in later (it may be set once).
  const nlohmann::json patch = {{"spec", {{"providerID", "kwok://" + node}}}};
  auto patched =
      client_->Patch(kube::resources::kNodes, "", node, kube::PatchType::kMerge, patch.dump());
  ASSERT_TRUE(patched.ok()) << patched.status();
  ASSERT_TRUE(WaitFor([&] { return cluster_.Get("kwok://" + node).has_value(); }));
  EXPECT_FALSE(cluster_.Get(node).has_value());
  EXPECT_EQ(cluster_.GetByNodeName(node)->Key(), "kwok://" + node);
}

}  // namespace
}  // namespace dovetail::state
