// dovetail_provisioning_pass_bench: what one provisioning pass costs in time and heap allocations
// to build the solver's question (scenario::BuildSolverInput) and to solve it (solver::Solve).
// Provisioning builds the question on every pass (controllers/provisioning/provisioner.cc
// RunOnce), and that build reads every pod of the cluster as the solver's apis::core::Pod, the
// bound ones as well as the pending ones: about 22 x N pods. Without a cache each one is converted
// from the informer's compact PodInfo (state::ToPod) on every build; with the provisioner's
// scenario::PodCache only the pods that changed since the previous pass are. The allocation counts
// show such a change even where the shared machine's timings do not.
//
// Cluster (deterministic, seeded by the node count), generated as manifests (one JSON List) and
// read by scenario::ManifestScenario::FromManifests as `dovetail simulate` reads them (pods and
// nodes go through the informers' decoders into a state::Cluster), with the kwok synthetic
// catalog's types (simulate::SetInstanceTypes). Built once per N, outside the timed loops:
//   - one NodePool "default" (karpenter.sh/v1, KWOKNodeClass; instance-category c, m or r,
//     on-demand or spot, amd64, linux; no Ready condition, which the provisioner's default
//     accepts);
//   - N nodes, N in {100, 1000}. Each one is a Node and its launched NodeClaim with the same
//     provider id, so cluster state sees a managed, registered, initialized node. The type is
//     c7k.2xlarge, m7k.2xlarge, m7k.4xlarge or r7k.2xlarge, zones test-zone-a/b/c in turn, 30 %
//     spot;
//   - 50 Deployment-like groups app-<g>. Their pods are owned by a ReplicaSet app-<g>-<hash> and
//     labelled app=app-<g> and pod-template-hash. Requests are 100m-1 vCPU and 128Mi-2Gi, with a
//     memory limit equal to the request and the API server's default not-ready/unreachable
//     tolerations. Groups 0, 3, 6, ... carry a topologySpreadConstraint (maxSkew 1 on
//     topology.kubernetes.io/zone, DoNotSchedule, selecting app=app-<g>). Groups 1, 4, 7, ... carry
//     a preferred podAntiAffinity on kubernetes.io/hostname (same selector) and a required
//     nodeAffinity kubernetes.io/arch In [amd64]. The other groups have neither;
//   - bound pods (spec.nodeName, Running): each node gets one pod of each group, in a random
//     order, skipping a group whose pod no longer fits the node's allocatable, so nodes end up full
//     with about 20 pods on average, all of distinct groups;
//   - P = 2N pending pods (Pending, PodScheduled=False reason Unschedulable), cycling through the
//     groups. Since the nodes are full, most of these pods need new NodeClaims.
// Options are the provisioner's defaults: PREFERENCE_POLICY=Respect, MIN_VALUES_POLICY=Strict,
// NodePools without a Ready condition used, no LP lower bound.
//
// Benchmarks (names "<what>/<nodes>"):
//   input/N   BuildSolverInput, once per iteration, every pod converted (no PodCache)
//   pass/N    BuildSolverInput, then solver::Solve on its input, once per iteration (the rest of a
//             pass, such as events and launches, is not included)
//   input_cached/N, pass_cached/N
//             the same with a scenario::PodCache kept across iterations, as the provisioner and
//             the disruption controller keep one across passes: each pod was converted before
//             the loop, and a build reuses the conversions
// The question and the plan are destroyed inside the timed iteration, as they are at the end of a
// pass. Counters:
//   allocs, alloc_MB  heap allocations (operator new calls) per call and the bytes they asked for,
//                     in MB (10^6 bytes)
//   nodes, pods, bound_pods
//                     existing nodes, pods to place and bound pods in the question
//   cache_MB (cached only)
//                     what the build that filled the cache allocated beyond a build with the cache
//                     full, in MB: about the memory the cache keeps
//   new_nodes, on_existing, unschedulable (pass/N only)
//                     NodeClaims planned, pending pods placed on existing nodes, pods left
//                     unplaced. A change that only makes the pass cheaper must leave these alone.
// Allocations are counted by replacing the global operator new and delete (every form) in this
// program with malloc/free plus relaxed atomic counters. Memory that code takes from malloc
// directly is not counted.
// Read CPU time: the machine is shared. Not a unit of CI; never asserts on time.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <new>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "bench/generated_cluster.h"
#include "dovetail/apis/core/manifest.h"
#include "dovetail/cloudprovider/catalog.h"
#include "dovetail/cloudprovider/instance_type.h"
#include "dovetail/common/quantity.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/scenario/from_manifests.h"
#include "dovetail/scenario/pod_cache.h"
#include "dovetail/scenario/scenario.h"
#include "dovetail/scenario/solver_input.h"
#include "dovetail/simulate/simulation.h"
#include "dovetail/solver/solver.h"
#include "nlohmann/json.hpp"

