// The provisioning controller against a real kube-apiserver: a NodePool (CRD from charts/) with
// limits, pods marked Unschedulable through the status subresource (no kube-scheduler here), the
// real informers, cluster state and event recorder, and the kwok CloudProvider for instance types
// and launches. Checks the NodeClaims created (count, requirements, labels, owner reference,
// requests), that the pool's limits hold across two batches, and the pods' events.
//
// The NodeClaim lifecycle controller is not part of this test: the test launches the created
// NodeClaims itself through the kwok provider and writes status.providerID/capacity, as the
// launch step does, so that the second batch sees them as capacity.
//
// The cluster-state informers read through the fault proxy of test/integration/kube, which makes
// the pod named kUndecodablePod undecodable wherever a list or watch event carries it.
//
// Other integration tests share the API server, so every assertion is about this test's objects.

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/cloudprovider/kwok/kwok_cloud_provider.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "dovetail/common/quantity.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/provisioning/provisioner.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/event_recorder.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/cluster_informers.h"
#include "dovetail/state/state_test_util.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/kube/crds.h"
#include "test/integration/kube/fault_proxy.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::controllers::provisioning {
namespace {

using kube::testing::UniqueName;
using kube::testing::WaitFor;
namespace v1 = apis::v1;

constexpr char kUndecodablePod[] = "undecodable-pod";

nlohmann::json ToJson(const ResourceList& list) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, quantity] : list) out[name] = quantity.ToString();
  return out;
}

// 4-vCPU on-demand types only, and at most 8 CPUs: two nodes.
nlohmann::json NodePoolJson(const std::string& name) {
  return {
      {"apiVersion", "karpenter.sh/v1"},
      {"kind", "NodePool"},
      {"metadata", {{"name", name}}},
      {"spec",
       {{"template",
         {{"metadata", {{"labels", {{"team", "prov-it"}}}}},
          {"spec",
           {{"requirements",
             {{{"key", "karpenter.kwok.sh/instance-cpu"}, {"operator", "In"}, {"values", {"4"}}},
              {{"key", "karpenter.sh/capacity-type"},
               {"operator", "In"},
               {"values", {"on-demand"}}}}},
            {"startupTaints", {{{"key", "example.com/agent"}, {"effect", "NoSchedule"}}}},
            {"expireAfter", "48h"},
            {"nodeClassRef",
             {{"group", "karpenter.kwok.sh"}, {"kind", "KWOKNodeClass"}, {"name", "default"}}}}}}},
        {"limits", {{"cpu", "8"}}}}}};
}

class ProvisioningIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rest_ = kube::testing::NewRestClient(kube::testing::KubeconfigFromEnv());
    ASSERT_NE(rest_, nullptr);
    client_ = std::make_unique<kube::Client>(*rest_);
    kube::testing::InstallCrds(*client_, DOVETAIL_SOURCE_DIR, "dovetail-provisioning-test");
    ns_ = UniqueName("prov-it");
    kube::testing::CreateNamespace(*client_, ns_);

    auto catalog = cloudprovider::kwok::SyntheticCatalog();
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    cloud_ = std::make_unique<cloudprovider::kwok::KwokCloudProvider>(*client_, *catalog);
    events_ = std::make_unique<kube::EventRecorder>(*client_, clock_, kube::EventRecorderOptions{});
    proxy_ = std::make_unique<kube::testing::FaultProxy>(kube::testing::KubeconfigFromEnv());
    proxy_->SetFaults({.undecodable = kUndecodablePod});
    informer_rest_ = kube::testing::NewRestClient(proxy_->ClientConfig());
    ASSERT_NE(informer_rest_, nullptr);
    informer_client_ = std::make_unique<kube::Client>(*informer_rest_);
    informers_ = std::make_unique<state::ClusterInformers>(*informer_client_, cluster_);
    deps_ = std::make_unique<Dependencies>(
        Dependencies{*client_, cluster_, *informers_, *cloud_, clock_, *events_, &metrics_});

    // The pool exists (and is Ready) before the controller starts.
    pool_ = UniqueName("prov-it");
    auto created = client_->Create(kube::resources::kNodePools, "", NodePoolJson(pool_).dump());
    ASSERT_TRUE(created.ok()) << created.status();
    pool_uid_ = nlohmann::json::parse(*created)["metadata"]["uid"];
    MarkReady(pool_);

    provisioner_ = std::make_unique<Provisioner>(
        *deps_, Options{.batch_idle_duration = absl::Milliseconds(200),
                        .batch_max_duration = absl::Seconds(2),
                        .require_ready_node_pools = true});
    informers_->Start();
    ASSERT_TRUE(informers_->WaitForSync(absl::Now() + absl::Seconds(60)));
  }

  void MarkReady(const std::string& pool) {
    const nlohmann::json ready = {{"status",
                                   {{"conditions",
                                     {{{"type", "Ready"},
                                       {"status", "True"},
                                       {"reason", "Ready"},
                                       {"message", ""},
                                       {"lastTransitionTime", "2026-01-01T00:00:00Z"}}}}}}};
    auto patched = client_->Patch(kube::resources::kNodePools, "", pool, kube::PatchType::kMerge,
                                  ready.dump(), {}, "status");
    ASSERT_TRUE(patched.ok()) << patched.status();
  }

  // The pool as the informer sees it has Ready=True (a pool seen before MarkReady's status patch
  // is skipped as not Ready, without the events the tests wait for).
  static bool Ready(const std::shared_ptr<const v1::NodePool>& pool) {
    if (pool == nullptr) return false;
    const apis::core::Condition* ready = v1::FindCondition(pool->status.conditions, "Ready");
    return ready != nullptr && ready->status == apis::core::ConditionStatus::kTrue;
  }

  std::string Describe() {
    const Stats stats = provisioner_->stats();
    std::string out = absl::StrCat(
        "passes=", stats.passes, " considered=", stats.pods_considered,
        " created=", stats.node_claims_created, " create_errors=", stats.node_claim_create_errors,
        " unschedulable=", stats.pods_unschedulable, " last_error=", stats.last_error, "\n");
    for (const char* pod : {"p1", "p2", "p3", "p4", "p5"}) {
      for (const auto& [reason, note] : PodEvents(pod)) {
        absl::StrAppend(&out, pod, ": ", reason, ": ", note, "\n");
      }
    }
    return out;
  }

  bool Unschedulable(const std::string& pod) {
    auto info = informers_->pods().store().Get(ns_ + "/" + pod);
    return info != nullptr && info->unschedulable;
  }

  void TearDown() override {
    if (provisioner_ != nullptr) provisioner_->Stop();
    provisioner_.reset();
    if (informers_ != nullptr) informers_->Stop();
    if (client_ == nullptr) return;
    // No kube-controller-manager here: the namespace would never empty itself, and pending pods
    // left behind would be provisioned for by later tests.
    // Grace period 0: a bound pod would otherwise wait for a kubelet that does not exist.
    for (const std::string& name : pods_) {
      (void)client_->Delete(kube::resources::kPods, ns_, name, {.grace_period_seconds = 0});
    }
    for (const std::string& name : ClaimNames()) {
      (void)client_->Delete(kube::resources::kNodes, "", name);
      (void)client_->Delete(kube::resources::kNodeClaims, "", name);
    }
    for (const std::string& name : extra_nodes_) {
      (void)client_->Delete(kube::resources::kNodes, "", name);
      (void)client_->Delete(kube::resources::kNodeClaims, "", name);
    }
    (void)client_->Delete(kube::resources::kNodePools, "", pool_);
    for (const std::string& name : extra_pools_) {
      (void)client_->Delete(kube::resources::kNodePools, "", name);
    }
    for (const auto& [resource, name] : cluster_objects_) (void)client_->Delete(resource, "", name);
    (void)client_->Delete(kube::resources::kNamespaces, "", ns_);
  }

  // A pod of this test's namespace that only this test's pool may serve: other tests sharing the
  // API server may leave NodeClaims and Nodes behind, and a small pod would fit on them.
  nlohmann::json OwnPoolPodJson(const std::string& name) {
    nlohmann::json pod = kube::testing::PodJson(ns_, name);
    pod["spec"]["nodeSelector"] = {{"karpenter.sh/nodepool", pool_}};
    return pod;
  }

  // A pending pod the kube-scheduler found no room for.
  // `claim`: a Dynamic Resource Allocation claim (by template) the container uses.
  // `volume_claim`: a PersistentVolumeClaim the pod mounts.
  void CreatePendingPod(const std::string& name, const std::string& cpu, bool claim = false,
                        const std::string& volume_claim = "") {
    nlohmann::json pod = OwnPoolPodJson(name);
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu;
    if (!volume_claim.empty()) {
      pod["spec"]["volumes"] = {
          {{"name", "data"}, {"persistentVolumeClaim", {{"claimName", volume_claim}}}}};
    }
    if (claim) {
      pod["spec"]["resourceClaims"] = {{{"name", "gpu"}, {"resourceClaimTemplateName", "gpu"}}};
      pod["spec"]["containers"][0]["resources"]["claims"] = {{{"name", "gpu"}}};
    }
    auto created = client_->Create(kube::resources::kPods, ns_, pod.dump());
    ASSERT_TRUE(created.ok()) << created.status();
    pods_.push_back(name);
    const nlohmann::json status = {{"status",
                                    {{"conditions",
                                      {{{"type", "PodScheduled"},
                                        {"status", "False"},
                                        {"reason", "Unschedulable"},
                                        {"message", "0/0 nodes are available"}}}}}}};
    auto patched = client_->Patch(kube::resources::kPods, ns_, name, kube::PatchType::kMerge,
                                  status.dump(), {}, "status");
    ASSERT_TRUE(patched.ok()) << patched.status();
  }

  std::vector<v1::NodeClaim> Claims() {
    std::vector<v1::NodeClaim> out;
    auto list = client_->List(kube::resources::kNodeClaims, "");
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return out;
    const nlohmann::json body = nlohmann::json::parse(list->body);
    for (const auto& item : body["items"]) {
      auto claim = apis::core::DecodeAs<v1::NodeClaim>(item);
      EXPECT_TRUE(claim.ok()) << claim.status();
      if (!claim.ok()) continue;
      auto pool = claim->metadata.labels.find("karpenter.sh/nodepool");
      if (pool != claim->metadata.labels.end() && pool->second == pool_) out.push_back(*claim);
    }
    return out;
  }
  std::vector<std::string> ClaimNames() {
    std::vector<std::string> out;
    for (const auto& claim : Claims()) out.push_back(claim.metadata.name);
    return out;
  }

  // What the launch step of the NodeClaim lifecycle does: the provider creates the machine (a
  // kwok Node) and the NodeClaim's status gets its provider id, capacity and allocatable.
  void Launch(const v1::NodeClaim& claim) {
    auto launched = cloud_->Create(claim);
    ASSERT_TRUE(launched.ok()) << launched.status();
    const nlohmann::json status = {{"status",
                                    {{"providerID", launched->status.provider_id},
                                     {"capacity", ToJson(launched->status.capacity)},
                                     {"allocatable", ToJson(launched->status.allocatable)}}}};
    auto patched = client_->Patch(kube::resources::kNodeClaims, "", claim.metadata.name,
                                  kube::PatchType::kMerge, status.dump(), {}, "status");
    ASSERT_TRUE(patched.ok()) << patched.status();
  }

  // events.k8s.io/v1 Events about the pod: reason -> notes.
  std::vector<std::pair<std::string, std::string>> PodEvents(const std::string& pod) {
    std::vector<std::pair<std::string, std::string>> out;
    auto list = client_->List(kube::resources::kEvents, ns_);
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return out;
    const nlohmann::json body = nlohmann::json::parse(list->body);
    for (const auto& item : body["items"]) {
      if (item["regarding"].value("name", "") != pod) continue;
      out.emplace_back(item.value("reason", ""), item.value("note", ""));
    }
    return out;
  }
  bool HasEvent(const std::string& pod, const std::string& reason, const std::string& fragment) {
    for (const auto& [r, note] : PodEvents(pod)) {
      if (r == reason && note.find(fragment) != std::string::npos) return true;
    }
    return false;
  }

  RealClock clock_;
  metrics::Registry metrics_;
  state::Cluster cluster_{clock_};
  std::unique_ptr<kube::RestClient> rest_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<cloudprovider::kwok::KwokCloudProvider> cloud_;
  std::unique_ptr<kube::EventRecorder> events_;
  std::unique_ptr<kube::testing::FaultProxy> proxy_;
  std::unique_ptr<kube::RestClient> informer_rest_;
  std::unique_ptr<kube::Client> informer_client_;
  std::unique_ptr<state::ClusterInformers> informers_;
  std::unique_ptr<Dependencies> deps_;
  std::unique_ptr<Provisioner> provisioner_;
  std::string ns_;
  std::string pool_;
  std::string pool_uid_;
  std::vector<std::string> pods_;
  std::vector<std::string> extra_nodes_;
  std::vector<std::pair<kube::Resource, std::string>> cluster_objects_;  // deleted at the end
  std::vector<std::string> extra_pools_;  // Nodes and NodeClaims of that name made by a test
};

