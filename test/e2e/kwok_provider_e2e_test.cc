// KwokCloudProvider on the full local control plane (kube-apiserver, kube-scheduler,
// kube-controller-manager and kwok from tools/k8s): a NodeClaim launched through the provider
// becomes a Node that kwok marks Ready; launching it again returns the same machine; the real
// scheduler keeps a pod off it while the karpenter.sh/unregistered taint is there and binds the
// pod once the taint is removed (what the registration controller will do), and kwok runs it;
// deleting the NodeClaim's machine removes the Node, after which the provider reports it gone.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dovetail/apis/core/node.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/errors.h"
#include "dovetail/cloudprovider/kwok/kwok_cloud_provider.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/controller_util.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/typed_client.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/kube/test_env.h"

namespace dovetail::cloudprovider::kwok {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;
using kube::testing::UniqueName;
using kube::testing::WaitFor;

constexpr absl::Duration kTimeout = absl::Seconds(120);

class KwokProviderE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rest_ = kube::testing::NewRestClient(kube::testing::KubeconfigFromEnv());
    ASSERT_NE(rest_, nullptr);
    client_ = std::make_unique<kube::Client>(*rest_);
    auto catalog = SyntheticCatalog();
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    provider_ = std::make_unique<KwokCloudProvider>(*client_, std::move(*catalog));
    ns_ = UniqueName("kwok-e2e");
    kube::testing::CreateNamespace(*client_, ns_);
  }

  void TearDown() override {
    if (client_ == nullptr) return;
    (void)client_->Delete(kube::resources::kNamespaces, "", ns_);
    if (!node_.empty()) (void)client_->Delete(kube::resources::kNodes, "", node_);
  }

  v1::NodeClaim Claim(const std::string& name, const std::string& uid) const {
    v1::NodeClaim claim;
    claim.metadata.name = name;
    claim.metadata.uid = uid;
    claim.metadata.labels = {{"karpenter.sh/nodepool", "e2e"}};
    claim.spec.requirements = {{.key = "node.kubernetes.io/instance-type",
                                .op = core::SelectorOperator::kIn,
                                .values = {"m7k.large", "c7k.large"}},
                               {.key = "karpenter.sh/capacity-type",
                                .op = core::SelectorOperator::kIn,
                                .values = {"on-demand"}}};
    claim.spec.resources.requests = {{"cpu", *Quantity::Parse("1")},
                                     {"memory", *Quantity::Parse("1Gi")}};
    return claim;
  }

  absl::StatusOr<core::Node> GetNode() {
    return kube::TypedClient<core::Node>(*client_, kube::resources::kNodes).Get("", node_);
  }

  absl::StatusOr<nlohmann::json> GetPod(const std::string& name) {
    auto body = client_->Get(kube::resources::kPods, ns_, name);
    if (!body.ok()) return body.status();
    return nlohmann::json::parse(*body);
  }

  std::unique_ptr<kube::RestClient> rest_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<KwokCloudProvider> provider_;
  std::string ns_;
  std::string node_;
};

