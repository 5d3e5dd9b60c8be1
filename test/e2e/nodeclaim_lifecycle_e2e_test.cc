// The NodeClaim lifecycle and garbage collection controllers (dovetail/controllers/nodeclaim) on
// the full local control plane (kube-apiserver, kube-scheduler, kube-controller-manager, kwok)
// with the real kwok CloudProvider and the real informers and cluster state:
//   - a NodeClaim created as provisioning would gets the termination finalizer, is launched once,
//     registers (unregistered taint removed, finalizer, owner reference and labels on the Node),
//     waits for its startup taint, initializes once it is gone, and a pod binds and runs there;
//   - a NodeClaim whose Node never registers is deleted after the (shortened) registration TTL,
//     without a launch;
//   - a NodeClaim for which the provider has no capacity is deleted;
//   - NodeClaims of a NodePool whose launch keeps failing (kwok's launch is the creation of the
//     Node, refused here by admission) are deleted at the (shortened) launch timeout, and the
//     second failure makes the pool's NodeRegistrationHealthy False with the launch's reason;
//   - garbage collection deletes a registered NodeClaim whose instance was deleted out of band,
//     and an instance that no NodeClaim owns.
// Deleting a NodeClaim that carries the termination finalizer only sets its deletionTimestamp
// (the termination controller is not running here); the tests check that and clean up the
// finalizers themselves.

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "dovetail/apis/core/node.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/cloudprovider/kwok/kwok_cloud_provider.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/nodeclaim/conditions.h"
#include "dovetail/controllers/nodeclaim/garbage_collection_controller.h"
#include "dovetail/controllers/nodeclaim/lifecycle_controller.h"
#include "dovetail/controllers/nodepool/status_controller.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/controller_util.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/event_recorder.h"
#include "dovetail/kube/typed_client.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/cluster_informers.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/kube/block_node_registration.h"
#include "test/integration/kube/crds.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::controllers::nodeclaim {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;
using kube::testing::UniqueName;
using kube::testing::WaitFor;

constexpr absl::Duration kTimeout = absl::Seconds(90);
constexpr absl::Duration kPoll = absl::Milliseconds(200);

nlohmann::json NodeClaimJson(const std::string& name,
                             const std::vector<std::string>& instance_types) {
  return {
      {"apiVersion", "karpenter.sh/v1"},
      {"kind", "NodeClaim"},
      {"metadata",
       {{"name", name},
        {"labels", {{"karpenter.sh/nodepool", "lifecycle-e2e"}, {"team", "a"}}},
        {"annotations", {{"example.com/note", "synced"}}}}},
      {"spec",
       {{"requirements",
         {{{"key", "node.kubernetes.io/instance-type"},
           {"operator", "In"},
           {"values", instance_types}},
          {{"key", "karpenter.sh/capacity-type"}, {"operator", "In"}, {"values", {"on-demand"}}}}},
        {"taints", {{{"key", "dedicated"}, {"value", "e2e"}, {"effect", "NoSchedule"}}}},
        {"startupTaints", {{{"key", "example.com/agent-not-ready"}, {"effect", "NoSchedule"}}}},
        {"resources", {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}},
        {"nodeClassRef",
         {{"group", "karpenter.kwok.sh"}, {"kind", "KWOKNodeClass"}, {"name", "default"}}}}}};
}

