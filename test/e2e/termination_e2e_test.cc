// The termination controller on the full local control plane (kube-apiserver, kube-scheduler,
// kube-controller-manager computing PodDisruptionBudget status, kwok running the pods): a
// NodeClaim launched through the kwok CloudProvider, with the termination finalizers set as the
// lifecycle controller would, and pods bound by the real scheduler, is deleted. The controller must
// taint the Node, evict its pods in upstream's order through the Eviction API, keep a pod whose
// PDB allows no disruption until the PDB changes, force-delete do-not-disrupt pods at the
// NodeClaim's terminationGracePeriod (pods with a long grace period first), wait for the Node's
// VolumeAttachments, delete the instance, and remove the Node's finalizer before the NodeClaim's;
// a NotReady Node whose instance is gone is released without a drain.
//
// Observation is through watches of our own (informers over the test's namespace, Node and
// NodeClaim), so every assertion is about the API server's order of events, not about timing.

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "dovetail/apis/core/node.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/cloudprovider/errors.h"
#include "dovetail/cloudprovider/kwok/kwok_cloud_provider.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "dovetail/cloudprovider/metered_cloud_provider.h"
#include "dovetail/controllers/termination/termination_controller.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/controller_util.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/event_recorder.h"
#include "dovetail/kube/informer.h"
#include "dovetail/kube/typed_client.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/cluster_informers.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/kube/crds.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::controllers::termination {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;
using kube::testing::UniqueName;
using kube::testing::WaitFor;
using nlohmann::json;

constexpr absl::Duration kTimeout = absl::Seconds(120);
constexpr absl::Duration kPoll = absl::Milliseconds(200);

int64_t Revision(const std::string& resource_version) {
  int64_t rv = 0;
  return absl::SimpleAtoi(resource_version, &rv) ? rv : -1;
}

// What our own watches saw: the first time each pod was seen being deleted, in watch order.
struct Observed {
  int seq = 0;
  absl::Time deletion_timestamp;
  int64_t grace_seconds = -1;
};

class Recorder {
 public:
  void PodDeleting(const core::Pod& pod) {
    if (!pod.metadata.deletion_timestamp.has_value()) return;
    absl::MutexLock lock(&mu_);
    if (pods_.contains(pod.metadata.name)) return;
    pods_[pod.metadata.name] = {
        .seq = ++seq_,
        .deletion_timestamp = *pod.metadata.deletion_timestamp,
        .grace_seconds = pod.metadata.deletion_grace_period_seconds.value_or(-1)};
  }
  std::optional<Observed> Pod(const std::string& name) const {
    absl::MutexLock lock(&mu_);
    auto it = pods_.find(name);
    if (it == pods_.end()) return std::nullopt;
    return it->second;
  }
  void Deleted(const std::string& what, const std::string& resource_version) {
    absl::MutexLock lock(&mu_);
    deleted_rv_[what] = Revision(resource_version);
  }
  int64_t DeletedRevision(const std::string& what) const {
    absl::MutexLock lock(&mu_);
    auto it = deleted_rv_.find(what);
    return it == deleted_rv_.end() ? 0 : it->second;
  }

 private:
  mutable absl::Mutex mu_;
  int seq_ = 0;
  std::map<std::string, Observed> pods_;
  std::map<std::string, int64_t> deleted_rv_;
};

