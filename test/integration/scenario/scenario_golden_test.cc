// One Scenario, two readers (issue 21): the objects of examples/simulate and of a generated mix
// (zone and hostname spread, pod affinity and anti-affinity across namespaces, node affinity,
// taints, DaemonSets, an in-flight NodeClaim, existing nodes with bound pods, a StatefulSet with
// claims of a zonal StorageClass, a claim bound to a zonal volume, ignored pods) are created in a
// real API server of their own, the pending pods marked Unschedulable as the kube-scheduler would.
// Then the same objects, as the API server returns them, are read by
// scenario::ManifestScenario::FromManifests (what `dovetail simulate` does) and the live cluster by
// scenario::FromCluster (the real informers and cluster state, the kwok cloud provider serving the
// AWS catalog), and both are solved by simulate::Solve: the plans' JSON (docs/simulate.md, without
// the timings) must be byte-identical.
//
// The fixture's API server is this test's alone (kube_scenario): FromCluster reads the whole
// cluster. Each case deletes what it created (but namespaces) before the next.

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dovetail/apis/core/manifest.h"
#include "dovetail/cloudprovider/kwok/kwok_cloud_provider.h"
#include "dovetail/common/clock.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/resource.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/scenario/from_cluster.h"
#include "dovetail/scenario/from_manifests.h"
#include "dovetail/simulate/simulation.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/cluster_informers.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/kube/crds.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::scenario {
namespace {

using nlohmann::json;
namespace res = kube::resources;

const kube::Resource* ResourceOf(const std::string& kind) {
  static const kube::Resource* const kAll[] = {
      &res::kNamespaces,        &res::kStorageClasses,
      &res::kPersistentVolumes, &res::kPersistentVolumeClaims,
      &res::kEC2NodeClasses,    &res::kNodePools,
      &res::kNodeClaims,        &res::kNodes,
      &res::kDaemonSets,        &res::kPods};
  for (const kube::Resource* r : kAll) {
    if (r->kind == kind) return r;
  }
  return nullptr;
}

// The order objects are created in: what others refer to first.
int CreationRank(const std::string& kind) {
  static const char* const kOrder[] = {
      "Namespace",    "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
      "EC2NodeClass", "NodePool",     "NodeClaim",        "Node",
      "DaemonSet",    "Pod"};
  for (int i = 0; i < static_cast<int>(std::size(kOrder)); ++i) {
    if (kind == kOrder[i]) return i;
  }
  return static_cast<int>(std::size(kOrder));
}

json Requests(const std::string& cpu, const std::string& memory) {
  return {{"requests", {{"cpu", cpu}, {"memory", memory}}}};
}

json Container(const std::string& cpu, const std::string& memory) {
  return json::array({{{"name", "main"},
                       {"image", "registry.k8s.io/pause:3.10"},
                       {"resources", Requests(cpu, memory)}}});
}

json Deployment(const std::string& ns, const std::string& name, int replicas, json pod_spec) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", {{"app", name}}}}},
            {"template", {{"metadata", {{"labels", {{"app", name}}}}}, {"spec", pod_spec}}}}}};
}

json NodePool(const std::string& name, json requirements, json extra_spec = json::object()) {
  json spec = {
      {"nodeClassRef", {{"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", "mix"}}},
      {"requirements", std::move(requirements)}};
  spec.update(extra_spec);
  return {{"apiVersion", "karpenter.sh/v1"},
          {"kind", "NodePool"},
          {"metadata", {{"name", name}}},
          {"spec", {{"template", {{"spec", spec}}}, {"limits", {{"cpu", "2000"}}}}}};
}

json In(const std::string& key, std::vector<std::string> values) {
  return {{"key", key}, {"operator", "In"}, {"values", values}};
}