class NodeClaimLifecycleE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rest_ = kube::testing::NewRestClient(kube::testing::KubeconfigFromEnv());
    ASSERT_NE(rest_, nullptr);
    client_ = std::make_unique<kube::Client>(*rest_);
    kube::testing::InstallCrds(*client_, DOVETAIL_SOURCE_DIR, "dovetail-nodeclaim-e2e");
    ns_ = UniqueName("nodeclaim-e2e");
    kube::testing::CreateNamespace(*client_, ns_);
    auto catalog = cloudprovider::kwok::SyntheticCatalog();
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    provider_ =
        std::make_unique<cloudprovider::kwok::KwokCloudProvider>(*client_, std::move(*catalog));
    informers_ = std::make_unique<state::ClusterInformers>(*client_, cluster_);
    events_ = std::make_unique<kube::EventRecorder>(*client_, clock_, kube::EventRecorderOptions{});
    deps_ = std::make_unique<Dependencies>(
        Dependencies{*client_, cluster_, *informers_, *provider_, clock_, *events_});
    lifecycle_ = std::make_unique<LifecycleController>(
        *deps_, LifecycleOptions{.workers = 4,
                                 .launch_timeout = absl::Seconds(3),
                                 .registration_ttl = absl::Seconds(4),
                                 .poll_interval = absl::Seconds(2)});
    gc_ = std::make_unique<GarbageCollectionController>(
        *deps_,
        GarbageCollectionOptions{.interval = absl::Seconds(1), .instance_grace = absl::Seconds(3)});
    informers_->Start();
    ASSERT_TRUE(informers_->WaitForSync(absl::Now() + absl::Seconds(60)));
  }

  void TearDown() override {
    if (lifecycle_ != nullptr) lifecycle_->Stop();
    if (gc_ != nullptr) gc_->Stop();
    if (informers_ != nullptr) informers_->Stop();
    if (client_ == nullptr) return;
    for (const std::string& name : claims_) {
      (void)kube::RemoveFinalizer(*client_, kube::resources::kNodeClaims, "", name,
                                  v1::kTerminationFinalizer);
      (void)client_->Delete(kube::resources::kNodeClaims, "", name);
    }
    for (const std::string& name : claims_) {  // kwok names the Node after the NodeClaim
      (void)kube::RemoveFinalizer(*client_, kube::resources::kNodes, "", name,
                                  v1::kTerminationFinalizer);
      (void)client_->Delete(kube::resources::kNodes, "", name);
    }
    (void)client_->Delete(kube::resources::kNamespaces, "", ns_);
  }

  void StartControllers() {
    lifecycle_->Start();
    gc_->Start();
  }

  std::string CreateClaim(const std::vector<std::string>& instance_types = {"c7k.large",
                                                                            "m7k.large"}) {
    const std::string name = UniqueName("life");
    auto created = client_->Create(kube::resources::kNodeClaims, "",
                                   NodeClaimJson(name, instance_types).dump());
    EXPECT_TRUE(created.ok()) << created.status();
    claims_.push_back(name);
    return name;
  }

  absl::StatusOr<v1::NodeClaim> GetClaim(const std::string& name) {
    return kube::TypedClient<v1::NodeClaim>(*client_, kube::resources::kNodeClaims).Get("", name);
  }
  absl::StatusOr<core::Node> GetNode(const std::string& name) {
    return kube::TypedClient<core::Node>(*client_, kube::resources::kNodes).Get("", name);
  }

  // The condition of the NodeClaim, or nullopt (also when the NodeClaim cannot be read).
  std::optional<core::Condition> ClaimCondition(const std::string& name, std::string_view type) {
    auto claim = GetClaim(name);
    if (!claim.ok()) return std::nullopt;
    const core::Condition* c = v1::FindCondition(claim->status.conditions, type);
    if (c == nullptr) return std::nullopt;
    return *c;
  }
  bool ClaimConditionIs(const std::string& name, std::string_view type,
                        core::ConditionStatus status, std::string_view reason = "") {
    auto c = ClaimCondition(name, type);
    return c.has_value() && c->status == status && (reason.empty() || c->reason == reason);
  }
  bool ClaimDeleting(const std::string& name) {
    auto claim = GetClaim(name);
    return claim.ok() && claim->metadata.deletion_timestamp.has_value();
  }

  RealClock clock_;
  state::Cluster cluster_{clock_};
  std::unique_ptr<kube::RestClient> rest_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<cloudprovider::kwok::KwokCloudProvider> provider_;
  std::unique_ptr<state::ClusterInformers> informers_;
  std::unique_ptr<kube::EventRecorder> events_;
  std::unique_ptr<Dependencies> deps_;
  std::unique_ptr<LifecycleController> lifecycle_;
  std::unique_ptr<GarbageCollectionController> gc_;
  std::string ns_;
  std::vector<std::string> claims_;
};