TEST_F(ProvisioningIntegrationTest, CreatesNodeClaimsForPendingPodsAndHoldsLimitsAcrossBatches) {
  // Batch 1: three pods of 2.5 CPUs; a 4-vCPU node holds one; the 8-CPU limit allows two nodes.
  // They are pending before the controller starts, so they form one batch.
  for (const char* name : {"p1", "p2", "p3"}) CreatePendingPod(name, "2500m");
  ASSERT_TRUE(
      WaitFor([&] { return Unschedulable("p1") && Unschedulable("p2") && Unschedulable("p3"); }));
  provisioner_->Start();
  ASSERT_TRUE(WaitFor([&] { return provisioner_->stats().pods_unschedulable >= 1; }))
      << provisioner_->stats().last_error;
  std::vector<v1::NodeClaim> claims = Claims();
  ASSERT_EQ(claims.size(), 2u) << Describe();
  EXPECT_EQ(provisioner_->stats().node_claims_created, 2);
  EXPECT_EQ(metrics_
                .NewCounter("karpenter_nodeclaims_created_total", "",
                            {"reason", "nodepool", "min_values_relaxed"})
                .Value({"provisioned", pool_, "false"}),
            2);

  for (const v1::NodeClaim& claim : claims) {
    SCOPED_TRACE(claim.metadata.name);
    EXPECT_EQ(claim.metadata.name.rfind(pool_ + "-", 0), 0u);  // generateName
    ASSERT_EQ(claim.metadata.owner_references.size(), 1u);
    EXPECT_EQ(claim.metadata.owner_references[0].kind, "NodePool");
    EXPECT_EQ(claim.metadata.owner_references[0].name, pool_);
    EXPECT_EQ(claim.metadata.owner_references[0].uid, pool_uid_);
    EXPECT_EQ(claim.metadata.labels.at("karpenter.sh/nodepool"), pool_);
    EXPECT_EQ(claim.metadata.labels.at("team"), "prov-it");
    EXPECT_EQ(claim.metadata.labels.at("karpenter.kwok.sh/kwoknodeclass"), "default");
    EXPECT_EQ(claim.metadata.annotations.at("karpenter.sh/nodepool-hash-version"), "v3");
    EXPECT_FALSE(claim.metadata.annotations.at("karpenter.sh/nodepool-hash").empty());
    bool saw_types = false, saw_capacity_type = false;
    for (const auto& r : claim.spec.requirements) {
      if (r.key == "node.kubernetes.io/instance-type") {
        saw_types = true;
        EXPECT_FALSE(r.values.empty());
        for (const std::string& type : r.values) {
          EXPECT_TRUE(type.ends_with(".xlarge")) << type;  // the 4-vCPU sizes
        }
      }
      if (r.key == "karpenter.sh/capacity-type") {
        saw_capacity_type = true;
        EXPECT_EQ(r.values, std::vector<std::string>{"on-demand"});
      }
      EXPECT_NE(r.key, "karpenter.sh/registered");
      EXPECT_NE(r.key, "kubernetes.io/hostname");
    }
    EXPECT_TRUE(saw_types);
    EXPECT_TRUE(saw_capacity_type);
    EXPECT_EQ(claim.spec.resources.requests.at("cpu").MilliValue(), 2500);
    ASSERT_EQ(claim.spec.startup_taints.size(), 1u);
    EXPECT_EQ(claim.spec.startup_taints[0].key, "example.com/agent");
    EXPECT_EQ(claim.spec.expire_after, "48h");
    ASSERT_TRUE(claim.spec.node_class_ref.has_value());
    EXPECT_EQ(claim.spec.node_class_ref->kind, "KWOKNodeClass");
  }

  // Two pods were nominated to the new claims, the third was refused with the solver's reason.
  int nominated = 0, refused = 0;
  for (const char* pod : {"p1", "p2", "p3"}) {
    if (HasEvent(pod, "Nominated", "Pod should schedule on: nodeclaim/" + pool_ + "-")) {
      ++nominated;
    }
    // The solver's reason: the pool's limits.
    if (HasEvent(pod, "FailedScheduling", "exceed the nodepool's limits")) ++refused;
  }
  EXPECT_EQ(nominated, 2);
  EXPECT_EQ(refused, 1);

  // The claims launch (kwok Nodes); then batch 2 brings two more pods.
  for (const v1::NodeClaim& claim : claims) Launch(claim);
  ASSERT_TRUE(WaitFor([&] {
    if (!cluster_.Synced()) return false;
    for (const v1::NodeClaim& claim : claims) {
      auto node = cluster_.GetByNodeClaimName(claim.metadata.name);
      if (!node.has_value() || node->node == nullptr) return false;
    }
    return true;
  }));
  for (const char* name : {"p4", "p5"}) CreatePendingPod(name, "2500m");
  // A pass sees all five pending pods (nothing binds them in this fixture).
  ASSERT_TRUE(WaitFor([&] { return provisioner_->stats().last_pass_pods == 5; }))
      << provisioner_->stats().last_error;
  // Let a few more passes run (requeues and late events) before checking nothing overshot.
  absl::SleepFor(absl::Milliseconds(500));

  claims = Claims();
  EXPECT_EQ(claims.size(), 2u) << "the 8-CPU limit is used up by the two launched nodes";
  int64_t cpu = 0;
  for (const v1::NodeClaim& claim : claims) {
    auto it = claim.status.capacity.find("cpu");
    if (it != claim.status.capacity.end()) cpu += it->second.MilliValue();
  }
  EXPECT_LE(cpu, 8000);
  // The launched nodes (in flight, nothing bound) are nominated for two of the pending pods.
  int on_nodes = 0;
  for (const char* pod : {"p1", "p2", "p3", "p4", "p5"}) {
    if (HasEvent(pod, "Nominated", ", node/")) ++on_nodes;
  }
  EXPECT_GE(on_nodes, 2);
  // Equal pods: which three are refused is the solver's choice; the new ones heard either way.
  for (const char* pod : {"p4", "p5"}) {
    EXPECT_TRUE(HasEvent(pod, "FailedScheduling", "exceed the nodepool's limits") ||
                HasEvent(pod, "Nominated", "Pod should schedule on: nodeclaim/"))
        << pod;
  }
  EXPECT_EQ(provisioner_->stats().node_claim_create_errors, 0);

  // The limit is lowered mid-run below what is in use (4 CPUs, 8 launched): new launches stop and
  // nothing is deleted (Karpenter's semantics: limits gate launches, never remove nodes).
  const nlohmann::json lower = {{"spec", {{"limits", {{"cpu", "4"}}}}}};
  ASSERT_TRUE(
      client_->Patch(kube::resources::kNodePools, "", pool_, kube::PatchType::kMerge, lower.dump())
          .ok());
  ASSERT_TRUE(WaitFor([&] {
    auto pool = provisioner_->node_pools().store().Get(pool_);
    if (pool == nullptr) return false;
    auto cpu = pool->spec.limits.find("cpu");
    return cpu != pool->spec.limits.end() && cpu->second.MilliValue() == 4000;
  }));
  CreatePendingPod("p6", "2500m");  // fits neither launched node (1.5 CPUs free on each)
  ASSERT_TRUE(WaitFor([&] { return provisioner_->stats().last_pass_pods == 6; }))
      << provisioner_->stats().last_error;
  // A pass decided about p6 (refused with the limits reason) before the NodeClaims are counted.
  EXPECT_TRUE(WaitFor([&] {
    return HasEvent("p6", "FailedScheduling", "exceed the nodepool's limits");
  })) << Describe();
  const std::vector<v1::NodeClaim> after = Claims();
  EXPECT_EQ(after.size(), 2u) << "a NodeClaim was launched over the lowered limit";
  for (const v1::NodeClaim& claim : after) {
    EXPECT_FALSE(claim.metadata.deletion_timestamp.has_value())
        << claim.metadata.name << " was deleted when the limit was lowered";
  }
}