class TerminationE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rest_ = kube::testing::NewRestClient(kube::testing::KubeconfigFromEnv());
    ASSERT_NE(rest_, nullptr);
    client_ = std::make_unique<kube::Client>(*rest_);
    kube::testing::InstallCrds(*client_, DOVETAIL_SOURCE_DIR, "dovetail-termination-test");
    auto catalog = cloudprovider::kwok::SyntheticCatalog();
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    provider_ =
        std::make_unique<cloudprovider::kwok::KwokCloudProvider>(*client_, std::move(*catalog));
    ns_ = UniqueName("term-e2e");
    kube::testing::CreateNamespace(*client_, ns_);

    informers_ = std::make_unique<state::ClusterInformers>(*client_, cluster_);
    events_ = std::make_unique<kube::EventRecorder>(*client_, clock_, kube::EventRecorderOptions{});
    // Metered, so that a test can count the controller's cloud calls.
    metered_ = std::make_unique<cloudprovider::MeteredCloudProvider>(*provider_, metrics_,
                                                                     "node.termination");
    deps_ = std::make_unique<Dependencies>(Dependencies{.client = *client_,
                                                        .cluster = cluster_,
                                                        .informers = *informers_,
                                                        .cloud = *metered_,
                                                        .clock = clock_,
                                                        .events = *events_});
    controller_ = std::make_unique<TerminationController>(*deps_);

    // Our own watches of the test's pods.
    pod_watch_ = std::make_unique<kube::Informer<kube::ApiObjectCodec<core::Pod>>>(
        *client_, kube::resources::kPods, kube::ApiObjectCodec<core::Pod>{},
        kube::InformerOptions{.ns = ns_});
    registrations_.push_back(pod_watch_->AddHandler({
        .on_add = [this](const auto& pod) { recorder_.PodDeleting(*pod); },
        .on_update = [this](const auto&, const auto& pod) { recorder_.PodDeleting(*pod); },
        .on_delete = [this](const auto& pod) { recorder_.PodDeleting(*pod); },
    }));
    pod_watch_->Start();
    ASSERT_TRUE(pod_watch_->WaitForSync(absl::Now() + absl::Seconds(60)));

    informers_->Start();
    ASSERT_TRUE(informers_->WaitForSync(absl::Now() + absl::Seconds(60)));
    controller_->Start();
  }

  void TearDown() override {
    if (controller_ != nullptr) controller_->Stop();
    if (informers_ != nullptr) informers_->Stop();
    if (pod_watch_ != nullptr) pod_watch_->Stop();
    for (auto& watch : object_watches_) watch->Stop();
    for (auto& watch : claim_watches_) watch->Stop();
    if (client_ == nullptr) return;
    for (const std::string& name : nodes_) {
      (void)kube::RemoveFinalizer(*client_, kube::resources::kNodes, "", name,
                                  v1::kTerminationFinalizer);
      (void)client_->Delete(kube::resources::kNodes, "", name);
      (void)kube::RemoveFinalizer(*client_, kube::resources::kNodeClaims, "", name,
                                  v1::kTerminationFinalizer);
      (void)client_->Delete(kube::resources::kNodeClaims, "", name);
    }
    (void)client_->Delete(kube::resources::kNamespaces, "", ns_);
  }

  // A NodeClaim launched through the kwok provider, registered the way the lifecycle controller
  // does it (provider id and node name in its status, the termination finalizer on both objects,
  // the unregistered taint removed), its Node Ready and schedulable. Returns the name of both.
  std::string Launch(std::optional<std::string> termination_grace_period) {
    const std::string name = UniqueName("term-e2e");
    json claim = {
        {"apiVersion", "karpenter.sh/v1"},
        {"kind", "NodeClaim"},
        {"metadata",
         {{"name", name},
          {"labels", {{"karpenter.sh/nodepool", "term-e2e"}}},
          {"finalizers", {std::string(v1::kTerminationFinalizer)}}}},
        {"spec",
         {{"requirements",
           {{{"key", "node.kubernetes.io/instance-type"},
             {"operator", "In"},
             {"values", {"m7k.large", "c7k.large"}}},
            {{"key", "karpenter.sh/capacity-type"},
             {"operator", "In"},
             {"values", {"on-demand"}}}}},
          {"resources", {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}},
          {"nodeClassRef",
           {{"group", "karpenter.kwok.sh"}, {"kind", "KWOKNodeClass"}, {"name", "default"}}}}}};
    if (termination_grace_period.has_value()) {
      claim["spec"]["terminationGracePeriod"] = *termination_grace_period;
    }
    auto created = client_->Create(kube::resources::kNodeClaims, "", claim.dump());
    EXPECT_TRUE(created.ok()) << created.status();
    nodes_.push_back(name);
    kube::TypedClient<v1::NodeClaim> claims(*client_, kube::resources::kNodeClaims);
    absl::StatusOr<v1::NodeClaim> typed = claims.Get("", name);
    EXPECT_TRUE(typed.ok()) << typed.status();
    absl::StatusOr<v1::NodeClaim> launched = provider_->Create(*typed);
    EXPECT_TRUE(launched.ok()) << launched.status();
    const json status = {
        {"status", {{"providerID", launched->status.provider_id}, {"nodeName", name}}}};
    auto patched = client_->Patch(kube::resources::kNodeClaims, "", name, kube::PatchType::kMerge,
                                  status.dump(), {}, "status");
    EXPECT_TRUE(patched.ok()) << patched.status();

    absl::Status finalized =
        kube::AddFinalizer(*client_, kube::resources::kNodes, "", name, v1::kTerminationFinalizer);
    EXPECT_TRUE(finalized.ok()) << finalized;
    kube::TypedClient<core::Node> nodes(*client_, kube::resources::kNodes);
    const absl::Status registered = kube::RetryOnConflict([&]() -> absl::Status {
      absl::StatusOr<core::Node> node = nodes.Get("", name);
      if (!node.ok()) return node.status();
      std::erase_if(node->spec.taints,
                    [](const core::Taint& t) { return t.key == v1::kUnregisteredTaintKey; });
      return nodes.Update(*node).status();
    });
    EXPECT_TRUE(registered.ok()) << registered;
    EXPECT_TRUE(WaitFor(
        [&] {
          absl::StatusOr<core::Node> node = nodes.Get("", name);
          if (!node.ok() || !core::IsReady(*node)) return false;
          for (const auto& t : node->spec.taints) {
            if (t.key == v1::kTaintNodeNotReady) return false;
          }
          return true;
        },
        kTimeout, kPoll))
        << "node " << name << " did not become Ready";
    WatchDeletion(name);
    return name;
  }

  // Records the etcd revision at which the Node and the NodeClaim were deleted.
  void WatchDeletion(const std::string& name) {
    auto node = std::make_unique<kube::Informer<kube::ApiObjectCodec<core::Node>>>(
        *client_, kube::resources::kNodes, kube::ApiObjectCodec<core::Node>{},
        kube::InformerOptions{.field_selector = "metadata.name=" + name});
    registrations_.push_back(node->AddHandler(
        {.on_add = nullptr, .on_update = nullptr, .on_delete = [this, name](const auto& n) {
           recorder_.Deleted("node/" + name, n->metadata.resource_version);
         }}));
    auto claim = std::make_unique<kube::Informer<kube::ApiObjectCodec<v1::NodeClaim>>>(
        *client_, kube::resources::kNodeClaims, kube::ApiObjectCodec<v1::NodeClaim>{},
        kube::InformerOptions{.field_selector = "metadata.name=" + name});
    registrations_.push_back(claim->AddHandler(
        {.on_add = nullptr, .on_update = nullptr, .on_delete = [this, name](const auto& c) {
           recorder_.Deleted("nodeclaim/" + name, c->metadata.resource_version);
         }}));
    node->Start();
    claim->Start();
    ASSERT_TRUE(node->WaitForSync(absl::Now() + absl::Seconds(60)));
    ASSERT_TRUE(claim->WaitForSync(absl::Now() + absl::Seconds(60)));
    object_watches_.push_back(std::move(node));
    claim_watches_.push_back(std::move(claim));
  }

  json PodJson(const std::string& name, const std::string& node) const {
    json pod = kube::testing::PodJson(ns_, name);
    pod["metadata"]["labels"]["app"] = name;
    pod["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", node}};
    pod["spec"]["containers"][0]["resources"]["requests"] = {{"cpu", "10m"}, {"memory", "16Mi"}};
    pod["spec"]["terminationGracePeriodSeconds"] = 0;
    return pod;
  }

  void CreatePod(const json& pod) {
    auto created = client_->Create(kube::resources::kPods, ns_, pod.dump());
    ASSERT_TRUE(created.ok()) << created.status() << " " << pod.dump();
  }

  // A DaemonSet whose one pod runs on `node`.
  void CreateDaemonSet(const std::string& name, const std::string& node,
                       const std::string& priority_class) {
    json pod = PodJson(name, node);
    if (!priority_class.empty()) pod["spec"]["priorityClassName"] = priority_class;
    const json ds = {
        {"apiVersion", "apps/v1"},
        {"kind", "DaemonSet"},
        {"metadata", {{"name", name}, {"namespace", ns_}}},
        {"spec",
         {{"selector", {{"matchLabels", {{"app", name}}}}},
          {"template", {{"metadata", {{"labels", {{"app", name}}}}}, {"spec", pod["spec"]}}}}}};
    auto created = client_->Create(kube::resources::kDaemonSets, ns_, ds.dump());
    ASSERT_TRUE(created.ok()) << created.status();
  }

  std::vector<core::Pod> Pods() {
    kube::TypedClient<core::Pod> pods(*client_, kube::resources::kPods);
    absl::StatusOr<std::vector<core::Pod>> list = pods.List(ns_);
    EXPECT_TRUE(list.ok()) << list.status();
    return list.ok() ? *list : std::vector<core::Pod>{};
  }

  // The pod (of a DaemonSet: whose name starts with `prefix`), if it exists.
  std::optional<core::Pod> PodNamed(const std::string& prefix) {
    for (core::Pod& pod : Pods()) {
      if (pod.metadata.name == prefix || absl::StartsWith(pod.metadata.name, prefix + "-")) {
        return pod;
      }
    }
    return std::nullopt;
  }

  bool AllRunning(const std::vector<std::string>& prefixes) {
    for (const std::string& prefix : prefixes) {
      std::optional<core::Pod> pod = PodNamed(prefix);
      if (!pod.has_value() || pod->status.phase != core::PodPhase::kRunning) return false;
    }
    return true;
  }

  absl::StatusOr<v1::NodeClaim> GetClaim(const std::string& name) {
    return kube::TypedClient<v1::NodeClaim>(*client_, kube::resources::kNodeClaims).Get("", name);
  }
  // "Status/Reason" of a NodeClaim condition, or "" when it has none.
  std::string ClaimCondition(const std::string& name, std::string_view type) {
    absl::StatusOr<v1::NodeClaim> claim = GetClaim(name);
    if (!claim.ok()) return "";
    const core::Condition* c = v1::FindCondition(claim->status.conditions, type);
    if (c == nullptr) return "";
    const char* status = c->status == core::ConditionStatus::kTrue    ? "True"
                         : c->status == core::ConditionStatus::kFalse ? "False"
                                                                      : "Unknown";
    return absl::StrCat(status, "/", c->reason);
  }
  absl::StatusOr<core::Node> GetNode(const std::string& name) {
    return kube::TypedClient<core::Node>(*client_, kube::resources::kNodes).Get("", name);
  }

  // Notes of the events.k8s.io events about `name` with `reason`.
  std::vector<std::string> EventNotes(const std::string& ns, const std::string& name,
                                      const std::string& reason) {
    std::vector<std::string> notes;
    auto page = client_->List(kube::resources::kEvents, ns);
    if (!page.ok()) return notes;
    const json list = json::parse(page->body);
    for (const json& e : list.value("items", json::array())) {
      if (e.value("reason", "") != reason) continue;
      if (e.value("regarding", json::object()).value("name", "") != name) continue;
      notes.push_back(e.value("note", ""));
    }
    return notes;
  }

  // A NodeClaim with the termination finalizer and nothing in its status (never launched).
  void CreateBareNodeClaim(const std::string& name) {
    const json claim = {
        {"apiVersion", "karpenter.sh/v1"},
        {"kind", "NodeClaim"},
        {"metadata",
         {{"name", name},
          {"labels", {{"karpenter.sh/nodepool", "term-e2e"}}},
          {"finalizers", {std::string(v1::kTerminationFinalizer)}}}},
        {"spec",
         {{"requirements",
           {{{"key", "node.kubernetes.io/instance-type"}, {"operator", "In"}, {"values", {"x"}}}}},
          {"nodeClassRef",
           {{"group", "karpenter.kwok.sh"}, {"kind", "KWOKNodeClass"}, {"name", "default"}}}}}};
    auto created = client_->Create(kube::resources::kNodeClaims, "", claim.dump());
    ASSERT_TRUE(created.ok()) << created.status();
  }

  // The termination controller's calls of a cloud provider method so far.
  int64_t CloudCalls(const std::string& method) {
    const std::string prefix = absl::StrCat(
        "karpenter_cloudprovider_duration_seconds_count{controller=\"node.termination\",method=\"",
        method, "\",");
    for (absl::string_view line : absl::StrSplit(metrics_.Expose(), '\n')) {
      if (!absl::StartsWith(line, prefix)) continue;
      int64_t n = 0;
      if (absl::SimpleAtoi(line.substr(line.rfind(' ') + 1), &n)) return n;
    }
    return 0;
  }

  void DeleteNodeClaim(const std::string& name) {
    auto deleted = client_->Delete(kube::resources::kNodeClaims, "", name);
    ASSERT_TRUE(deleted.ok()) << deleted.status();
  }

  // The Node and the NodeClaim are gone, the instance with them, and the Node's finalizer went
  // first (its deletion has the lower etcd revision).
  void ExpectTerminated(const std::string& name) {
    ASSERT_TRUE(WaitFor([&] { return kube::IsNotFound(GetNode(name).status()); }, kTimeout, kPoll))
        << "node " << name << " was not deleted";
    ASSERT_TRUE(WaitFor([&] { return kube::IsNotFound(GetClaim(name).status()); }, kTimeout, kPoll))
        << "nodeclaim " << name << " was not deleted";
    EXPECT_TRUE(cloudprovider::IsNodeClaimNotFound(
        provider_->Get(std::string(cloudprovider::kwok::kProviderIdPrefix) + name).status()));
    ASSERT_TRUE(WaitFor(
        [&] {
          return recorder_.DeletedRevision("node/" + name) > 0 &&
                 recorder_.DeletedRevision("nodeclaim/" + name) > 0;
        },
        absl::Seconds(30), kPoll));
    EXPECT_LT(recorder_.DeletedRevision("node/" + name),
              recorder_.DeletedRevision("nodeclaim/" + name))
        << "the NodeClaim's finalizer was removed before the Node was gone";
  }

  RealClock clock_;
  state::Cluster cluster_{clock_};
  std::unique_ptr<kube::RestClient> rest_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<cloudprovider::kwok::KwokCloudProvider> provider_;
  metrics::Registry metrics_;
  std::unique_ptr<cloudprovider::MeteredCloudProvider> metered_;
  std::unique_ptr<state::ClusterInformers> informers_;
  std::unique_ptr<kube::EventRecorder> events_;
  std::unique_ptr<Dependencies> deps_;
  std::unique_ptr<TerminationController> controller_;
  std::unique_ptr<kube::Informer<kube::ApiObjectCodec<core::Pod>>> pod_watch_;
  std::vector<std::unique_ptr<kube::Informer<kube::ApiObjectCodec<core::Node>>>> object_watches_;
  std::vector<std::unique_ptr<kube::Informer<kube::ApiObjectCodec<v1::NodeClaim>>>> claim_watches_;
  Recorder recorder_;
  std::vector<kube::HandlerRegistration> registrations_;  // of the watches above, to recorder_
  std::string ns_;
  std::vector<std::string> nodes_;
};