TEST_F(NodeClaimLifecycleE2eTest, LaunchesRegistersAndInitializesThenAPodRuns) {
  const std::string name = CreateClaim();
  StartControllers();
  const std::string provider_id = "kwok://" + name;

  // Finalizer, Launched, Registered.
  ASSERT_TRUE(WaitFor(
      [&] { return ClaimConditionIs(name, kConditionRegistered, core::ConditionStatus::kTrue); },
      kTimeout, kPoll))
      << "not registered: " << GetClaim(name)->status.conditions.size() << " conditions";
  absl::StatusOr<v1::NodeClaim> claim = GetClaim(name);
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_EQ(claim->metadata.finalizers, std::vector<std::string>{"karpenter.sh/termination"});
  EXPECT_EQ(claim->status.provider_id, provider_id);
  EXPECT_EQ(claim->status.node_name, name);
  EXPECT_EQ(claim->status.capacity.at("cpu").MilliValue(), 2000);
  EXPECT_FALSE(claim->status.allocatable.empty());
  EXPECT_EQ(claim->metadata.labels.at("node.kubernetes.io/instance-type"), "c7k.large");
  EXPECT_EQ(claim->metadata.labels.at("team"), "a");
  const core::Condition* launched = v1::FindCondition(claim->status.conditions, "Launched");
  ASSERT_NE(launched, nullptr);
  EXPECT_EQ(launched->status, core::ConditionStatus::kTrue);
  EXPECT_EQ(launched->reason, "Launched");
  EXPECT_TRUE(launched->last_transition_time.has_value());
  EXPECT_EQ(launched->observed_generation, claim->metadata.generation);

  // The Node as registration leaves it.
  absl::StatusOr<core::Node> node = GetNode(name);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->metadata.finalizers, std::vector<std::string>{"karpenter.sh/termination"});
  ASSERT_EQ(node->metadata.owner_references.size(), 1u);
  EXPECT_EQ(node->metadata.owner_references[0].kind, "NodeClaim");
  EXPECT_EQ(node->metadata.owner_references[0].uid, claim->metadata.uid);
  EXPECT_EQ(node->metadata.labels.at("karpenter.sh/registered"), "true");
  EXPECT_EQ(node->metadata.labels.at("team"), "a");
  EXPECT_EQ(node->metadata.annotations.at("example.com/note"), "synced");
  for (const core::Taint& t : node->spec.taints) {
    EXPECT_NE(t.key, v1::kUnregisteredTaintKey);
  }

  // kwok makes the Node Ready; the startup taint holds initialization back...
  ASSERT_TRUE(WaitFor(
      [&] {
        return ClaimConditionIs(name, kConditionInitialized, core::ConditionStatus::kFalse,
                                kReasonStartupTaintsExist);
      },
      kTimeout, kPoll))
      << "Initialized: "
      << ClaimCondition(name, kConditionInitialized).value_or(core::Condition{}).reason;
  EXPECT_TRUE(ClaimConditionIs(name, kConditionReady, core::ConditionStatus::kFalse,
                               kReasonUnhealthyDependents));

  // ...until the agent it stands for removes it.
  kube::TypedClient<core::Node> nodes(*client_, kube::resources::kNodes);
  ASSERT_TRUE(kube::RetryOnConflict([&]() -> absl::Status {
                auto n = GetNode(name);
                if (!n.ok()) return n.status();
                std::erase_if(n->spec.taints, [](const core::Taint& t) {
                  return t.key == "example.com/agent-not-ready";
                });
                return nodes.Update(*n).status();
              }).ok());
  ASSERT_TRUE(
      WaitFor([&] { return ClaimConditionIs(name, kConditionReady, core::ConditionStatus::kTrue); },
              kTimeout, kPoll))
      << "Initialized: "
      << ClaimCondition(name, kConditionInitialized).value_or(core::Condition{}).reason;
  EXPECT_TRUE(ClaimConditionIs(name, kConditionInitialized, core::ConditionStatus::kTrue));
  node = GetNode(name);
  ASSERT_TRUE(node.ok());
  EXPECT_EQ(node->metadata.labels.at("karpenter.sh/initialized"), "true");

  // A pod for this node is bound by the real scheduler and run by kwok.
  nlohmann::json pod = kube::testing::PodJson(ns_, "on-claim");
  pod["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", name}};
  pod["spec"]["tolerations"] = {
      {{"key", "dedicated"}, {"operator", "Equal"}, {"value", "e2e"}, {"effect", "NoSchedule"}}};
  ASSERT_TRUE(client_->Create(kube::resources::kPods, ns_, pod.dump()).ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        auto body = client_->Get(kube::resources::kPods, ns_, "on-claim");
        if (!body.ok()) return false;
        const nlohmann::json p = nlohmann::json::parse(*body);
        return p["spec"].value("nodeName", "") == name &&
               p["status"].value("phase", "") == "Running";
      },
      kTimeout, kPoll));

  // Launched exactly once; garbage collection left it alone.
  EXPECT_EQ(lifecycle_->launches(), 1);
  EXPECT_FALSE(ClaimDeleting(name));
  EXPECT_GT(gc_->stats().runs, 0);
}