// Issue 20: one pending pod the informers cannot decode froze the pod cache, and the provisioner
// never saw the pods created after it. Now it is skipped and the others get their NodeClaims.
TEST_F(ProvisioningIntegrationTest, AnUndecodablePodDoesNotStopProvisioningForTheOthers) {
  CreatePendingPod(kUndecodablePod, "1");
  for (const char* name : {"p1", "p2"}) CreatePendingPod(name, "2500m");
  ASSERT_TRUE(WaitFor([&] { return Unschedulable("p1") && Unschedulable("p2"); }))
      << informers_->pods().stats().last_error;
  provisioner_->Start();
  ASSERT_TRUE(WaitFor([&] { return provisioner_->stats().node_claims_created >= 2; }))
      << Describe();
  EXPECT_EQ(Claims().size(), 2u) << Describe();
  EXPECT_EQ(informers_->pods().store().Get(ns_ + "/" + kUndecodablePod), nullptr);
  const kube::InformerStats stats = informers_->pods().stats();
  EXPECT_GE(stats.decode_errors, 2);  // its creation and its status update
  EXPECT_EQ(stats.errors, 0) << stats.last_error;
  EXPECT_GE(proxy_->injected(), 2);
}

TEST_F(ProvisioningIntegrationTest, IgnoresPodsOutsideItsRulesAndExplainsUnplaceablePods) {
  // Not marked Unschedulable by a scheduler: not provisionable.
  nlohmann::json quiet = kube::testing::PodJson(ns_, "quiet");
  ASSERT_TRUE(client_->Create(kube::resources::kPods, ns_, quiet.dump()).ok());
  pods_.push_back("quiet");
  // Too large for any 4-vCPU type: the solver's reason in the event.
  CreatePendingPod("huge", "16");
  // Dynamic Resource Allocation claims: no node (IGNORE_DRA_REQUESTS), a FailedScheduling event.
  CreatePendingPod("claims", "1", /*claim=*/true);
  // A pool no instance type satisfies (no 3-vCPU types): skipped, with an event on the pool.
  const std::string empty_pool = UniqueName("prov-it-none");
  nlohmann::json empty = NodePoolJson(empty_pool);
  empty["spec"]["template"]["spec"]["requirements"][0]["values"] = {"3"};
  ASSERT_TRUE(client_->Create(kube::resources::kNodePools, "", empty.dump()).ok());
  extra_pools_.push_back(empty_pool);
  MarkReady(empty_pool);
  ASSERT_TRUE(provisioner_->WaitForInformers(absl::Now() + absl::Seconds(30)));
  ASSERT_TRUE(WaitFor([&] {
    return provisioner_->node_pools().store().Get(pool_) != nullptr &&
           Ready(provisioner_->node_pools().store().Get(empty_pool)) &&
           informers_->pods().store().Get(ns_ + "/huge") != nullptr &&
           informers_->pods().store().Get(ns_ + "/huge")->unschedulable &&
           informers_->pods().store().Get(ns_ + "/claims") != nullptr &&
           informers_->pods().store().Get(ns_ + "/claims")->unschedulable;
  }));
  absl::StatusOr<PassResult> pass = provisioner_->RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_TRUE(pass->created.empty());
  EXPECT_GE(pass->unschedulable, 1);
  EXPECT_TRUE(ClaimNames().empty());
  EXPECT_TRUE(
      WaitFor([&] { return HasEvent("huge", "FailedScheduling", "Failed to schedule pod, "); }));
  EXPECT_TRUE(WaitFor(
      [&] { return HasEvent("claims", "FailedScheduling", "Dynamic Resource Allocation"); }));
  EXPECT_TRUE(PodEvents("quiet").empty());
  EXPECT_TRUE(WaitFor([&] {
    auto list = client_->List(kube::resources::kEvents, "default");
    if (!list.ok()) return false;
    const nlohmann::json body = nlohmann::json::parse(list->body);
    for (const auto& item : body["items"]) {
      if (item["regarding"].value("name", "") == empty_pool &&
          item.value("reason", "") == "NoCompatibleInstanceTypes") {
        return true;
      }
    }
    return false;
  }));
}