TEST_F(TerminationE2eTest, DrainsInUpstreamOrderHonouringAPdbThenReleasesNodeBeforeNodeClaim) {
  const std::string node = Launch(std::nullopt);

  // Tier 1: two plain pods, one guarded by a PDB that allows no disruption. Tier 2: a DaemonSet's
  // pod. Tier 3: a system-cluster-critical pod. Tier 4: a system-node-critical DaemonSet's pod.
  // And a pod that tolerates the disrupted taint: never evicted.
  CreatePod(PodJson("plain", node));
  CreatePod(PodJson("guarded", node));
  json critical = PodJson("crit", node);
  critical["spec"]["priorityClassName"] = "system-cluster-critical";
  CreatePod(critical);
  json tolerant = PodJson("tolerant", node);
  tolerant["spec"]["tolerations"] = {
      {{"key", std::string(v1::kDisruptedTaintKey)}, {"operator", "Exists"}}};
  CreatePod(tolerant);
  CreateDaemonSet("ds", node, "");
  CreateDaemonSet("nodeds", node, "system-node-critical");
  const json pdb = {
      {"apiVersion", "policy/v1"},
      {"kind", "PodDisruptionBudget"},
      {"metadata", {{"name", "guarded"}, {"namespace", ns_}}},
      {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "guarded"}}}}}}}};
  ASSERT_TRUE(client_->Create(kube::resources::kPodDisruptionBudgets, ns_, pdb.dump()).ok());

  const std::vector<std::string> all = {"plain", "guarded", "crit", "tolerant", "ds", "nodeds"};
  ASSERT_TRUE(WaitFor([&] { return AllRunning(all); }, kTimeout, kPoll))
      << "the pods did not all run on " << node;
  std::map<std::string, std::string> pod_names;  // DaemonSet pods have generated names
  for (const std::string& name : all) pod_names[name] = PodNamed(name)->metadata.name;
  // The disruption controller has computed the PDB: no disruption allowed, one healthy pod.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto body = client_->Get(kube::resources::kPodDisruptionBudgets, ns_, "guarded");
        if (!body.ok()) return false;
        const json status = json::parse(*body).value("status", json::object());
        return status.value("currentHealthy", 0) == 1 && status.value("disruptionsAllowed", 1) == 0;
      },
      kTimeout, kPoll));

  DeleteNodeClaim(node);

  // Cordoned: tainted and out of load balancers.
  ASSERT_TRUE(WaitFor(
      [&] {
        absl::StatusOr<core::Node> n = GetNode(node);
        if (!n.ok()) return false;
        bool tainted = false;
        for (const auto& t : n->spec.taints) {
          tainted |= t.key == v1::kDisruptedTaintKey && t.effect == core::TaintEffect::kNoSchedule;
        }
        auto label =
            n->metadata.labels.find(std::string(v1::kLabelExcludeFromExternalLoadBalancers));
        return tainted && label != n->metadata.labels.end() && label->second == "karpenter";
      },
      kTimeout, kPoll))
      << "node " << node << " was not tainted";

  // The plain pod goes; the guarded one is refused by its PDB, with an event saying so.
  ASSERT_TRUE(WaitFor([&] { return recorder_.Pod("plain").has_value(); }, kTimeout, kPoll));
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const std::string& note : EventNotes("default", node, "FailedDraining")) {
          if (absl::StrContains(note, "guarded") &&
              absl::StrContains(note, "PodDisruptionBudget")) {
            return true;
          }
        }
        return false;
      },
      absl::Seconds(60), kPoll))
      << "no FailedDraining event about the PDB on node " << node;
  // While the PDB holds, nothing of the later tiers is touched and the Node stays.
  absl::SleepFor(absl::Seconds(3));
  for (const std::string name : {"guarded", "ds", "crit", "nodeds", "tolerant"}) {
    std::optional<core::Pod> pod = PodNamed(name);
    ASSERT_TRUE(pod.has_value()) << name;
    EXPECT_FALSE(pod->metadata.deletion_timestamp.has_value()) << name << " was deleted";
  }
  {
    absl::StatusOr<core::Node> n = GetNode(node);
    ASSERT_TRUE(n.ok()) << n.status();
    absl::StatusOr<v1::NodeClaim> c = GetClaim(node);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_TRUE(c->metadata.deletion_timestamp.has_value());
  }
  EXPECT_EQ(ClaimCondition(node, "Drained"), "Unknown/Draining");

  // The PDB now allows a disruption: the drain proceeds, tier by tier.
  const json relax = {{"spec", {{"minAvailable", 0}}}};
  ASSERT_TRUE(client_
                  ->Patch(kube::resources::kPodDisruptionBudgets, ns_, "guarded",
                          kube::PatchType::kMerge, relax.dump())
                  .ok());
  ExpectTerminated(node);

  std::map<std::string, int> seq;
  for (const std::string name : {"plain", "guarded", "ds", "crit", "nodeds"}) {
    std::optional<Observed> observed = recorder_.Pod(pod_names[name]);
    ASSERT_TRUE(observed.has_value()) << name << " was never deleted";
    seq[name] = observed->seq;
  }
  EXPECT_LT(seq["plain"], seq["guarded"]);
  EXPECT_LT(seq["guarded"], seq["ds"]);
  EXPECT_LT(seq["ds"], seq["crit"]);
  EXPECT_LT(seq["crit"], seq["nodeds"]);
  // The pod that tolerates the taint was not evicted (it is left to pod GC once the Node is gone).
  std::optional<Observed> tolerant_seen = recorder_.Pod("tolerant");
  if (tolerant_seen.has_value()) {
    EXPECT_GT(tolerant_seen->seq, seq["nodeds"]);
  }
}