// ---- Allocation counting ------------------------------------------------------------------------
// Every replaceable global allocation function is replaced (plain, array, aligned and nothrow
// forms, with every matching deallocation function) so that no allocation of the program, in the
// libraries included, escapes the count. Memory comes from malloc or aligned_alloc, and free
// releases both. A failed allocation throws without consulting the new-handler: that is enough for
// a benchmark.
namespace {

// Constant-initialised, so allocations made during static initialisation are counted safely.
constinit std::atomic<uint64_t> g_allocations{0};
constinit std::atomic<uint64_t> g_allocated_bytes{0};

void* CountedAlloc(std::size_t size) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  g_allocated_bytes.fetch_add(size, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}

void* CountedAlignedAlloc(std::size_t size, std::align_val_t align) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  g_allocated_bytes.fetch_add(size, std::memory_order_relaxed);
  // aligned_alloc takes a power-of-two alignment and a size that is a multiple of it.
  const std::size_t alignment = std::max(static_cast<std::size_t>(align), sizeof(void*));
  const std::size_t rounded = (std::max<std::size_t>(size, 1) + alignment - 1) & ~(alignment - 1);
  return std::aligned_alloc(alignment, rounded);
}

void* OrThrow(void* p) {
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(std::size_t size) { return OrThrow(CountedAlloc(size)); }
void* operator new[](std::size_t size) { return OrThrow(CountedAlloc(size)); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return CountedAlloc(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return CountedAlloc(size);
}
void* operator new(std::size_t size, std::align_val_t align) {
  return OrThrow(CountedAlignedAlloc(size, align));
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return OrThrow(CountedAlignedAlloc(size, align));
}
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return CountedAlignedAlloc(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return CountedAlignedAlloc(size, align);
}

void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

namespace dovetail::bench {
namespace {

using nlohmann::json;

struct Allocations {
  uint64_t count = 0;
  uint64_t bytes = 0;

  Allocations& operator+=(const Allocations& o) {
    count += o.count;
    bytes += o.bytes;
    return *this;
  }
  friend Allocations operator-(const Allocations& a, const Allocations& b) {
    return {a.count - b.count, a.bytes - b.bytes};
  }
};

// Allocations so far, program-wide.
Allocations Allocated() {
  return {g_allocations.load(std::memory_order_relaxed),
          g_allocated_bytes.load(std::memory_order_relaxed)};
}

// ---- The question -------------------------------------------------------------------------------

scenario::SolverQuestion Question(const scenario::Scenario& scenario,
                                  const scenario::InputOptions& options) {
  return scenario::BuildSolverInput(scenario, options);
}

// The provisioner's defaults (controllers/provisioning/provisioner.cc InputOptions).
scenario::InputOptions ProvisioningOptions() {
  scenario::InputOptions options;
  options.require_ready_node_pools = false;
  options.solver.lower_bound = false;  // the LP bound is for simulate only
  return options;
}

// ---- The cluster's manifests --------------------------------------------------------------------

constexpr int kGroups = 50;
constexpr char kNamespace[] = "apps";
constexpr char kPool[] = "default";
// The kwok catalog's default region and zones (cloudprovider/kwok/synthetic_catalog.h).
constexpr char kRegion[] = "test-region";
constexpr const char* kZones[] = {"test-zone-a", "test-zone-b", "test-zone-c"};
// Three 8-vCPU types and one 16-vCPU type: about 20 of the pods below fill one on average.
constexpr const char* kNodeTypes[] = {"c7k.2xlarge", "m7k.2xlarge", "m7k.4xlarge", "r7k.2xlarge"};

struct Shape {
  const char* cpu;
  const char* memory;
  int64_t milli;
  int64_t mib;
};
constexpr Shape kShapes[] = {{"100m", "128Mi", 100, 128}, {"250m", "256Mi", 250, 256},
                             {"250m", "512Mi", 250, 512}, {"500m", "512Mi", 500, 512},
                             {"500m", "1Gi", 500, 1024},  {"750m", "1536Mi", 750, 1536},
                             {"1", "1Gi", 1000, 1024},    {"1", "2Gi", 1000, 2048}};

struct Group {
  std::string app;
  std::string hash;         // pod-template-hash
  std::string replica_set;  // the pods' owner
  Shape shape;
  json affinity;  // null when none
  json spread;    // topologySpreadConstraints; null when none
};

std::vector<Group> MakeGroups(Rng& r) {
  std::vector<Group> groups;
  for (int g = 0; g < kGroups; ++g) {
    Group group;
    group.app = absl::StrCat("app-", g);
    group.hash = absl::StrCat(absl::Hex(r.Next() >> 24, absl::kZeroPad10));
    group.replica_set = absl::StrCat(group.app, "-", group.hash);
    group.shape = kShapes[static_cast<size_t>(g) % std::size(kShapes)];
    json selector;
    selector["matchLabels"]["app"] = group.app;
    if (g % 3 == 0) {
      json spread;
      spread["maxSkew"] = 1;
      spread["topologyKey"] = "topology.kubernetes.io/zone";
      spread["whenUnsatisfiable"] = "DoNotSchedule";
      spread["labelSelector"] = selector;
      group.spread = json::array({spread});
    } else if (g % 3 == 1) {
      json arch;
      arch["key"] = "kubernetes.io/arch";
      arch["operator"] = "In";
      arch["values"] = json::array({"amd64"});
      json term;
      term["matchExpressions"] = json::array({arch});
      json anti;
      anti["weight"] = 100;
      anti["podAffinityTerm"]["labelSelector"] = selector;
      anti["podAffinityTerm"]["topologyKey"] = "kubernetes.io/hostname";
      json required;
      required["nodeSelectorTerms"] = json::array({term});
      group.affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = required;
      group.affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] =
          json::array({anti});
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

json Condition(const char* type, const char* status, absl::Time at, const std::string& reason = "",
               const std::string& message = "") {
  json c = {{"type", type}, {"status", status}, {"lastTransitionTime", Rfc3339(at)}};
  if (!reason.empty()) c["reason"] = reason;
  if (!message.empty()) c["message"] = message;
  return c;
}

json Toleration(const char* key) {
  return {
      {"key", key}, {"operator", "Exists"}, {"effect", "NoExecute"}, {"tolerationSeconds", 300}};
}

// A pod of `g` bound to `node`, or pending when `node` is empty; `nodes` is the cluster's node
// count, for the scheduler's message.
json PodJson(const Group& g, const std::string& name, const std::string& node, int nodes) {
  const bool bound = !node.empty();
  const absl::Time created = kNow - (bound ? absl::Hours(1) : absl::Seconds(30));
  json meta;
  meta["name"] = name;
  meta["namespace"] = kNamespace;
  meta["uid"] = absl::StrCat("uid-", name);
  meta["creationTimestamp"] = Rfc3339(created);
  meta["labels"] = {{"app", g.app}, {"pod-template-hash", g.hash}};
  const json owner = {{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"},
                      {"name", g.replica_set},   {"uid", absl::StrCat("uid-", g.replica_set)},
                      {"controller", true},      {"blockOwnerDeletion", true}};
  meta["ownerReferences"] = json::array({owner});

  json container = {{"name", "app"},
                    {"image", absl::StrCat("registry.example.com/", g.app, ":1.0")}};
  container["ports"] = json::array({json{{"containerPort", 8080}, {"protocol", "TCP"}}});
  container["resources"]["requests"] = {{"cpu", g.shape.cpu}, {"memory", g.shape.memory}};
  container["resources"]["limits"] = {{"memory", g.shape.memory}};
  json spec;
  if (bound) spec["nodeName"] = node;
  spec["containers"] = json::array({container});
  spec["restartPolicy"] = "Always";
  spec["schedulerName"] = "default-scheduler";
  spec["terminationGracePeriodSeconds"] = 30;
  spec["tolerations"] = json::array(
      {Toleration("node.kubernetes.io/not-ready"), Toleration("node.kubernetes.io/unreachable")});
  if (!g.affinity.is_null()) spec["affinity"] = g.affinity;
  if (!g.spread.is_null()) spec["topologySpreadConstraints"] = g.spread;

  json status;
  status["qosClass"] = "Burstable";
  if (bound) {
    status["phase"] = "Running";
    status["startTime"] = Rfc3339(created);
    status["conditions"] = json::array(
        {Condition("PodScheduled", "True", created), Condition("Initialized", "True", created),
         Condition("ContainersReady", "True", created), Condition("Ready", "True", created)});
  } else {
    status["phase"] = "Pending";
    status["conditions"] = json::array({Condition(
        "PodScheduled", "False", created, "Unschedulable",
        absl::StrCat("0/", nodes, " nodes are available: ", nodes,
                     " Insufficient cpu. preemption: 0/", nodes, " nodes are available: ", nodes,
                     " No preemption victims found for incoming pod."))});
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", meta},
          {"spec", spec},
          {"status", status}};
}

json NodeClassRef() {
  return {{"group", "karpenter.kwok.sh"}, {"kind", "KWOKNodeClass"}, {"name", "default"}};
}

json Requirement(const std::string& key, const std::vector<std::string>& values) {
  return {{"key", key}, {"operator", "In"}, {"values", values}};
}

json NodePoolJson() {
  json spec;
  spec["nodeClassRef"] = NodeClassRef();
  spec["requirements"] = json::array(
      {Requirement("karpenter.k8s.aws/instance-category", {"c", "m", "r"}),
       Requirement("karpenter.sh/capacity-type", {"on-demand", "spot"}),
       Requirement("kubernetes.io/arch", {"amd64"}), Requirement("kubernetes.io/os", {"linux"})});
  json pool = {{"apiVersion", "karpenter.sh/v1"}, {"kind", "NodePool"}};
  pool["metadata"] = {{"name", kPool}, {"uid", "uid-nodepool-default"}};
  pool["spec"]["template"]["spec"] = spec;
  return pool;
}

struct NodeModel {
  std::string name;
  const cloudprovider::InstanceType* type = nullptr;
  std::string zone;
  std::string capacity_type;
};

json Resources(const ResourceList& list) {
  json out = json::object();
  for (const auto& [name, quantity] : list) out[name] = quantity.ToString();
  return out;
}

// The labels a kwok Node of a NodeClaim of this pool carries.
json NodeLabels(const NodeModel& node) {
  const std::string& type = node.type->name();
  const std::string family = type.substr(0, type.find('.'));
  return {{"karpenter.sh/nodepool", kPool},
          {"karpenter.sh/registered", "true"},
          {"karpenter.sh/initialized", "true"},
          {"karpenter.sh/capacity-type", node.capacity_type},
          {"node.kubernetes.io/instance-type", type},
          {"karpenter.k8s.aws/instance-category", family.substr(0, 1)},
          {"karpenter.k8s.aws/instance-family", family},
          {"topology.kubernetes.io/region", kRegion},
          {"topology.kubernetes.io/zone", node.zone},
          {"kubernetes.io/hostname", node.name},
          {"kubernetes.io/arch", "amd64"},
          {"kubernetes.io/os", "linux"}};
}

std::string ProviderId(const NodeModel& node) { return absl::StrCat("kwok://", node.name); }

json NodeJson(const NodeModel& node) {
  const absl::Time created = kNow - absl::Hours(2);
  json meta;
  meta["name"] = node.name;
  meta["uid"] = absl::StrCat("uid-", node.name);
  meta["creationTimestamp"] = Rfc3339(created);
  meta["labels"] = NodeLabels(node);
  json status;
  status["capacity"] = Resources(node.type->capacity());
  status["allocatable"] = Resources(node.type->Allocatable());
  status["conditions"] =
      json::array({Condition("Ready", "True", created + absl::Seconds(40), "KubeletReady",
                             "kubelet is posting ready status")});
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", meta},
          {"spec", {{"providerID", ProviderId(node)}}},
          {"status", status}};
}

// The launched NodeClaim behind `node`: the same provider id makes them one StateNode, managed.
json NodeClaimJson(const NodeModel& node, int index) {
  const absl::Time created = kNow - absl::Hours(2);
  json labels = NodeLabels(node);
  for (const char* key :
       {"karpenter.sh/registered", "karpenter.sh/initialized", "kubernetes.io/hostname"}) {
    labels.erase(key);
  }
  json meta;
  meta["name"] = absl::StrCat(kPool, "-", index);
  meta["uid"] = absl::StrCat("uid-nodeclaim-", index);
  meta["creationTimestamp"] = Rfc3339(created);
  meta["labels"] = labels;
  const json owner = {{"apiVersion", "karpenter.sh/v1"},
                      {"kind", "NodePool"},
                      {"name", kPool},
                      {"uid", "uid-nodepool-default"},
                      {"blockOwnerDeletion", true}};
  meta["ownerReferences"] = json::array({owner});
  json spec;
  spec["nodeClassRef"] = NodeClassRef();
  spec["requirements"] =
      json::array({Requirement("karpenter.sh/nodepool", {kPool}),
                   Requirement("node.kubernetes.io/instance-type", {node.type->name()}),
                   Requirement("karpenter.sh/capacity-type", {node.capacity_type}),
                   Requirement("topology.kubernetes.io/zone", {node.zone})});
  spec["expireAfter"] = "720h";
  json status;
  status["nodeName"] = node.name;
  status["providerID"] = ProviderId(node);
  status["capacity"] = Resources(node.type->capacity());
  status["allocatable"] = Resources(node.type->Allocatable());
  json conditions = json::array();
  for (const char* type : {"Launched", "Registered", "Initialized", "Ready"}) {
    conditions.push_back(Condition(type, "True", created + absl::Seconds(40), type));
  }
  status["conditions"] = conditions;
  return {{"apiVersion", "karpenter.sh/v1"},
          {"kind", "NodeClaim"},
          {"metadata", meta},
          {"spec", spec},
          {"status", status}};
}

const cloudprovider::Catalog& TheCatalog() {
  static const cloudprovider::Catalog* catalog = [] {
    absl::StatusOr<cloudprovider::Catalog> c = simulate::LoadCatalog(simulate::CatalogSpec{});
    if (!c.ok()) {
      std::fprintf(stderr, "kwok catalog: %s\n", c.status().ToString().c_str());
      std::abort();
    }
    return new cloudprovider::Catalog(*std::move(c));
  }();
  return *catalog;
}

int64_t MilliOf(const ResourceList& list, const char* name) {
  auto it = list.find(name);
  return it == list.end() ? 0 : it->second.MilliValue();
}

int64_t ValueOf(const ResourceList& list, const char* name) {
  auto it = list.find(name);
  return it == list.end() ? 0 : it->second.Value();
}

struct Generated {
  std::string text;  // a JSON List of every object
  size_t nodes = 0;
  size_t bound = 0;
  size_t pending = 0;
};

absl::StatusOr<Generated> Generate(int n) {
  Rng r(0x5CE7A210ull + static_cast<uint64_t>(n) * 7919);
  const std::vector<Group> groups = MakeGroups(r);
  Generated out;
  out.text = R"({"apiVersion":"v1","kind":"List","items":[)";
  bool first = true;
  auto add = [&](const json& item) {
    if (!first) out.text += ",\n";
    first = false;
    out.text += item.dump();
  };
  add(NodePoolJson());
  std::vector<int> order(kGroups);
  for (int i = 0; i < n; ++i) {
    const char* type_name = kNodeTypes[r.Int(0, static_cast<int>(std::size(kNodeTypes)) - 1)];
    NodeModel node;
    node.name = absl::StrCat("node-", i);
    node.type = TheCatalog().Find(type_name);
    if (node.type == nullptr) {
      return absl::NotFoundError(absl::StrCat(type_name, " is not in the kwok catalog"));
    }
    node.zone = kZones[i % std::size(kZones)];
    node.capacity_type = r.Unit() < 0.3 ? "spot" : "on-demand";
    add(NodeClaimJson(node, i));
    add(NodeJson(node));
    ++out.nodes;
    // One pod of each group that still fits, in a random order: full nodes, as they are when the
    // kube-scheduler gives up on the pending pods, and no two pods of a group on one node.
    const ResourceList& allocatable = node.type->Allocatable();
    int64_t cpu = MilliOf(allocatable, "cpu");
    int64_t memory_mib = ValueOf(allocatable, "memory") >> 20;
    int64_t pods = ValueOf(allocatable, "pods");
    std::iota(order.begin(), order.end(), 0);
    for (size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[r.Next() % k]);
    for (const int g : order) {
      const Shape& shape = groups[g].shape;
      if (pods < 1 || shape.milli > cpu || shape.mib > memory_mib) continue;
      cpu -= shape.milli;
      memory_mib -= shape.mib;
      --pods;
      add(PodJson(groups[g], absl::StrCat(groups[g].replica_set, "-n", i), node.name, n));
      ++out.bound;
    }
  }
  for (int k = 0; k < 2 * n; ++k) {
    const Group& g = groups[k % kGroups];
    add(PodJson(g, absl::StrCat(g.replica_set, "-p", k), "", n));
    ++out.pending;
  }
  out.text += "]}\n";
  return out;
}

// ---- Benchmarks ---------------------------------------------------------------------------------

struct Workload {
  std::unique_ptr<scenario::ManifestScenario> manifests;
  size_t nodes = 0;
  size_t bound = 0;
  size_t pending = 0;
};

absl::StatusOr<std::unique_ptr<Workload>> Build(int n) {
  auto w = std::make_unique<Workload>();
  ASSIGN_OR_RETURN(Generated generated, Generate(n));
  w->nodes = generated.nodes;
  w->bound = generated.bound;
  w->pending = generated.pending;
  ASSIGN_OR_RETURN(std::vector<apis::core::Manifest> manifests,
                   apis::core::ParseManifests(generated.text, "generated.json"));
  generated.text.clear();
  generated.text.shrink_to_fit();
  ASSIGN_OR_RETURN(w->manifests, scenario::ManifestScenario::FromManifests(manifests, kNow));
  RETURN_IF_ERROR(simulate::SetInstanceTypes(*w->manifests, TheCatalog()));
  return w;
}

// Each cluster is built once, on first use, and kept: input/N and pass/N share it.
absl::StatusOr<const Workload*> Get(int n) {
  static auto* cache = new std::map<int, std::unique_ptr<Workload>>();
  if (auto it = cache->find(n); it != cache->end()) return it->second.get();
  ASSIGN_OR_RETURN(std::unique_ptr<Workload> w, Build(n));
  return cache->emplace(n, std::move(w)).first->second.get();
}

// The question must hold what was generated; otherwise the generator and the decoders disagree and
// the figures would mean nothing.
absl::Status Check(const Workload& w, const scenario::SolverQuestion& q) {
  if (q.input.pools.size() != 1) {
    std::string why;
    for (const scenario::SkippedNodePool& s : q.skipped) {
      absl::StrAppend(&why, " ", s.name, ": ", s.reason, ";");
    }
    return absl::InternalError(absl::StrCat("NodePool ", kPool, " is not in the question:", why));
  }
  if (q.input.nodes.size() != w.nodes || q.input.bound_pods.size() != w.bound ||
      q.input.pods.size() != w.pending) {
    return absl::InternalError(absl::StrCat("the question has ", q.input.nodes.size(), " nodes, ",
                                            q.input.bound_pods.size(), " bound pods and ",
                                            q.input.pods.size(), " pods to place; generated ",
                                            w.nodes, ", ", w.bound, " and ", w.pending));
  }
  return absl::OkStatus();
}

void Fail(benchmark::State& state, const absl::Status& status) {
  state.SkipWithError(std::string(status.message()).c_str());
}

void Report(benchmark::State& state, const Workload& w, const Allocations& total) {
  state.counters["allocs"] =
      benchmark::Counter(static_cast<double>(total.count), benchmark::Counter::kAvgIterations);
  state.counters["alloc_MB"] = benchmark::Counter(static_cast<double>(total.bytes) / 1e6,
                                                  benchmark::Counter::kAvgIterations);
  state.counters["nodes"] = static_cast<double>(w.nodes);
  state.counters["pods"] = static_cast<double>(w.pending);
  state.counters["bound_pods"] = static_cast<double>(w.bound);
}

// With `cached`, the builds share a scenario::PodCache, as the provisioner's passes do; it is
// filled once before the timed loop, and cache_MB reports what that first build allocated beyond a
// build with the cache full (the conversions the cache keeps).
struct Setup {
  const Workload* workload = nullptr;
  scenario::InputOptions options;
  std::unique_ptr<scenario::PodCache> cache;
  double cache_mb = 0;
};

absl::StatusOr<Setup> Prepare(int n, bool cached) {
  Setup setup;
  ASSIGN_OR_RETURN(setup.workload, Get(n));
  const scenario::Scenario& s = setup.workload->manifests->scenario();
  setup.options = ProvisioningOptions();
  if (cached) {
    setup.cache = std::make_unique<scenario::PodCache>();
    setup.options.pods = setup.cache.get();
  }
  const Allocations before_cold = Allocated();
  RETURN_IF_ERROR(Check(*setup.workload, Question(s, setup.options)));
  const Allocations cold = Allocated() - before_cold;
  if (cached) {
    const Allocations before_warm = Allocated();
    RETURN_IF_ERROR(Check(*setup.workload, Question(s, setup.options)));
    const Allocations warm = Allocated() - before_warm;
    setup.cache_mb = static_cast<double>(cold.bytes - warm.bytes) / 1e6;
  }
  return setup;
}

void InputBench(benchmark::State& state, int n, bool cached) {
  absl::StatusOr<Setup> setup = Prepare(n, cached);
  if (!setup.ok()) return Fail(state, setup.status());
  const scenario::Scenario& s = setup->workload->manifests->scenario();
  Allocations total;
  for (auto _ : state) {
    const Allocations before = Allocated();
    scenario::SolverQuestion q = Question(s, setup->options);
    total += Allocated() - before;
    benchmark::DoNotOptimize(q);
  }
  Report(state, *setup->workload, total);
  if (cached) state.counters["cache_MB"] = setup->cache_mb;
}

void PassBench(benchmark::State& state, int n, bool cached) {
  absl::StatusOr<Setup> setup = Prepare(n, cached);
  if (!setup.ok()) return Fail(state, setup.status());
  const scenario::Scenario& s = setup->workload->manifests->scenario();
  Allocations total;
  size_t new_nodes = 0, on_existing = 0, unschedulable = 0;
  for (auto _ : state) {
    const Allocations before = Allocated();
    scenario::SolverQuestion q = Question(s, setup->options);
    absl::StatusOr<solver::Plan> plan = solver::Solve(q.input);
    total += Allocated() - before;
    if (!plan.ok()) return Fail(state, plan.status());
    new_nodes = plan->node_claims.size();
    on_existing = 0;
    for (const solver::ExistingPlacement& placement : plan->existing) {
      on_existing += placement.pods.size();
    }
    unschedulable = plan->unschedulable.size();
  }
  Report(state, *setup->workload, total);
  if (cached) state.counters["cache_MB"] = setup->cache_mb;
  state.counters["new_nodes"] = static_cast<double>(new_nodes);
  state.counters["on_existing"] = static_cast<double>(on_existing);
  state.counters["unschedulable"] = static_cast<double>(unschedulable);
}

void Register() {
  for (int n : {100, 1000}) {
    for (bool cached : {false, true}) {
      const char* suffix = cached ? "_cached" : "";
      benchmark::RegisterBenchmark(absl::StrCat("input", suffix, "/", n).c_str(),
                                   [n, cached](benchmark::State& s) { InputBench(s, n, cached); })
          ->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(absl::StrCat("pass", suffix, "/", n).c_str(),
                                   [n, cached](benchmark::State& s) { PassBench(s, n, cached); })
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace
}  // namespace dovetail::bench

int main(int argc, char** argv) {
  dovetail::bench::Register();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