// Kubernetes accepts quantities far beyond 64-bit milli-units (a 10Pi request, a Node whose status
// reports 1e30 CPUs). They must neither stall the informers (every later object is still seen)
// nor fail the batch: the huge pod is unschedulable with a reason, the others get NodeClaims.
TEST_F(ProvisioningIntegrationTest, QuantitiesOfAnySizeNeitherStallTheCacheNorFailTheBatch) {
  const std::string absurd = UniqueName("prov-it-absurd");
  extra_nodes_.push_back(absurd);
  nlohmann::json node = state::testing::NodeJson(absurd, "", "1e30", "1e30");
  node["status"]["allocatable"]["pods"] = "1e30";
  // Tainted so that the solver keeps the ordinary pods off it.
  node["spec"]["taints"] = {{{"key", "example.com/tampered"}, {"effect", "NoSchedule"}}};
  ASSERT_TRUE(client_->Create(kube::resources::kNodes, "", node.dump()).ok());

  nlohmann::json huge = kube::testing::PodJson(ns_, "huge-memory");
  huge["spec"]["containers"][0]["resources"]["requests"]["memory"] = "10Pi";
  auto created = client_->Create(kube::resources::kPods, ns_, huge.dump());
  ASSERT_TRUE(created.ok()) << created.status();
  pods_.push_back("huge-memory");
  // What the API server stores round-trips through Dovetail's quantity.
  const std::string stored =
      nlohmann::json::parse(*created)["spec"]["containers"][0]["resources"]["requests"]["memory"];
  EXPECT_EQ(stored, "10Pi");
  EXPECT_EQ(Quantity::Parse(stored)->ToString(), stored);
  const nlohmann::json unschedulable = {{"status",
                                         {{"conditions",
                                           {{{"type", "PodScheduled"},
                                             {"status", "False"},
                                             {"reason", "Unschedulable"},
                                             {"message", "0/0 nodes are available"}}}}}}};
  ASSERT_TRUE(client_
                  ->Patch(kube::resources::kPods, ns_, "huge-memory", kube::PatchType::kMerge,
                          unschedulable.dump(), {}, "status")
                  .ok());
  CreatePendingPod("p1", "1");
  CreatePendingPod("p2", "1");
  ASSERT_TRUE(WaitFor([&] {
    return informers_->nodes().store().Get(absurd) != nullptr && Unschedulable("huge-memory") &&
           Unschedulable("p1") && Unschedulable("p2");
  }));
  ASSERT_TRUE(provisioner_->WaitForInformers(absl::Now() + absl::Seconds(30)));
  ASSERT_TRUE(WaitFor([&] { return provisioner_->node_pools().store().Get(pool_) != nullptr; }));
  absl::StatusOr<PassResult> pass = provisioner_->RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->created.size(), 1u) << Describe();
  EXPECT_EQ(pass->unschedulable, 1) << Describe();
  EXPECT_TRUE(WaitFor(
      [&] { return HasEvent("huge-memory", "FailedScheduling", "Failed to schedule pod, "); }));

  // The caches keep following: a pod created now is seen and provisioned for (it goes to the
  // launched NodeClaim, which has room).
  for (const v1::NodeClaim& claim : Claims()) Launch(claim);
  ASSERT_TRUE(WaitFor([&] { return cluster_.Synced(); }));
  CreatePendingPod("p3", "1");
  ASSERT_TRUE(WaitFor([&] { return Unschedulable("p3"); }));
  pass = provisioner_->RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->unschedulable, 1) << Describe();
  EXPECT_TRUE(WaitFor([&] {
    return HasEvent("p3", "Nominated", "Pod should schedule on: nodeclaim/");
  })) << Describe();
}