TEST_F(TerminationE2eTest, ForcesDoNotDisruptPodsAtTheTerminationGracePeriod) {
  const std::string node = Launch("30s");
  // Kept by do-not-disrupt: one with a short grace period (deleted 5 s before the deadline), one
  // whose grace period outlasts the whole terminationGracePeriod (deleted at once, with the time
  // left). And a plain pod, evicted as usual.
  json short_pod = PodJson("dnd-short", node);
  short_pod["metadata"]["annotations"] = {{std::string(v1::kDoNotDisruptAnnotationKey), "true"}};
  short_pod["spec"]["terminationGracePeriodSeconds"] = 5;
  CreatePod(short_pod);
  json long_pod = PodJson("dnd-long", node);
  long_pod["metadata"]["annotations"] = {{std::string(v1::kDoNotDisruptAnnotationKey), "true"}};
  long_pod["spec"]["terminationGracePeriodSeconds"] = 600;
  CreatePod(long_pod);
  CreatePod(PodJson("plain", node));
  ASSERT_TRUE(WaitFor(
      [&] {
        return AllRunning({"dnd-short", "dnd-long", "plain"});
      },
      kTimeout, kPoll));

  DeleteNodeClaim(node);
  absl::StatusOr<v1::NodeClaim> claim = GetClaim(node);
  ASSERT_TRUE(claim.ok()) << claim.status();
  ASSERT_TRUE(claim->metadata.deletion_timestamp.has_value());
  const absl::Time deadline = *claim->metadata.deletion_timestamp + absl::Seconds(30);
  // The deadline is published on the NodeClaim.
  ASSERT_TRUE(WaitFor(
      [&] {
        absl::StatusOr<v1::NodeClaim> c = GetClaim(node);
        if (!c.ok()) return false;
        auto it = c->metadata.annotations.find(
            std::string(v1::kNodeClaimTerminationTimestampAnnotationKey));
        return it != c->metadata.annotations.end() &&
               it->second == absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", deadline, absl::UTCTimeZone());
      },
      absl::Seconds(30), kPoll))
      << "no termination timestamp annotation";

  // The long-grace pod is deleted at once, with no more than the time left.
  ASSERT_TRUE(
      WaitFor([&] { return recorder_.Pod("dnd-long").has_value(); }, absl::Seconds(20), kPoll));
  const Observed dnd_long = *recorder_.Pod("dnd-long");
  EXPECT_GT(dnd_long.grace_seconds, 0);
  EXPECT_LE(dnd_long.grace_seconds, 30);
  EXPECT_LE(dnd_long.deletion_timestamp, deadline + absl::Seconds(1));
  // The plain pod is evicted; the short-grace one is held, with an event saying why.
  ASSERT_TRUE(WaitFor([&] { return recorder_.Pod("plain").has_value(); }, kTimeout, kPoll));
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const std::string& note : EventNotes("default", node, "FailedDraining")) {
          if (absl::StrContains(note, "dnd-short") &&
              absl::StrContains(note, "karpenter.sh/do-not-disrupt")) {
            return true;
          }
        }
        return false;
      },
      absl::Seconds(20), kPoll))
      << "no FailedDraining event about the do-not-disrupt pod";
  // Then deleted no earlier than its own grace period before the deadline, gone by the deadline.
  ASSERT_TRUE(
      WaitFor([&] { return recorder_.Pod("dnd-short").has_value(); }, absl::Seconds(60), kPoll))
      << "the do-not-disrupt pod was never deleted";
  const Observed dnd_short = *recorder_.Pod("dnd-short");
  ASSERT_GT(dnd_short.grace_seconds, 0);
  const absl::Time requested =
      dnd_short.deletion_timestamp - absl::Seconds(dnd_short.grace_seconds);
  EXPECT_GE(requested, deadline - absl::Seconds(5) - absl::Seconds(1))
      << "deleted at " << requested << ", deadline " << deadline;
  EXPECT_LE(dnd_short.deletion_timestamp, deadline + absl::Seconds(1));
  ExpectTerminated(node);
}