TEST_F(NodeClaimLifecycleE2eTest, DeletesANodeClaimWhoseNodeNeverRegisters) {
  const std::string name = CreateClaim();
  // Launched by an earlier run (status.providerID set) whose machine never registers a Node.
  const nlohmann::json status = {{"status", {{"providerID", "kwok://ghost-" + name}}}};
  ASSERT_TRUE(client_
                  ->Patch(kube::resources::kNodeClaims, "", name, kube::PatchType::kMerge,
                          status.dump(), {}, "status")
                  .ok());
  StartControllers();
  ASSERT_TRUE(WaitFor(
      [&] {
        return ClaimConditionIs(name, kConditionRegistered, core::ConditionStatus::kUnknown,
                                kReasonNodeNotFound);
      },
      kTimeout, kPoll));
  EXPECT_TRUE(ClaimConditionIs(name, kConditionLaunched, core::ConditionStatus::kTrue));
  EXPECT_FALSE(ClaimDeleting(name));
  // The registration TTL (4 s here) passes: deletion is requested.
  ASSERT_TRUE(WaitFor([&] { return ClaimDeleting(name); }, kTimeout, kPoll));
  // A NodeClaim with a provider id is never launched again.
  EXPECT_EQ(lifecycle_->launches(), 0);
  // Not by garbage collection: it was never registered.
  EXPECT_EQ(gc_->stats().node_claims_deleted, 0);
}

TEST_F(NodeClaimLifecycleE2eTest, NodeClaimsThatNeverLaunchTimeOutAndMarkTheirPool) {
  kube::testing::NodeRegistrationBlock block(*client_);
  ASSERT_TRUE(block.enforced());
  const std::string pool = UniqueName("never-launches");
  const nlohmann::json pool_body = {{"apiVersion", "karpenter.sh/v1"},
                                    {"kind", "NodePool"},
                                    {"metadata", {{"name", pool}}},
                                    {"spec",
                                     {{"template",
                                       {{"spec",
                                         {{"requirements", nlohmann::json::array()},
                                          {"nodeClassRef",
                                           {{"group", "karpenter.kwok.sh"},
                                            {"kind", "KWOKNodeClass"},
                                            {"name", "default"}}}}}}}}}};
  auto created = client_->Create(kube::resources::kNodePools, "", pool_body.dump());
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string pool_uid = nlohmann::json::parse(*created)["metadata"]["uid"];
  auto health = [&]() -> std::optional<core::Condition> {
    auto got = kube::TypedClient<v1::NodePool>(*client_, kube::resources::kNodePools).Get("", pool);
    if (!got.ok()) return std::nullopt;
    const core::Condition* c = v1::FindCondition(got->status.conditions, "NodeRegistrationHealthy");
    return c == nullptr ? std::nullopt : std::optional<core::Condition>(*c);
  };

  nodepool::StatusController status(*deps_, nodepool::StatusOptions{.period = absl::Seconds(1)});
  status.Start();
  StartControllers();
  ASSERT_TRUE(WaitFor(
      [&] {
        auto c = health();
        return c.has_value() && c->status == core::ConditionStatus::kUnknown;
      },
      kTimeout, kPoll));

  for (int i = 0; i < 2; ++i) {
    const std::string name = UniqueName("never");
    nlohmann::json claim = NodeClaimJson(name, {"c7k.large"});
    claim["metadata"]["labels"]["karpenter.sh/nodepool"] = pool;
    claim["metadata"]["labels"][kube::testing::kBlockedRegistrationLabel] =
        kube::testing::kBlockedRegistrationValue;
    claim["metadata"]["ownerReferences"] = {{{"apiVersion", "karpenter.sh/v1"},
                                             {"kind", "NodePool"},
                                             {"name", pool},
                                             {"uid", pool_uid}}};
    ASSERT_TRUE(client_->Create(kube::resources::kNodeClaims, "", claim.dump()).ok());
    claims_.push_back(name);
    // The launch is refused and retried: Launched=Unknown with the refusal.
    ASSERT_TRUE(WaitFor(
        [&] {
          auto c = ClaimCondition(name, kConditionLaunched);
          return c.has_value() && c->status == core::ConditionStatus::kUnknown &&
                 c->reason == kReasonLaunchFailed &&
                 absl::StrContains(c->message, kube::testing::kBlockedRegistrationMessage);
        },
        kTimeout, kPoll))
        << name << " did not record its failed launch";
    EXPECT_FALSE(ClaimDeleting(name)) << name << " deleted before the launch timeout";
    // The launch timeout (3 s here) passes: deleted, and never a Node.
    ASSERT_TRUE(WaitFor([&] { return ClaimDeleting(name); }, kTimeout, kPoll));
    EXPECT_TRUE(kube::IsNotFound(GetNode(name).status()));
    if (i == 0) {
      absl::SleepFor(absl::Seconds(2));  // two status periods: one failure of four is not enough
      auto c = health();
      ASSERT_TRUE(c.has_value());
      EXPECT_EQ(c->status, core::ConditionStatus::kUnknown);
    }
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        auto c = health();
        return c.has_value() && c->status == core::ConditionStatus::kFalse;
      },
      kTimeout, kPoll))
      << "NodeRegistrationHealthy is not False after two launch timeouts";
  const std::optional<core::Condition> c = health();
  EXPECT_EQ(c->reason, kReasonLaunchFailed);
  EXPECT_TRUE(absl::StrContains(c->message, kube::testing::kBlockedRegistrationMessage))
      << c->message;
  status.Stop();
  lifecycle_->Stop();
  (void)client_->Delete(kube::resources::kNodePools, "", pool);
}