TEST_F(ProvisioningIntegrationTest, ProvisionsForThePodsOfANodeMarkedForDeletion) {
  // A launched NodeClaim of another pool with its Node, and a pod running there.
  const std::string name = UniqueName("prov-it-old");
  const std::string provider_id = "kwok://" + name;
  extra_nodes_.push_back(name);
  ASSERT_TRUE(client_
                  ->Create(kube::resources::kNodes, "",
                           state::testing::NodeJson(name, provider_id, "4", "16Gi").dump())
                  .ok());
  nlohmann::json claim = state::testing::NodeClaimJson(name, "other-pool", provider_id);
  ASSERT_TRUE(client_->Create(kube::resources::kNodeClaims, "", claim.dump()).ok());
  auto launched = client_->Patch(kube::resources::kNodeClaims, "", name, kube::PatchType::kMerge,
                                 nlohmann::json{{"status", claim["status"]}}.dump(), {}, "status");
  ASSERT_TRUE(launched.ok()) << launched.status();
  nlohmann::json pod = kube::testing::PodJson(ns_, "running", name);
  pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2500m";
  ASSERT_TRUE(client_->Create(kube::resources::kPods, ns_, pod.dump()).ok());
  pods_.push_back("running");
  ASSERT_TRUE(WaitFor([&] {
    auto node = cluster_.Get(provider_id);
    return cluster_.Synced() && node.has_value() && node->node != nullptr &&
           node->node_claim != nullptr && cluster_.PodsOn(name).size() == 1;
  }));
  ASSERT_TRUE(provisioner_->WaitForInformers(absl::Now() + absl::Seconds(30)));
  ASSERT_TRUE(WaitFor([&] { return provisioner_->node_pools().store().Get(pool_) != nullptr; }));

  // While the node stays, its pod needs nothing.
  absl::StatusOr<PassResult> pass = provisioner_->RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_TRUE(pass->created.empty());

  // Marked for deletion (a disruption command): capacity for its pod comes first.
  cluster_.MarkForDeletion({provider_id});
  pass = provisioner_->RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  ASSERT_EQ(pass->created.size(), 1u);
  EXPECT_EQ(provisioner_->stats().pods_reschedulable, 1);
  const std::vector<v1::NodeClaim> claims = Claims();
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].spec.resources.requests.at("cpu").MilliValue(), 2500);
  EXPECT_TRUE(WaitFor([&] {
    return HasEvent("running", "Nominated", "Pod should schedule on: nodeclaim/" + pool_ + "-");
  }));
}

TEST_F(ProvisioningIntegrationTest, NamespaceSelectorsSeeTheNamespacesLabels) {
  // Two small pods that repel each other per hostname, through a namespaceSelector naming this
  // namespace by its kubernetes.io/metadata.name label: two NodeClaims, not one.
  const nlohmann::json anti_affinity = {
      {"podAntiAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         {{{"labelSelector", {{"matchLabels", {{"app", "test"}}}}},
           {"namespaceSelector", {{"matchLabels", {{"kubernetes.io/metadata.name", ns_}}}}},
           {"topologyKey", "kubernetes.io/hostname"}}}}}}};
  for (const char* name : {"a1", "a2"}) {
    nlohmann::json pod = OwnPoolPodJson(name);
    pod["spec"]["affinity"] = anti_affinity;
    ASSERT_TRUE(client_->Create(kube::resources::kPods, ns_, pod.dump()).ok());
    pods_.push_back(name);
    const nlohmann::json status = {
        {"status",
         {{"conditions",
           {{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}}}}}};
    ASSERT_TRUE(client_
                    ->Patch(kube::resources::kPods, ns_, name, kube::PatchType::kMerge,
                            status.dump(), {}, "status")
                    .ok());
  }
  ASSERT_TRUE(provisioner_->WaitForInformers(absl::Now() + absl::Seconds(30)));
  ASSERT_TRUE(WaitFor([&] {
    return provisioner_->node_pools().store().Get(pool_) != nullptr && Unschedulable("a1") &&
           Unschedulable("a2");
  }));
  absl::StatusOr<PassResult> pass = provisioner_->RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->created.size(), 2u);
  EXPECT_EQ(pass->unschedulable, 0);
}