TEST_F(TerminationE2eTest, WaitsForVolumeAttachmentsBeforeReleasingTheInstance) {
  const std::string node = Launch(std::nullopt);
  const std::string attachment = UniqueName("term-e2e-va");
  const json va = {{"apiVersion", "storage.k8s.io/v1"},
                   {"kind", "VolumeAttachment"},
                   {"metadata", {{"name", attachment}}},
                   {"spec",
                    {{"attacher", "e2e.dovetail.sh"},
                     {"nodeName", node},
                     {"source", {{"persistentVolumeName", "pv-" + attachment}}}}}};
  auto created = client_->Create(kube::resources::kVolumeAttachments, "", va.dump());
  ASSERT_TRUE(created.ok()) << created.status();

  DeleteNodeClaim(node);
  ASSERT_TRUE(
      WaitFor([&] { return !EventNotes("default", node, "AwaitingVolumeDetachment").empty(); },
              absl::Seconds(60), kPoll))
      << "no AwaitingVolumeDetachment event";
  // Held by the attachment.
  absl::SleepFor(absl::Seconds(2));
  EXPECT_TRUE(GetNode(node).ok());
  EXPECT_TRUE(GetClaim(node).ok());
  EXPECT_EQ(ClaimCondition(node, "Drained"), "True/Drained");
  EXPECT_EQ(ClaimCondition(node, "VolumesDetached"), "Unknown/AwaitingVolumeDetachment");
  EXPECT_EQ(ClaimCondition(node, "InstanceTerminating"), "");

  // Detached: the termination completes.
  auto deleted = client_->Delete(kube::resources::kVolumeAttachments, "", attachment);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  ExpectTerminated(node);
}