TEST_F(NodeClaimLifecycleE2eTest, DeletesANodeClaimWithoutCapacity) {
  const std::string name = CreateClaim({"no-such-type.large"});
  StartControllers();
  ASSERT_TRUE(WaitFor([&] { return ClaimDeleting(name); }, kTimeout, kPoll));
  EXPECT_EQ(lifecycle_->launches(), 1);
  EXPECT_TRUE(kube::IsNotFound(GetNode(name).status()));
}

TEST_F(NodeClaimLifecycleE2eTest, GarbageCollectsANodeClaimWhoseInstanceIsGone) {
  const std::string name = CreateClaim();
  StartControllers();
  ASSERT_TRUE(WaitFor(
      [&] { return ClaimConditionIs(name, kConditionRegistered, core::ConditionStatus::kTrue); },
      kTimeout, kPoll));
  EXPECT_FALSE(ClaimDeleting(name));
  // The instance (the kwok Node) disappears behind Dovetail's back.
  ASSERT_TRUE(
      kube::RemoveFinalizer(*client_, kube::resources::kNodes, "", name, v1::kTerminationFinalizer)
          .ok());
  ASSERT_TRUE(client_->Delete(kube::resources::kNodes, "", name).ok());
  ASSERT_TRUE(WaitFor([&] { return ClaimDeleting(name); }, kTimeout, kPoll));
  // The pass counts its deletions when it ends, after the rest of its work: wait for it.
  EXPECT_TRUE(WaitFor([&] { return gc_->stats().node_claims_deleted >= 1; }, kTimeout, kPoll));
}

TEST_F(NodeClaimLifecycleE2eTest, GarbageCollectsAnInstanceWithoutNodeClaim) {
  // A machine launched for a NodeClaim that was never written (e.g. a crash before the status
  // write, then the NodeClaim deleted).
  v1::NodeClaim orphan;
  orphan.metadata.name = UniqueName("orphan");
  orphan.metadata.uid = "uid-" + orphan.metadata.name;
  orphan.metadata.labels = {{"karpenter.sh/nodepool", "lifecycle-e2e"}};
  orphan.spec.requirements = {{.key = "node.kubernetes.io/instance-type",
                               .op = core::SelectorOperator::kIn,
                               .values = {"c7k.large"}}};
  absl::StatusOr<v1::NodeClaim> launched = provider_->Create(orphan);
  ASSERT_TRUE(launched.ok()) << launched.status();
  claims_.push_back(orphan.metadata.name);  // cleanup of the Node
  ASSERT_TRUE(GetNode(orphan.metadata.name).ok());
  StartControllers();
  ASSERT_TRUE(WaitFor([&] { return kube::IsNotFound(GetNode(orphan.metadata.name).status()); },
                      kTimeout, kPoll))
      << "the orphaned instance was not deleted";
  // The pass counts its deletions when it ends, after the rest of its work: wait for it.
  EXPECT_TRUE(WaitFor([&] { return gc_->stats().instances_deleted >= 1; }, kTimeout, kPoll));
}

}  // namespace
}  // namespace dovetail::controllers::nodeclaim