json ExistingNode(const std::string& name, const std::string& zone, const std::string& type,
                  const std::string& cpu, const std::string& memory) {
  const json capacity = {{"cpu", cpu}, {"memory", memory}, {"pods", "110"}};
  json node = {{"apiVersion", "v1"}, {"kind", "Node"}};
  node["metadata"]["name"] = name;
  node["metadata"]["labels"] = {{"kubernetes.io/hostname", name},
                                {"kubernetes.io/os", "linux"},
                                {"kubernetes.io/arch", "amd64"},
                                {"topology.kubernetes.io/zone", zone},
                                {"node.kubernetes.io/instance-type", type}};
  node["spec"]["providerID"] = Cat("aws:///", zone, "/i-", name);
  node["status"] = {{"capacity", capacity}, {"allocatable", capacity}};
  return node;
}

// The generated mix: deterministic (a fixed seed picks the sizes).
std::vector<json> GeneratedMix() {
  std::mt19937 rng(21);
  auto pick = [&rng](std::vector<std::string> options) {
    return options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng)];
  };
  std::vector<json> out;
  out.push_back(
      {{"apiVersion", "karpenter.k8s.aws/v1"},
       {"kind", "EC2NodeClass"},
       {"metadata", {{"name", "mix"}}},
       {"spec",
        {{"role", "KarpenterNodeRole-mix"},
         {"amiSelectorTerms", {{{"alias", "al2023@latest"}}}},
         {"subnetSelectorTerms", {{{"tags", {{"karpenter.sh/discovery", "mix"}}}}}},
         {"securityGroupSelectorTerms", {{{"tags", {{"karpenter.sh/discovery", "mix"}}}}}}}}});
  out.push_back(NodePool("mix-general", {In("karpenter.sh/capacity-type", {"spot", "on-demand"}),
                                         In("karpenter.k8s.aws/instance-category", {"c", "m", "r"}),
                                         In("kubernetes.io/arch", {"amd64"})}));
  out.push_back(NodePool(
      "mix-arm",
      {In("karpenter.sh/capacity-type", {"on-demand"}), In("kubernetes.io/arch", {"arm64"}),
       In("karpenter.k8s.aws/instance-category", {"c", "m"})},
      {{"taints", {{{"key", "arch"}, {"value", "arm64"}, {"effect", "NoSchedule"}}}}}));
  for (const char* team : {"team-a", "team-b"}) {
    out.push_back({{"apiVersion", "v1"},
                   {"kind", "Namespace"},
                   {"metadata", {{"name", team}, {"labels", {{"tier", "mix"}}}}}});
  }
  out.push_back({{"apiVersion", "storage.k8s.io/v1"},
                 {"kind", "StorageClass"},
                 {"metadata", {{"name", "mix-zonal"}}},
                 {"provisioner", "ebs.csi.aws.com"},
                 {"volumeBindingMode", "WaitForFirstConsumer"},
                 {"allowedTopologies",
                  {{{"matchLabelExpressions",
                     {{{"key", "topology.kubernetes.io/zone"}, {"values", {"us-east-1b"}}}}}}}}});
  out.push_back({{"apiVersion", "v1"},
                 {"kind", "PersistentVolume"},
                 {"metadata", {{"name", "mix-pv"}}},
                 {"spec",
                  {{"capacity", {{"storage", "10Gi"}}},
                   {"accessModes", {"ReadWriteOnce"}},
                   {"csi", {{"driver", "ebs.csi.aws.com"}, {"volumeHandle", "vol-mix"}}},
                   {"claimRef", {{"namespace", "team-a"}, {"name", "mix-bound"}}},
                   {"nodeAffinity",
                    {{"required",
                      {{"nodeSelectorTerms",
                        {{{"matchExpressions",
                           {In("topology.kubernetes.io/zone", {"us-east-1c"})}}}}}}}}}}}});
  out.push_back({{"apiVersion", "v1"},
                 {"kind", "PersistentVolumeClaim"},
                 {"metadata", {{"name", "mix-bound"}, {"namespace", "team-a"}}},
                 {"spec",
                  {{"accessModes", {"ReadWriteOnce"}},
                   {"volumeName", "mix-pv"},
                   {"storageClassName", ""},
                   {"resources", {{"requests", {{"storage", "10Gi"}}}}}}}});
  // Existing capacity: two nodes of no pool, an in-flight NodeClaim of mix-general.
  out.push_back(ExistingNode("mix-node-a", "us-east-1a", "m5.2xlarge", "8", "32Gi"));
  out.push_back(ExistingNode("mix-node-b", "us-east-1b", "c5.xlarge", "4", "8Gi"));
  out.push_back({{"apiVersion", "karpenter.sh/v1"},
                 {"kind", "NodeClaim"},
                 {"metadata",
                  {{"name", "mix-general-inflight"},
                   {"labels",
                    {{"karpenter.sh/nodepool", "mix-general"},
                     {"topology.kubernetes.io/zone", "us-east-1a"},
                     {"node.kubernetes.io/instance-type", "m5.xlarge"},
                     {"kubernetes.io/arch", "amd64"},
                     {"karpenter.sh/capacity-type", "on-demand"}}}}},
                 {"spec",
                  {{"nodeClassRef",
                    {{"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", "mix"}}},
                   {"requirements", {In("karpenter.sh/nodepool", {"mix-general"})}}}},
                 {"status",
                  {{"providerID", "aws:///us-east-1a/i-inflight"},
                   {"capacity", {{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "58"}}},
                   {"allocatable", {{"cpu", "3920m"}, {"memory", "14Gi"}, {"pods", "58"}}}}}});
  for (int i = 0; i < 3; ++i) {
    json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata",
         {{"name", Cat("mix-bound-", i)}, {"namespace", "team-a"}, {"labels", {{"app", "web"}}}}},
        {"spec",
         {{"nodeName", i == 2 ? "mix-node-b" : "mix-node-a"},
          {"containers", Container(pick({"500m", "1", "2"}), pick({"1Gi", "2Gi"}))}}}};
    out.push_back(std::move(pod));
  }
  out.push_back({{"apiVersion", "apps/v1"},
                 {"kind", "DaemonSet"},
                 {"metadata", {{"name", "mix-agent"}, {"namespace", "kube-system"}}},
                 {"spec",
                  {{"selector", {{"matchLabels", {{"app", "mix-agent"}}}}},
                   {"template",
                    {{"metadata", {{"labels", {{"app", "mix-agent"}}}}},
                     {"spec",
                      {{"tolerations", {{{"operator", "Exists"}}}},
                       {"containers", Container("200m", "256Mi")}}}}}}}});
  // Workloads: zone and hostname spread, anti-affinity, affinity across namespaces.
  json web = {{"topologySpreadConstraints",
               {{{"maxSkew", 1},
                 {"topologyKey", "topology.kubernetes.io/zone"},
                 {"whenUnsatisfiable", "DoNotSchedule"},
                 {"labelSelector", {{"matchLabels", {{"app", "web"}}}}}},
                {{"maxSkew", 2},
                 {"topologyKey", "kubernetes.io/hostname"},
                 {"whenUnsatisfiable", "ScheduleAnyway"},
                 {"labelSelector", {{"matchLabels", {{"app", "web"}}}}}}}},
              {"containers", Container(pick({"250m", "500m"}), pick({"512Mi", "1Gi"}))}};
  out.push_back(Deployment("team-a", "web", 17, web));
  json cache = {{"affinity",
                 {{"podAntiAffinity",
                   {{"requiredDuringSchedulingIgnoredDuringExecution",
                     {{{"topologyKey", "kubernetes.io/hostname"},
                       {"labelSelector", {{"matchLabels", {{"app", "cache"}}}}}}}}}}}},
                {"containers", Container(pick({"1", "2"}), pick({"4Gi", "6Gi"}))}};
  out.push_back(Deployment("team-a", "cache", 4, cache));
  json api = {
      {"affinity",
       {{"podAffinity",
         {{"preferredDuringSchedulingIgnoredDuringExecution",
           {{{"weight", 50},
             {"podAffinityTerm",
              {{"topologyKey", "topology.kubernetes.io/zone"},
               {"namespaceSelector", {{"matchLabels", {{"tier", "mix"}}}}},
               {"labelSelector", {{"matchLabels", {{"app", "cache"}}}}}}}}}}}},
        {"nodeAffinity",
         {{"requiredDuringSchedulingIgnoredDuringExecution",
           {{"nodeSelectorTerms",
             {{{"matchExpressions", {In("karpenter.sh/capacity-type", {"on-demand"})}}}}}}}}}}},
      {"containers", Container(pick({"750m", "1500m"}), pick({"1Gi", "3Gi"}))}};
  out.push_back(Deployment("team-b", "api", 6, api));
  json arm = {{"nodeSelector", {{"kubernetes.io/arch", "arm64"}}},
              {"tolerations", {{{"key", "arch"}, {"operator", "Equal"}, {"value", "arm64"}}}},
              {"containers", Container(pick({"500m", "1"}), "2Gi")}};
  out.push_back(Deployment("team-b", "worker-arm", 5, arm));
  out.push_back({{"apiVersion", "apps/v1"},
                 {"kind", "StatefulSet"},
                 {"metadata", {{"name", "db"}, {"namespace", "team-b"}}},
                 {"spec",
                  {{"replicas", 3},
                   {"serviceName", "db"},
                   {"selector", {{"matchLabels", {{"app", "db"}}}}},
                   {"template",
                    {{"metadata", {{"labels", {{"app", "db"}}}}},
                     {"spec", {{"containers", Container("2", "8Gi")}}}}},
                   {"volumeClaimTemplates",
                    {{{"metadata", {{"name", "data"}}},
                      {"spec",
                       {{"accessModes", {"ReadWriteOnce"}},
                        {"storageClassName", "mix-zonal"},
                        {"resources", {{"requests", {{"storage", "20Gi"}}}}}}}}}}}}});
  // A pod on the bound claim (zone c), one that opts out, one with a restricted selector.
  json with_claim = {
      {"containers", Container("1", "1Gi")},
      {"volumes", {{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", "mix-bound"}}}}}}};
  out.push_back({{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"metadata", {{"name", "mix-with-claim"}, {"namespace", "team-a"}}},
                 {"spec", with_claim}});
  json opt_out = {
      {"affinity",
       {{"nodeAffinity",
         {{"requiredDuringSchedulingIgnoredDuringExecution",
           {{"nodeSelectorTerms",
             {{{"matchExpressions",
                {{{"key", "karpenter.sh/nodepool"}, {"operator", "DoesNotExist"}}}}}}}}}}}}},
      {"containers", Container("100m", "128Mi")}};
  out.push_back({{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"metadata", {{"name", "mix-opt-out"}, {"namespace", "team-a"}}},
                 {"spec", opt_out}});
  out.push_back({{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"metadata", {{"name", "mix-hostname"}, {"namespace", "team-a"}}},
                 {"spec",
                  {{"nodeSelector", {{"kubernetes.io/hostname", "somewhere"}}},
                   {"containers", Container("100m", "128Mi")}}}});
  return out;
}

std::vector<apis::core::Manifest> ToManifests(const std::vector<json>& objects,
                                              const std::string& file) {
  std::vector<apis::core::Manifest> out;
  for (const json& o : objects) {
    apis::core::Manifest m;
    m.json = o;
    m.api_version = o.value("apiVersion", "");
    m.kind = o.value("kind", "");
    m.name = o["metadata"].value("name", "");
    m.namespace_ = o["metadata"].value("namespace", "");
    m.position.file = file;
    m.position.line = static_cast<int>(out.size()) + 1;
    out.push_back(std::move(m));
  }
  return out;
}

// The plan's JSON without the timings.
std::string PlanJson(const simulate::Result& result) {
  json plan = simulate::ToJson(result);
  plan.erase("solveSeconds");
  plan.erase("lowerBoundSeconds");
  return plan.dump(2);
}

class ScenarioGoldenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rest_ = kube::testing::NewRestClient(kube::testing::KubeconfigFromEnv());
    ASSERT_NE(rest_, nullptr);
    client_ = std::make_unique<kube::Client>(*rest_);
    kube::testing::InstallCrds(*client_, DOVETAIL_SOURCE_DIR, "dovetail-scenario-test");
    auto catalog = simulate::LoadCatalog({.catalog = "aws"});
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    catalog_ = *std::move(catalog);
  }

  void TearDown() override { DeleteCreated(); }

  // Creates `objects` (their namespaces first), marks the unbound pods Unschedulable, and returns
  // them as the API server holds them.
  std::vector<json> Create(std::vector<json> objects) {
    std::stable_sort(objects.begin(), objects.end(), [](const json& a, const json& b) {
      return CreationRank(a["kind"]) < CreationRank(b["kind"]);
    });
    std::vector<json> stored;
    for (json& o : objects) {
      const std::string kind = o["kind"];
      const kube::Resource* r = ResourceOf(kind);
      EXPECT_NE(r, nullptr) << kind;
      if (r == nullptr) continue;
      const std::string ns = r->namespaced ? o["metadata"].value("namespace", "default") : "";
      if (!ns.empty() && ns != "default" && ns != "kube-system") EnsureNamespace(ns);
      json status = o.contains("status") ? o["status"] : json();
      o.erase("status");
      auto created = client_->Create(*r, ns, o.dump());
      if (kind == "Namespace" && !created.ok() && kube::IsAlreadyExists(created.status())) {
        auto patched =
            client_->Patch(*r, "", o["metadata"]["name"].get<std::string>(),
                           kube::PatchType::kMerge, json{{"metadata", o["metadata"]}}.dump());
        EXPECT_TRUE(patched.ok()) << patched.status();
        created = client_->Get(*r, "", o["metadata"]["name"].get<std::string>());
      }
      EXPECT_TRUE(created.ok()) << kind << ": " << created.status() << "\n" << o.dump();
      if (!created.ok()) continue;
      const std::string name = o["metadata"]["name"];
      if (kind != "Namespace") created_.push_back({r, ns, name});
      if (kind == "Pod" && !o["spec"].contains("nodeName")) {
        status = {{"conditions",
                   {{{"type", "PodScheduled"},
                     {"status", "False"},
                     {"reason", "Unschedulable"},
                     {"message", "0/2 nodes are available"}}}}};
      }
      if (!status.is_null()) {
        auto patched = client_->Patch(*r, ns, name, kube::PatchType::kMerge,
                                      json{{"status", status}}.dump(), {}, "status");
        EXPECT_TRUE(patched.ok()) << kind << "/" << name << ": " << patched.status();
      }
      auto got = client_->Get(*r, ns, name);
      EXPECT_TRUE(got.ok()) << got.status();
      if (got.ok()) stored.push_back(json::parse(*got));
    }
    return stored;
  }

  void EnsureNamespace(const std::string& ns) {
    if (client_->Get(res::kNamespaces, "", ns).ok()) return;
    kube::testing::CreateNamespace(*client_, ns);
  }

  // Deletes what Create made (finalizers dropped, pods at once) and waits until it is gone.
  // Namespaces stay: without kube-controller-manager a deleted one never finishes terminating.
  void DeleteCreated() {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
      (void)client_->Patch(*it->resource, it->ns, it->name, kube::PatchType::kMerge,
                           R"({"metadata":{"finalizers":null}})");
      (void)client_->Delete(*it->resource, it->ns, it->name, {.grace_period_seconds = 0});
    }
    for (const Created& c : created_) {
      EXPECT_TRUE(kube::testing::WaitFor([&] {
        return kube::IsNotFound(client_->Get(*c.resource, c.ns, c.name).status());
      })) << c.resource->kind
          << " " << c.ns << "/" << c.name << " was not deleted";
    }
    created_.clear();
  }

  // The plan of the objects read as manifests, and of the live cluster; both must match.
  void ExpectSamePlans(const std::vector<json>& input, const std::string& label) {
    const absl::Time now = absl::Now();
    const solver::Options options;
    auto read = ManifestScenario::FromManifests(ToManifests(input, label), now);
    ASSERT_TRUE(read.ok()) << read.status();
    std::vector<json> stored = Create((*read)->objects());
    ASSERT_FALSE(HasFailure());

    auto from_manifests = ManifestScenario::FromManifests(ToManifests(stored, label), now);
    ASSERT_TRUE(from_manifests.ok()) << from_manifests.status();
    auto manifest_plan = simulate::Run(**from_manifests, catalog_, options);
    ASSERT_TRUE(manifest_plan.ok()) << manifest_plan.status();

    FakeClock clock(now);
    state::Cluster cluster(clock);
    state::ClusterInformers informers(*client_, cluster);
    cloudprovider::kwok::KwokCloudProvider cloud(*client_, catalog_);
    informers.Start();
    ASSERT_TRUE(informers.WaitForSync(absl::Now() + absl::Seconds(60)));
    ASSERT_TRUE(informers.VolumesSynced(absl::Now() + absl::Seconds(60)));
    const Scenario live = FromCluster(cluster, informers, cloud, now);
    informers.Stop();
    auto live_plan = simulate::Solve(live, options);
    ASSERT_TRUE(live_plan.ok()) << live_plan.status();

    const std::string expected = PlanJson(*manifest_plan);
    EXPECT_EQ(PlanJson(*live_plan), expected) << label;
    EXPECT_FALSE(manifest_plan->plan.node_claims.empty()) << expected;
    last_plan_ = json::parse(expected);
  }

  struct Created {
    const kube::Resource* resource;
    std::string ns;
    std::string name;
  };

  std::unique_ptr<kube::RestClient> rest_;
  std::unique_ptr<kube::Client> client_;
  cloudprovider::Catalog catalog_;
  std::vector<Created> created_;
  json last_plan_;
};