TEST_F(TerminationE2eTest, ReleasesANotReadyNodeWhoseInstanceIsGoneWithoutDraining) {
  // A NodeClaim whose instance is gone (its provider id names no kwok Node) and its Node, which no
  // kubelet (nor kwok) keeps Ready. A do-not-disrupt pod is bound to it: any drain would wait for
  // it for ever (no terminationGracePeriod).
  const std::string name = UniqueName("term-e2e-gone");
  const std::string provider_id =
      std::string(cloudprovider::kwok::kProviderIdPrefix) + name + "-instance";
  nodes_.push_back(name);
  CreateBareNodeClaim(name);
  const json status = {{"status", {{"providerID", provider_id}, {"nodeName", name}}}};
  ASSERT_TRUE(client_
                  ->Patch(kube::resources::kNodeClaims, "", name, kube::PatchType::kMerge,
                          status.dump(), {}, "status")
                  .ok());
  const json node = {{"apiVersion", "v1"},
                     {"kind", "Node"},
                     {"metadata",
                      {{"name", name},
                       {"labels", {{"karpenter.sh/nodepool", "term-e2e"}}},
                       {"finalizers", {std::string(v1::kTerminationFinalizer)}}}},
                     {"spec", {{"providerID", provider_id}}}};
  ASSERT_TRUE(client_->Create(kube::resources::kNodes, "", node.dump()).ok());
  WatchDeletion(name);
  json pod = PodJson("stranded", name);
  pod["spec"].erase("nodeSelector");
  pod["spec"]["nodeName"] = name;
  pod["metadata"]["annotations"] = {{std::string(v1::kDoNotDisruptAnnotationKey), "true"}};
  CreatePod(pod);
  // The controller sees both objects linked before the deletion.
  ASSERT_TRUE(WaitFor(
      [&] {
        std::optional<state::StateNode> s = cluster_.Get(provider_id);
        return s.has_value() && s->node != nullptr && s->node_claim != nullptr;
      },
      absl::Seconds(30), kPoll));

  DeleteNodeClaim(name);
  ExpectTerminated(name);
  // Released without a drain: never tainted for it, no eviction tried.
  EXPECT_TRUE(EventNotes("default", name, "FailedDraining").empty());
  EXPECT_TRUE(EventNotes(ns_, "stranded", "Evicted").empty());
}

// A NodeClaim that never launched (no provider id: every Create failed) is deleted by its user:
// the termination controller releases its finalizer without asking the cloud provider to delete
// anything (there is no instance) and without waiting for a Node.
TEST_F(TerminationE2eTest, ReleasesANeverLaunchedNodeClaimWithoutACloudDelete) {
  const std::string name = UniqueName("term-e2e-never");
  nodes_.push_back(name);
  CreateBareNodeClaim(name);
  ASSERT_TRUE(WaitFor([&] { return cluster_.GetByNodeClaimName(name).has_value(); },
                      absl::Seconds(30), kPoll));
  const int64_t deletes_before = CloudCalls("Delete");
  DeleteNodeClaim(name);
  ASSERT_TRUE(WaitFor([&] { return kube::IsNotFound(GetClaim(name).status()); }, kTimeout, kPoll))
      << "the never-launched NodeClaim kept its finalizer";
  EXPECT_EQ(CloudCalls("Delete"), deletes_before) << "the cloud provider was asked to delete";
}

}  // namespace
}  // namespace dovetail::controllers::termination