// Volume topology (scenario/volume_topology.h) through the shared PersistentVolumeClaim,
// PersistentVolume and StorageClass informers: a pod whose claim is bound to a volume in
// test-zone-b gets a NodeClaim that can only launch there; a pod whose unbound claim's StorageClass
// allows only test-zone-c gets one that can only launch there.
TEST_F(ProvisioningIntegrationTest, NewNodeClaimsFollowTheZonesOfThePodsVolumes) {
  const std::string sc = UniqueName("prov-it-zonal"), pv = UniqueName("prov-it-pv");
  auto create = [&](const kube::Resource& resource, const std::string& ns,
                    const nlohmann::json& object) {
    auto created = client_->Create(resource, ns, object.dump());
    ASSERT_TRUE(created.ok()) << created.status();
    if (ns.empty()) cluster_objects_.emplace_back(resource, object["metadata"]["name"]);
  };
  auto zone_term = [](const std::string& zone) {
    return nlohmann::json{{"key", "topology.kubernetes.io/zone"}, {"values", {zone}}};
  };
  create(kube::resources::kStorageClasses, "",
         {{"apiVersion", "storage.k8s.io/v1"},
          {"kind", "StorageClass"},
          {"metadata", {{"name", sc}}},
          {"provisioner", "zonal.example.com"},
          {"volumeBindingMode", "WaitForFirstConsumer"},
          {"allowedTopologies", {{{"matchLabelExpressions", {zone_term("test-zone-c")}}}}}});
  nlohmann::json in_b = zone_term("test-zone-b");
  in_b["operator"] = "In";
  create(kube::resources::kPersistentVolumes, "",
         {{"apiVersion", "v1"},
          {"kind", "PersistentVolume"},
          {"metadata", {{"name", pv}}},
          {"spec",
           {{"capacity", {{"storage", "1Gi"}}},
            {"accessModes", {"ReadWriteOnce"}},
            {"csi", {{"driver", "zonal.example.com"}, {"volumeHandle", pv}}},
            {"nodeAffinity",
             {{"required", {{"nodeSelectorTerms", {{{"matchExpressions", {in_b}}}}}}}}}}}});
  for (const auto& [name, source] :
       {std::pair<std::string, nlohmann::json>{"bound",
                                               {{"volumeName", pv}, {"storageClassName", ""}}},
        std::pair<std::string, nlohmann::json>{"fresh", {{"storageClassName", sc}}}}) {
    nlohmann::json spec = source;
    spec["accessModes"] = {"ReadWriteOnce"};
    spec["resources"] = {{"requests", {{"storage", "1Gi"}}}};
    create(kube::resources::kPersistentVolumeClaims, ns_,
           {{"apiVersion", "v1"},
            {"kind", "PersistentVolumeClaim"},
            {"metadata", {{"name", name}, {"namespace", ns_}}},
            {"spec", spec}});
  }
  CreatePendingPod("on-bound", "100m", false, "bound");
  CreatePendingPod("on-fresh", "100m", false, "fresh");
  ASSERT_TRUE(provisioner_->WaitForInformers(absl::Now() + absl::Seconds(30)));
  ASSERT_TRUE(WaitFor([&] {
    return informers_->pvcs().store().Get(ns_ + "/fresh") != nullptr &&
           informers_->pvs().store().Get(pv) != nullptr &&
           informers_->storage_classes().store().Get(sc) != nullptr && Unschedulable("on-bound") &&
           Unschedulable("on-fresh");
  }));
  absl::StatusOr<PassResult> pass = provisioner_->RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  ASSERT_EQ(pass->created.size(), 2u) << Describe();
  std::vector<std::vector<std::string>> zones;
  for (const v1::NodeClaim& claim : Claims()) {
    for (const auto& r : claim.spec.requirements) {
      if (r.key == "topology.kubernetes.io/zone") zones.push_back(r.values);
    }
  }
  std::sort(zones.begin(), zones.end());
  EXPECT_EQ(zones, (std::vector<std::vector<std::string>>{{"test-zone-b"}, {"test-zone-c"}}))
      << Describe();
}