TEST_F(ScenarioGoldenTest, ExamplesReadAlikeFromManifestsAndFromTheCluster) {
  auto files =
      ManifestScenario::FromFiles({Cat(DOVETAIL_SOURCE_DIR, "/examples/simulate")}, absl::Now());
  ASSERT_TRUE(files.ok()) << files.status();
  ExpectSamePlans((*files)->objects(), "examples/simulate");
}

TEST_F(ScenarioGoldenTest, GeneratedMixReadsAlikeFromManifestsAndFromTheCluster) {
  ExpectSamePlans(GeneratedMix(), "generated mix");
  if (HasFatalFailure()) return;
  // The mix exercises what it claims: the bound pods and the in-flight claim are existing
  // capacity, the claims constrain zones, and the filtered pods are reported.
  const std::string plan = last_plan_.dump();
  EXPECT_NE(plan.find("mix-node-a"), std::string::npos) << plan;
  EXPECT_NE(plan.find("mix-general-inflight"), std::string::npos) << plan;
  for (const json& claim : last_plan_["nodeClaims"]) {
    for (const json& pod : claim["pods"]) {
      if (pod == "team-a/mix-with-claim") {
        EXPECT_EQ(claim["zone"], "us-east-1c") << plan;
      }
      if (pod.get<std::string>().rfind("team-b/db-", 0) == 0) {
        EXPECT_EQ(claim["zone"], "us-east-1b") << plan;
      }
    }
  }
  std::vector<std::string> unschedulable;
  for (const json& u : last_plan_["unschedulable"]) unschedulable.push_back(u["pod"]);
  EXPECT_NE(std::find(unschedulable.begin(), unschedulable.end(), "team-a/mix-opt-out"),
            unschedulable.end())
      << plan;
  EXPECT_NE(std::find(unschedulable.begin(), unschedulable.end(), "team-a/mix-hostname"),
            unschedulable.end())
      << plan;
}

}  // namespace
}  // namespace dovetail::scenario