TEST_F(KwokProviderE2eTest, LaunchedNodeBecomesReadyRunsAPodAndIsDeleted) {
  const std::string name = UniqueName("kwok-e2e");
  const v1::NodeClaim claim = Claim(name, absl::StrCat("uid-", name));

  // Launch.
  absl::StatusOr<v1::NodeClaim> launched = provider_->Create(claim);
  ASSERT_TRUE(launched.ok()) << launched.status();
  node_ = name;
  const std::string provider_id = "kwok://" + name;
  EXPECT_EQ(launched->status.provider_id, provider_id);
  // The cheaper of the two (synthetic prices: c7k.large $0.092/h, m7k.large $0.1012/h).
  EXPECT_EQ(launched->metadata.labels.at("node.kubernetes.io/instance-type"), "c7k.large");
  EXPECT_EQ(launched->metadata.labels.at("karpenter.sh/capacity-type"), "on-demand");
  EXPECT_FALSE(launched->status.allocatable.empty());

  // Idempotent per NodeClaim: the same machine again, not a second one.
  absl::StatusOr<v1::NodeClaim> again = provider_->Create(claim);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->status.provider_id, provider_id);
  absl::StatusOr<std::vector<v1::NodeClaim>> listed = provider_->List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  int mine = 0;
  for (const auto& m : *listed) mine += m.status.provider_id == provider_id;
  EXPECT_EQ(mine, 1);
  // Another NodeClaim that happens to have the same name does not get this machine.
  EXPECT_TRUE(absl::IsAlreadyExists(provider_->Create(Claim(name, "another-uid")).status()));

  // kwok keeps it Ready; the controller manager removes its not-ready taint.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto node = GetNode();
        if (!node.ok() || !core::IsReady(*node)) return false;
        for (const auto& t : node->spec.taints) {
          if (t.key == v1::kTaintNodeNotReady) return false;
        }
        return true;
      },
      kTimeout, absl::Milliseconds(200)))
      << "node " << name << " did not become Ready";
  {
    auto node = GetNode();
    ASSERT_TRUE(node.ok()) << node.status();
    // kwok kept the instance type's allocatable.
    EXPECT_EQ(node->status.allocatable.at("cpu"), launched->status.allocatable.at("cpu"));
    EXPECT_EQ(node->status.allocatable.at("pods"), launched->status.allocatable.at("pods"));
  }

  // A pod pinned to the node waits while the node is unregistered...
  nlohmann::json pod = kube::testing::PodJson(ns_, "pinned");
  pod["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", name}};
  pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "500m";
  ASSERT_TRUE(client_->Create(kube::resources::kPods, ns_, pod.dump()).ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        auto p = GetPod("pinned");
        if (!p.ok()) return false;
        for (const auto& c : (*p)["status"].value("conditions", nlohmann::json::array())) {
          if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False" &&
              c.value("reason", "") == "Unschedulable") {
            return true;
          }
        }
        return false;
      },
      kTimeout, absl::Milliseconds(200)))
      << "the scheduler did not report the pod unschedulable";
  EXPECT_EQ((*GetPod("pinned"))["spec"].value("nodeName", ""), "");

  // ...and runs there once registration removes the taint.
  kube::TypedClient<core::Node> nodes(*client_, kube::resources::kNodes);
  const absl::Status untainted = kube::RetryOnConflict([&]() -> absl::Status {
    auto node = GetNode();
    if (!node.ok()) return node.status();
    std::vector<core::Taint> kept;
    for (const auto& t : node->spec.taints) {
      if (t.key != v1::kUnregisteredTaintKey) kept.push_back(t);
    }
    node->spec.taints = kept;
    return nodes.Update(*node).status();
  });
  ASSERT_TRUE(untainted.ok()) << untainted;
  // kube-controller-manager's taint-eviction controller may still hold the Node with the
  // NoExecute unregistered taint when the scheduler binds the pod, and then deletes the pod (seen
  // once on a loaded 2-core CI machine: "Deleting pod" from taint_eviction.go). That race is the
  // controller-manager's, so a pod deleted that way is created again, at most twice.
  int recreated = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto p = GetPod("pinned");
        if (!p.ok() && kube::IsNotFound(p.status()) && recreated < 2) {
          ++recreated;
          (void)client_->Create(kube::resources::kPods, ns_, pod.dump());
          return false;
        }
        return p.ok() && (*p)["spec"].value("nodeName", "") == name &&
               (*p)["status"].value("phase", "") == "Running";
      },
      kTimeout, absl::Milliseconds(200)))
      << "the pod did not run on " << name << " (created again " << recreated
      << " times): " << GetPod("pinned").value_or(nlohmann::json()).dump();

  // Get reports the machine.
  absl::StatusOr<v1::NodeClaim> got = provider_->Get(provider_id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status.node_name, name);
  EXPECT_EQ(got->metadata.labels.at("kwok.x-k8s.io/node"), "fake");

  // Delete: requested, then the Node is gone and the provider says NotFound everywhere.
  ASSERT_TRUE(provider_->Delete(*launched).ok());
  ASSERT_TRUE(WaitFor([&] { return kube::IsNotFound(GetNode().status()); }, kTimeout))
      << "node " << name << " was not deleted";
  EXPECT_TRUE(IsNodeClaimNotFound(provider_->Delete(*launched)));
  EXPECT_TRUE(IsNodeClaimNotFound(provider_->Get(provider_id).status()));
  listed = provider_->List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  for (const auto& m : *listed) EXPECT_NE(m.status.provider_id, provider_id);
  node_.clear();
}

}  // namespace
}  // namespace dovetail::cloudprovider::kwok