// The on-demand base (dovetail.sh/on-demand-base): the pool admits spot and on-demand; of five
// new NodeClaims the first two are narrowed to on-demand and kwok launches them on on-demand
// offerings; once they run, a second batch is not narrowed. An invalid value is reported on the
// NodePool and ignored.
TEST_F(ProvisioningIntegrationTest, OnDemandBaseNarrowsTheFirstNodeClaimsOfThePool) {
  // Spot and on-demand, no limits, base 2 (a merge patch replaces the requirements list).
  const nlohmann::json patch = {
      {"metadata", {{"annotations", {{"dovetail.sh/on-demand-base", "2"}}}}},
      {"spec",
       {{"limits", nullptr},
        {"template",
         {{"spec",
           {{"requirements",
             {{{"key", "karpenter.kwok.sh/instance-cpu"}, {"operator", "In"}, {"values", {"4"}}},
              {{"key", "karpenter.sh/capacity-type"},
               {"operator", "In"},
               {"values", {"on-demand", "spot"}}}}}}}}}}}};
  ASSERT_TRUE(
      client_->Patch(kube::resources::kNodePools, "", pool_, kube::PatchType::kMerge, patch.dump())
          .ok());
  // 3 CPUs each: one pod per 4-vCPU node.
  for (const char* name : {"p1", "p2", "p3", "p4", "p5"}) CreatePendingPod(name, "3");
  ASSERT_TRUE(provisioner_->WaitForInformers(absl::Now() + absl::Seconds(30)));
  auto annotated = [&](const std::string& value) {
    auto pool = provisioner_->node_pools().store().Get(pool_);
    if (pool == nullptr) return false;
    auto it = pool->metadata.annotations.find("dovetail.sh/on-demand-base");
    return it != pool->metadata.annotations.end() && it->second == value &&
           pool->spec.limits.empty();
  };
  ASSERT_TRUE(WaitFor([&] {
    return annotated("2") && Unschedulable("p1") && Unschedulable("p2") && Unschedulable("p3") &&
           Unschedulable("p4") && Unschedulable("p5");
  }));

  auto capacity_types = [](const v1::NodeClaim& claim) {
    for (const auto& r : claim.spec.requirements) {
      if (r.key == "karpenter.sh/capacity-type") return r.values;
    }
    return std::vector<std::string>{};
  };
  absl::StatusOr<PassResult> pass = provisioner_->RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  ASSERT_EQ(pass->created.size(), 5u) << Describe();
  std::vector<v1::NodeClaim> claims = Claims();
  ASSERT_EQ(claims.size(), 5u);
  int narrowed = 0, launched_on_demand = 0;
  for (const v1::NodeClaim& claim : claims) {
    const std::vector<std::string> cts = capacity_types(claim);
    if (cts == std::vector<std::string>{"on-demand"}) {
      ++narrowed;
    } else {
      EXPECT_EQ(cts, (std::vector<std::string>{"on-demand", "spot"})) << claim.metadata.name;
    }
    auto launched = cloud_->Create(claim);
    ASSERT_TRUE(launched.ok()) << launched.status();
    if (launched->metadata.labels.at("karpenter.sh/capacity-type") == "on-demand") {
      ++launched_on_demand;
    }
    Launch(claim);
  }
  EXPECT_EQ(narrowed, 2);
  EXPECT_EQ(launched_on_demand, 2);  // kwok prefers spot where the NodeClaim allows it

  ASSERT_TRUE(WaitFor([&] {
    if (!cluster_.Synced()) return false;
    for (const v1::NodeClaim& claim : claims) {
      auto node = cluster_.GetByNodeClaimName(claim.metadata.name);
      if (!node.has_value() || node->node == nullptr) return false;
    }
    return true;
  }));
  // Two on-demand NodeClaims run: five more pods get five NodeClaims, none narrowed.
  for (const char* name : {"p6", "p7", "p8", "p9", "p10"}) CreatePendingPod(name, "3");
  ASSERT_TRUE(WaitFor([&] {
    return Unschedulable("p6") && Unschedulable("p7") && Unschedulable("p8") &&
           Unschedulable("p9") && Unschedulable("p10");
  }));
  pass = provisioner_->RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  ASSERT_EQ(pass->created.size(), 5u) << Describe();
  for (const std::string& name : pass->created) {
    auto claim = client_->Get(kube::resources::kNodeClaims, "", name);
    ASSERT_TRUE(claim.ok()) << claim.status();
    auto decoded = apis::core::DecodeAs<v1::NodeClaim>(nlohmann::json::parse(*claim));
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(capacity_types(*decoded), (std::vector<std::string>{"on-demand", "spot"})) << name;
  }

  // An invalid value: a Warning event on the NodePool, and the pool is still used.
  ASSERT_TRUE(
      client_
          ->Patch(kube::resources::kNodePools, "", pool_, kube::PatchType::kMerge,
                  nlohmann::json{
                      {"metadata", {{"annotations", {{"dovetail.sh/on-demand-base", "most"}}}}}}
                      .dump())
          .ok());
  ASSERT_TRUE(WaitFor([&] { return annotated("most"); }));
  for (const std::string& name : pass->created) {
    auto claim = cluster_.GetByNodeClaimName(name);
    ASSERT_TRUE(claim.has_value());
    auto created = client_->Get(kube::resources::kNodeClaims, "", name);
    ASSERT_TRUE(created.ok());
    auto decoded = apis::core::DecodeAs<v1::NodeClaim>(nlohmann::json::parse(*created));
    ASSERT_TRUE(decoded.ok());
    Launch(*decoded);
  }
  ASSERT_TRUE(WaitFor([&] { return cluster_.Synced(); }));
  CreatePendingPod("p11", "3");
  ASSERT_TRUE(WaitFor([&] { return Unschedulable("p11"); }));
  pass = provisioner_->RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->created.size(), 1u) << Describe();
  EXPECT_TRUE(WaitFor([&] {
    auto list = client_->List(kube::resources::kEvents, "default");
    if (!list.ok()) return false;
    const nlohmann::json body = nlohmann::json::parse(list->body);
    for (const auto& item : body["items"]) {
      if (item["regarding"].value("name", "") == pool_ &&
          item.value("reason", "") == "InvalidOnDemandBase" &&
          item.value("type", "") == "Warning" &&
          item.value("note", "").find("\"most\"") != std::string::npos) {
        return true;
      }
    }
    return false;
  }));
}

}  // namespace
}  // namespace dovetail::controllers::provisioning
