// dovetail_consolidation_bench: the consolidation scan over generated ClusterViews
// (docs/benchmarks.md, "Consolidation scan"): Simulator::Create, a full single-node scan
// (GetCandidates + Simulator::Simulate per candidate), ComputeCommands end to end, and the savings
// consolidation finds against a from-scratch repacking of every pod.
//
// Clusters (deterministic, seeded by the node count; every variant has the same nodes and pods):
// N nodes of the kwok synthetic catalog (c7k/m7k/r7k, xlarge to 8xlarge, 70 % on-demand, 30 %
// spot, three zones) in one NodePool "default" (requirements: instance-family In c7k m7k r7k,
// capacity-type In on-demand spot, arch amd64, os linux; budgets: [] so nothing is
// budget-limited). Each node was packed with ~29 pods (24-32 distinct random Deployments of eight
// shapes, 100m-1 vCPU, 128Mi-4Gi, plus the fixed Deployments below) onto the shape that filled it
// to 75-95 %, and runs one DaemonSet pod. Then a 30 % scale-in removed random-Deployment pods
// unevenly, leaving ~20 per node: a fifth of the nodes lose 80-95 % of them, 35 % lose none, the
// rest 30-45 % (at least one pod stays). Every node is initialized, one hour old,
// Consolidatable=True. Fixed Deployments: "singleton" (one replica on every third node), "db-0" and
// "db-1" (one replica on every sixteenth node each). Variants:
//   plain   no constraints
//   spread  topologySpreadConstraints maxSkew 1 on kubernetes.io/hostname, DoNotSchedule, on a
//           third of the random Deployments
//   anti    required pod anti-affinity on kubernetes.io/hostname for "singleton"
//   pdb     PDBs with disruptionsAllowed 0 on db-0 and db-1 (their nodes, 1/8, are blocked),
//           PDBs with disruptionsAllowed 5 on a quarter of the random Deployments
//   dnd     one pod with karpenter.sh/do-not-disrupt=true on every twentieth node (5 %)
//
// Benchmarks (names "<what>/<variant>/<nodes>"), each one run (iterations 1, except create):
//   create/V/N    Simulator::Create (ms per view)
//   scan/V/N      GetCandidates(kSingleNodeConsolidation), then Simulator::Simulate({c}) for
//                 every candidate: total and per-candidate time; counters: candidates, feasible
//                 (all pods placed on at most one new NodeClaim), deletable (no new NodeClaim)
//   single/V/N, multi/V/N, multiglobal/V/N
//                 ComputeCommands (kSingleNodeConsolidation, kMultiNodeConsolidation, the latter
//                 with and without Options::global_multi_node_search) end to end, Simulator
//                 included; counters: commands, nodes disrupted, savings $/h, savings as a
//                 fraction of the repacking's
//   repack/V/N    solver::Solve of every pod from scratch (no existing nodes, improve=true):
//                 counters current_cost, repack_cost, repack_savings ($/h)
//   passes/V/N    repeated passes: each pass builds the view and a Simulator, runs multi-node
//                 then (if it found nothing) single-node consolidation and applies the command
//                 (candidates' nodes removed, their pods placed as the simulation placed them, the
//                 replacement added as a new node); until nothing is found or 50 passes. Counters:
//                 passes, commands, final_cost, vs_repack (final / repack cost), fraction of the
//                 repacking's savings achieved.
//   converge/V/N  passes without the 50-pass cap (until nothing is found), N <= 500 and plain/1000
// Times are wall-clock (manual time); the machine is shared.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "bench/generated_cluster.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "dovetail/common/clock.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/controllers/disruption/disruption.h"
#include "dovetail/controllers/launch/node_claim_builder.h"
#include "dovetail/kube/objects.h"
#include "dovetail/kube/string_pool.h"
#include "dovetail/scenario/pool_template.h"
#include "dovetail/solver/solver.h"
#include "dovetail/state/pod_conversion.h"
#include "nlohmann/json.hpp"
#include "simdjson.h"

namespace dovetail::bench {
namespace {

namespace v1 = apis::v1;
namespace core = apis::core;
namespace dis = controllers::disruption;
using cloudprovider::InstanceTypePtr;

enum class Variant { kPlain, kSpread, kAnti, kPdb, kDnd };
constexpr Variant kVariants[] = {Variant::kPlain, Variant::kSpread, Variant::kAnti, Variant::kPdb,
                                 Variant::kDnd};

const char* Name(Variant v) {
  switch (v) {
    case Variant::kPlain:
      return "plain";
    case Variant::kSpread:
      return "spread";
    case Variant::kAnti:
      return "anti";
    case Variant::kPdb:
      return "pdb";
    case Variant::kDnd:
      return "dnd";
  }
  return "";
}

struct Shape {
  const char* cpu;
  const char* mem;
  int64_t milli;
  int64_t mib;
};
constexpr Shape kShapes[] = {{"100m", "128Mi", 100, 128}, {"250m", "512Mi", 250, 512},
                             {"500m", "1Gi", 500, 1024},  {"250m", "2Gi", 250, 2048},
                             {"1", "1Gi", 1000, 1024},    {"500m", "4Gi", 500, 4096},
                             {"1", "2Gi", 1000, 2048},    {"200m", "256Mi", 200, 256}};
constexpr int kAgentMilli = 100;
constexpr int64_t kAgentMib = 128;

struct Deployment {
  std::string name;
  int shape = 0;
  bool spread = false;
  bool anti = false;
  int pdb_allowed = -1;  // < 0: no PDB
};

struct PodModel {
  int deployment = 0;
  std::string name;
  bool do_not_disrupt = false;
};

struct NodeModel {
  std::string name;
  std::string type;
  std::string zone;
  std::string capacity_type;
  std::vector<PodModel> pods;
};

struct Model {
  std::vector<Deployment> deployments;
  std::vector<NodeModel> nodes;
  int serial = 0;  // names of replacement nodes
  int pods_before = 0, pods_after = 0;
};

const cloudprovider::Catalog& TheCatalog() {
  static const cloudprovider::Catalog* catalog = [] {
    auto c = cloudprovider::kwok::SyntheticCatalog();
    if (!c.ok()) std::abort();
    return new cloudprovider::Catalog(std::move(*c));
  }();
  return *catalog;
}

Model Generate(int n, Variant variant) {
  Rng r(0xC0DE5EEDull + static_cast<uint64_t>(n) * 7919);
  Model m;
  const int nrandom = std::max(40, n / 5);
  for (int d = 0; d < nrandom; ++d) {
    Deployment dep{absl::StrCat("app-", d), d % 8};
    dep.spread = variant == Variant::kSpread && d % 3 == 0;
    if (variant == Variant::kPdb && d % 4 == 0) dep.pdb_allowed = 5;
    m.deployments.push_back(dep);
  }
  const int singleton = static_cast<int>(m.deployments.size());
  m.deployments.push_back({"singleton", 7, false, variant == Variant::kAnti});
  const int db0 = static_cast<int>(m.deployments.size());
  m.deployments.push_back({"db-0", 3, false, false, variant == Variant::kPdb ? 0 : -1});
  m.deployments.push_back({"db-1", 3, false, false, variant == Variant::kPdb ? 0 : -1});

  std::vector<const cloudprovider::InstanceType*> shapes;
  for (const char* family : {"c7k", "m7k", "r7k"}) {
    for (const char* size : {"xlarge", "2xlarge", "4xlarge", "8xlarge"}) {
      shapes.push_back(TheCatalog().Find(absl::StrCat(family, ".", size)));
    }
  }
  const std::string zones[] = {"test-zone-a", "test-zone-b", "test-zone-c"};
  std::vector<int> picked;
  for (int i = 0; i < n; ++i) {
    NodeModel node;
    node.name = absl::StrCat("node-", i);
    node.zone = zones[i % 3];
    node.capacity_type = r.Unit() < 0.3 ? "spot" : "on-demand";
    picked.clear();
    absl::flat_hash_set<int> seen;
    const int count = r.Int(24, 32);
    while (static_cast<int>(picked.size()) < count) {
      const int d = r.Int(0, nrandom - 1);
      if (seen.insert(d).second) picked.push_back(d);
    }
    if (i % 3 == 0) picked.push_back(singleton);
    if (i % 16 == 1) picked.push_back(db0);
    if (i % 16 == 9) picked.push_back(db0 + 1);
    int64_t milli = kAgentMilli, mib = kAgentMib;
    for (int d : picked) {
      milli += kShapes[m.deployments[d].shape].milli;
      mib += kShapes[m.deployments[d].shape].mib;
      // Deployments are distinct per node, so "<deployment>-n<node>" is unique.
      node.pods.push_back({d, absl::StrCat(m.deployments[d].name, "-n", i)});
    }
    // The shape this load fills closest to a random target between 75 % and 95 %.
    const double target = 0.75 + 0.2 * r.Unit();
    const cloudprovider::InstanceType* best = shapes.back();
    double best_gap = 1e9;
    for (const cloudprovider::InstanceType* t : shapes) {
      const auto& a = t->Allocatable();
      const double fc = static_cast<double>(milli) / static_cast<double>(a.at("cpu").MilliValue());
      const double fm =
          static_cast<double>(mib << 20) / static_cast<double>(a.at("memory").Value());
      const double fill = std::max(fc, fm);
      if (fill > 0.97) continue;
      if (std::abs(fill - target) < best_gap) {
        best_gap = std::abs(fill - target);
        best = t;
      }
    }
    node.type = best->name();
    m.pods_before += static_cast<int>(node.pods.size());
    // The scale-in: random Deployment pods go, unevenly.
    const double u = r.Unit();
    const double lose = u < 0.2 ? 0.8 + 0.15 * r.Unit() : (u < 0.55 ? 0 : 0.3 + 0.15 * r.Unit());
    std::vector<size_t> removable;
    for (size_t k = 0; k < node.pods.size(); ++k) {
      if (node.pods[k].deployment < nrandom) removable.push_back(k);
    }
    for (size_t k = removable.size(); k > 1; --k) {
      std::swap(removable[k - 1], removable[r.Next() % k]);
    }
    size_t remove = static_cast<size_t>(lose * static_cast<double>(removable.size()) + 0.5);
    remove = std::min(remove, removable.size() - 1);
    absl::flat_hash_set<size_t> gone(removable.begin(),
                                     removable.begin() + static_cast<std::ptrdiff_t>(remove));
    std::vector<PodModel> kept;
    for (size_t k = 0; k < node.pods.size(); ++k) {
      if (!gone.contains(k)) kept.push_back(std::move(node.pods[k]));
    }
    node.pods = std::move(kept);
    if (variant == Variant::kDnd && i % 20 == 3) node.pods.front().do_not_disrupt = true;
    m.pods_after += static_cast<int>(node.pods.size());
    m.nodes.push_back(std::move(node));
  }
  return m;
}

// Decodes API-server JSON with the informers' own decoders; owns the interned strings.
class Decoder {
 public:
  absl::StatusOr<state::NodePtr> Node(const nlohmann::json& json) {
    auto out = std::make_shared<kube::NodeInfo>();
    RETURN_IF_ERROR(Decode(
        json, [&](simdjson::ondemand::object o) { return kube::DecodeNode(o, ctx_, *out); }));
    return state::NodePtr(std::move(out));
  }
  absl::StatusOr<state::PodPtr> Pod(const nlohmann::json& json) {
    auto out = std::make_shared<kube::PodInfo>();
    RETURN_IF_ERROR(
        Decode(json, [&](simdjson::ondemand::object o) { return kube::DecodePod(o, ctx_, *out); }));
    return state::PodPtr(std::move(out));
  }

 private:
  template <typename Fn>
  absl::Status Decode(const nlohmann::json& json, Fn&& fn) {
    simdjson::padded_string text(json.dump());
    simdjson::ondemand::document doc;
    if (parser_.iterate(text).get(doc)) return absl::InternalError("simdjson iterate");
    simdjson::ondemand::object obj;
    if (doc.get_object().get(obj)) return absl::InternalError("simdjson object");
    return fn(obj);
  }

  kube::StringPool pool_;
  kube::DecodeContext ctx_{.pool = &pool_};
  simdjson::ondemand::parser parser_;
};

v1::NodePool MakePool() {
  v1::NodePool pool;
  pool.metadata.name = "default";
  auto& spec = pool.spec.template_.spec;
  spec.node_class_ref = v1::NodeClassReference{"karpenter.kwok.sh", "KWOKNodeClass", "default"};
  using core::SelectorOperator;
  spec.requirements.push_back({std::string(cloudprovider::kwok::kLabelInstanceFamily),
                               SelectorOperator::kIn,
                               {"c7k", "m7k", "r7k"},
                               std::nullopt});
  spec.requirements.push_back({std::string(v1::kCapacityTypeLabelKey),
                               SelectorOperator::kIn,
                               {"on-demand", "spot"},
                               std::nullopt});
  spec.requirements.push_back(
      {std::string(v1::kLabelArch), SelectorOperator::kIn, {"amd64"}, std::nullopt});
  spec.requirements.push_back(
      {std::string(v1::kLabelOS), SelectorOperator::kIn, {"linux"}, std::nullopt});
  pool.spec.disruption.emplace().budgets.emplace();  // budgets: []
  v1::ApplyDefaults(pool);
  return pool;
}

core::DaemonSet MakeDaemonSet() {
  core::DaemonSet ds;
  ds.metadata.name = "node-agent";
  ds.metadata.namespace_ = "kube-system";
  ds.metadata.uid = "uid-ds-node-agent";
  core::Container c;
  c.name = "agent";
  c.resources.requests = {{"cpu", *Quantity::Parse("100m")}, {"memory", *Quantity::Parse("128Mi")}};
  ds.spec.template_.spec.containers.push_back(std::move(c));
  return ds;
}

nlohmann::json PodJson(const std::string& ns, const std::string& name, const std::string& node,
                       const char* cpu, const char* mem) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", ns},
            {"uid", "uid-" + name},
            {"creationTimestamp", Rfc3339(kNow - absl::Hours(2))}}},
          {"spec",
           {{"nodeName", node},
            {"containers",
             {{{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}, {"memory", mem}}}}}}}}}},
          {"status",
           {{"phase", "Running"},
            {"startTime", Rfc3339(kNow - absl::Hours(2))},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

// A ClusterView of the model; the decoder owns what the view's objects point into.
struct Cluster {
  Decoder decoder;
  dis::ClusterView view;
  int nodes = 0;
  int pods = 0;
};

absl::StatusOr<std::unique_ptr<Cluster>> Build(const Model& m, Variant variant) {
  auto c = std::make_unique<Cluster>();
  dis::ClusterView& view = c->view;
  view.now = kNow;
  view.snapshot.taken = kNow;
  view.node_pools["default"] = MakePool();
  view.instance_types["default"] = TheCatalog().instance_types();
  view.daemon_sets.push_back(MakeDaemonSet());
  for (const Deployment& d : m.deployments) {
    if (d.pdb_allowed < 0) continue;
    core::PodDisruptionBudget pdb;
    pdb.metadata.name = d.name;
    pdb.metadata.namespace_ = "default";
    pdb.spec.selector = core::LabelSelector{.match_labels = {{"app", d.name}}};
    pdb.status.emplace().disruptions_allowed = d.pdb_allowed;
    view.pdbs.push_back(std::move(pdb));
  }
  (void)variant;
  for (const NodeModel& n : m.nodes) {
    const cloudprovider::InstanceType* type = TheCatalog().Find(n.type);
    if (type == nullptr) return absl::InternalError(absl::StrCat("no type ", n.type));
    const std::string cpu = type->capacity().at("cpu").ToString();
    const std::string mem = type->capacity().at("memory").ToString();
    const std::string acpu = type->Allocatable().at("cpu").ToString();
    const std::string amem = type->Allocatable().at("memory").ToString();
    const std::string provider_id = "kwok://" + n.name;
    const std::string family = n.type.substr(0, n.type.find('.'));
    const std::string size = n.type.substr(n.type.find('.') + 1);
    nlohmann::json labels = {{std::string(v1::kNodePoolLabelKey), "default"},
                             {std::string(v1::kLabelInstanceType), n.type},
                             {std::string(v1::kLabelTopologyZone), n.zone},
                             {std::string(v1::kLabelTopologyRegion), "test-region"},
                             {std::string(v1::kCapacityTypeLabelKey), n.capacity_type},
                             {std::string(v1::kLabelArch), "amd64"},
                             {std::string(v1::kLabelOS), "linux"},
                             {std::string(v1::kLabelHostname), n.name},
                             {std::string(cloudprovider::kwok::kLabelInstanceFamily), family},
                             {std::string(cloudprovider::kwok::kLabelInstanceSize), size},
                             {std::string(v1::kNodeRegisteredLabelKey), "true"},
                             {std::string(v1::kNodeInitializedLabelKey), "true"}};
    nlohmann::json node = {
        {"apiVersion", "v1"},
        {"kind", "Node"},
        {"metadata", {{"name", n.name}, {"uid", "uid-" + n.name}, {"labels", labels}}},
        {"spec", {{"providerID", provider_id}}},
        {"status",
         {{"capacity", {{"cpu", cpu}, {"memory", mem}, {"pods", "110"}}},
          {"allocatable", {{"cpu", acpu}, {"memory", amem}, {"pods", "110"}}},
          {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
    nlohmann::json claim = {
        {"apiVersion", "karpenter.sh/v1"},
        {"kind", "NodeClaim"},
        {"metadata",
         {{"name", n.name + "-claim"},
          {"uid", "uid-" + n.name + "-claim"},
          {"creationTimestamp", Rfc3339(kNow - absl::Hours(1))},
          {"labels", labels}}},
        {"spec",
         {{"requirements", nlohmann::json::array()},
          {"nodeClassRef",
           {{"group", "karpenter.kwok.sh"}, {"kind", "KWOKNodeClass"}, {"name", "default"}}}}},
        {"status",
         {{"providerID", provider_id},
          {"nodeName", n.name},
          {"capacity", {{"cpu", cpu}, {"memory", mem}, {"pods", "110"}}},
          {"allocatable", {{"cpu", acpu}, {"memory", amem}, {"pods", "110"}}},
          {"conditions",
           {{{"type", "Consolidatable"},
             {"status", "True"},
             {"reason", "Consolidatable"},
             {"lastTransitionTime", Rfc3339(kNow - absl::Minutes(5))}}}}}}};
    state::StateNode sn;
    ASSIGN_OR_RETURN(sn.node, c->decoder.Node(node));
    auto nc = std::make_shared<v1::NodeClaim>();
    if (absl::Status s = core::DecodeJson(claim, *nc); !s.ok()) return s;
    sn.node_claim = std::move(nc);
    view.snapshot.nodes.push_back(std::move(sn));

    std::vector<state::PodPtr>& pods = view.snapshot.pods_by_node[n.name];
    nlohmann::json agent = PodJson("kube-system", "node-agent-" + n.name, n.name, "100m", "128Mi");
    agent["metadata"]["labels"] = {{"app", "node-agent"}};
    agent["metadata"]["ownerReferences"] = {{{"apiVersion", "apps/v1"},
                                             {"kind", "DaemonSet"},
                                             {"name", "node-agent"},
                                             {"uid", "uid-ds-node-agent"},
                                             {"controller", true}}};
    ASSIGN_OR_RETURN(state::PodPtr agent_pod, c->decoder.Pod(agent));
    pods.push_back(std::move(agent_pod));
    for (const PodModel& p : n.pods) {
      const Deployment& d = m.deployments[p.deployment];
      const Shape& s = kShapes[d.shape];
      nlohmann::json pod = PodJson("default", p.name, n.name, s.cpu, s.mem);
      pod["metadata"]["labels"] = {{"app", d.name}};
      pod["metadata"]["ownerReferences"] = {{{"apiVersion", "apps/v1"},
                                             {"kind", "ReplicaSet"},
                                             {"name", d.name + "-rs"},
                                             {"uid", "uid-rs-" + d.name},
                                             {"controller", true}}};
      if (p.do_not_disrupt) {
        pod["metadata"]["annotations"] = {{std::string(v1::kDoNotDisruptAnnotationKey), "true"}};
      }
      const nlohmann::json selector = {{"matchLabels", {{"app", d.name}}}};
      if (d.spread) {
        pod["spec"]["topologySpreadConstraints"] = {
            {{"maxSkew", 1},
             {"topologyKey", std::string(v1::kLabelHostname)},
             {"whenUnsatisfiable", "DoNotSchedule"},
             {"labelSelector", selector}}};
      }
      if (d.anti) {
        pod["spec"]["affinity"] = {{"podAntiAffinity",
                                    {{"requiredDuringSchedulingIgnoredDuringExecution",
                                      {{{"labelSelector", selector},
                                        {"topologyKey", std::string(v1::kLabelHostname)}}}}}}};
      }
      ASSIGN_OR_RETURN(state::PodPtr info, c->decoder.Pod(pod));
      pods.push_back(std::move(info));
      ++c->pods;
    }
    std::sort(pods.begin(), pods.end(), [](const state::PodPtr& a, const state::PodPtr& b) {
      return std::make_tuple(std::string_view(*a->meta.namespace_),
                             std::string_view(a->meta.name)) <
             std::make_tuple(std::string_view(*b->meta.namespace_), std::string_view(b->meta.name));
    });
  }
  std::sort(view.snapshot.nodes.begin(), view.snapshot.nodes.end(),
            [](const state::StateNode& a, const state::StateNode& b) { return a.Key() < b.Key(); });
  c->nodes = static_cast<int>(m.nodes.size());
  return c;
}

double CurrentCost(const Model& m) {
  double cost = 0;
  for (const NodeModel& n : m.nodes) {
    const cloudprovider::InstanceType* t = TheCatalog().Find(n.type);
    std::optional<double> price;
    for (const cloudprovider::Offering& o : t->offerings()) {
      if (o.zone != n.zone || o.capacity_type != n.capacity_type) continue;
      if (!price.has_value() || o.price < *price) price = o.price;
    }
    cost += price.value_or(0);
  }
  return cost;
}

struct Repack {
  double cost = 0;
  int claims = 0;
  int unschedulable = 0;
  double seconds = 0;
};

// Every Deployment pod of the view solved from scratch (no existing nodes, improve=true).
absl::StatusOr<Repack> RepackAll(const Cluster& c) {
  const dis::ClusterView& view = c.view;
  solver::Input in;
  const v1::NodePool& pool = view.node_pools.at("default");
  ASSIGN_OR_RETURN(solver::PoolTemplate t,
                   scenario::BuildPoolTemplate(pool, {}, view.snapshot.RemainingLimits(pool)));
  for (const InstanceTypePtr& type : view.instance_types.at("default")) {
    if (!cloudprovider::RequirementsIntersect(type->requirements(), t.requirements)) continue;
    if (!type->offerings().Available().HasCompatible(t.requirements)) continue;
    t.instance_types.push_back(type);
  }
  in.pools.push_back(std::move(t));
  std::vector<std::unique_ptr<core::Pod>> owned;
  for (const core::DaemonSet& ds : view.daemon_sets) {
    owned.push_back(scenario::DaemonSetPod(ds));
    in.daemon_sets.push_back(
        {absl::StrCat(ds.metadata.namespace_, "/", ds.metadata.name), owned.back().get()});
  }
  for (const state::StateNode& sn : view.snapshot.nodes) {
    for (const state::PodPtr& info : view.snapshot.pods_by_node.at(sn.Name())) {
      if (*info->meta.namespace_ == "kube-system") continue;  // the DaemonSet's
      core::Pod pod = state::ToPod(*info);
      pod.spec.node_name.clear();
      owned.push_back(std::make_unique<core::Pod>(std::move(pod)));
      in.pods.push_back(owned.back().get());
    }
  }
  in.options.improve = true;
  in.options.lower_bound = false;
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(solver::Plan plan, solver::Solve(in));
  Repack out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.cost = plan.total_price;
  out.claims = static_cast<int>(plan.node_claims.size());
  out.unschedulable = static_cast<int>(plan.unschedulable.size());
  return out;
}

// One generated cluster at a time (the 5,000-node views are large).
struct Entry {
  Variant variant = Variant::kPlain;
  int n = 0;
  Model model;
  std::unique_ptr<Cluster> cluster;
  double current_cost = 0;
  std::optional<Repack> repack;
};

absl::StatusOr<Entry*> Get(Variant variant, int n) {
  static std::unique_ptr<Entry> entry;
  if (entry != nullptr && entry->variant == variant && entry->n == n) return entry.get();
  entry.reset();
  auto e = std::make_unique<Entry>();
  e->variant = variant;
  e->n = n;
  e->model = Generate(n, variant);
  ASSIGN_OR_RETURN(e->cluster, Build(e->model, variant));
  e->current_cost = CurrentCost(e->model);
  entry = std::move(e);
  return entry.get();
}

absl::StatusOr<const Repack*> GetRepack(Entry& e) {
  if (!e.repack.has_value()) {
    ASSIGN_OR_RETURN(Repack r, RepackAll(*e.cluster));
    e.repack = r;
  }
  return &*e.repack;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

void Fail(benchmark::State& state, const absl::Status& status) {
  state.SkipWithError(std::string(status.message()).c_str());
}

void Describe(benchmark::State& state, const Entry& e) {
  state.counters["nodes"] = e.cluster->nodes;
  state.counters["pods"] = e.cluster->pods;
  state.counters["scaled_in"] =
      1.0 - static_cast<double>(e.model.pods_after) / static_cast<double>(e.model.pods_before);
}

void CreateBench(benchmark::State& state, Variant variant, int n) {
  absl::StatusOr<Entry*> e = Get(variant, n);
  if (!e.ok()) return Fail(state, e.status());
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    auto sim = dis::Simulator::Create((*e)->cluster->view, {});
    state.SetIterationTime(Seconds(start));
    if (!sim.ok()) return Fail(state, sim.status());
  }
  Describe(state, **e);
}

void ScanBench(benchmark::State& state, Variant variant, int n) {
  absl::StatusOr<Entry*> e = Get(variant, n);
  if (!e.ok()) return Fail(state, e.status());
  const dis::ClusterView& view = (*e)->cluster->view;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<dis::Candidate> candidates =
        dis::GetCandidates(view, dis::Method::kSingleNodeConsolidation, {}, nullptr);
    const double get_candidates = Seconds(start);
    const auto create_start = std::chrono::steady_clock::now();
    auto sim = dis::Simulator::Create(view, {});
    const double create = Seconds(create_start);
    if (!sim.ok()) return Fail(state, sim.status());
    int feasible = 0, deletable = 0;
    const auto scan_start = std::chrono::steady_clock::now();
    for (const dis::Candidate& c : candidates) {
      auto result = (*sim)->Simulate(std::span<const dis::Candidate>(&c, 1));
      if (!result.ok()) return Fail(state, result.status());
      if (result->unschedulable.empty() && result->plan.node_claims.size() <= 1) {
        ++feasible;
        if (result->plan.node_claims.empty()) ++deletable;
      }
    }
    const double scan = Seconds(scan_start);
    const double total = Seconds(start);
    state.SetIterationTime(total);
    state.counters["candidates"] = static_cast<double>(candidates.size());
    state.counters["feasible"] = feasible;
    state.counters["deletable"] = deletable;
    state.counters["get_candidates_ms"] = get_candidates * 1e3;
    state.counters["create_ms"] = create * 1e3;
    state.counters["simulate_s"] = scan;
    state.counters["total_s"] = total;
    state.counters["ms_per_candidate"] =
        candidates.empty() ? 0 : scan * 1e3 / static_cast<double>(candidates.size());
  }
  Describe(state, **e);
}

void CommandsBench(benchmark::State& state, Variant variant, int n, dis::Method method,
                   bool global) {
  absl::StatusOr<Entry*> e = Get(variant, n);
  if (!e.ok()) return Fail(state, e.status());
  const dis::ClusterView& view = (*e)->cluster->view;
  dis::Options options;
  options.global_multi_node_search = global;
  RealClock clock;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    auto sim = dis::Simulator::Create(view, options);
    if (!sim.ok()) return Fail(state, sim.status());
    dis::BudgetMapping budgets = dis::BuildBudgetMapping(view, dis::ReasonOf(method));
    auto result = dis::ComputeCommands(method, view, **sim, budgets, options, clock);
    state.SetIterationTime(Seconds(start));
    if (!result.ok()) return Fail(state, result.status());
    double savings = 0, disrupted = 0, replacements = 0;
    for (const dis::Command& c : result->commands) {
      savings += c.savings_per_hour;
      disrupted += static_cast<double>(c.candidates.size());
      replacements += static_cast<double>(c.replacements.size());
    }
    state.counters["commands"] = static_cast<double>(result->commands.size());
    state.counters["disrupted"] = disrupted;
    state.counters["replacements"] = replacements;
    state.counters["savings"] = savings;
    state.PauseTiming();
    absl::StatusOr<const Repack*> repack = GetRepack(**e);
    state.ResumeTiming();
    if (!repack.ok()) return Fail(state, repack.status());
    const double reference = (*e)->current_cost - (*repack)->cost;
    state.counters["of_repack_savings"] = reference > 0 ? savings / reference : 0;
  }
  Describe(state, **e);
}

void RepackBench(benchmark::State& state, Variant variant, int n) {
  absl::StatusOr<Entry*> e = Get(variant, n);
  if (!e.ok()) return Fail(state, e.status());
  for (auto _ : state) {
    absl::StatusOr<const Repack*> repack = GetRepack(**e);
    if (!repack.ok()) return Fail(state, repack.status());
    state.SetIterationTime((*repack)->seconds);
    state.counters["current_cost"] = (*e)->current_cost;
    state.counters["repack_cost"] = (*repack)->cost;
    state.counters["repack_savings"] = (*e)->current_cost - (*repack)->cost;
    state.counters["repack_nodes"] = (*repack)->claims;
    state.counters["repack_unschedulable"] = (*repack)->unschedulable;
  }
  Describe(state, **e);
}

// Applies a consolidation command to the model: the candidates' nodes go, their pods land where
// the simulation placed them (existing nodes or the replacement, added as a new node).
absl::Status Apply(Model& m, const dis::Command& command, const dis::Simulator& sim) {
  ASSIGN_OR_RETURN(dis::Simulator::Result result, sim.Simulate(command.candidates));
  if (!result.unschedulable.empty()) return absl::InternalError("re-simulation differs");
  absl::flat_hash_set<std::string> gone;
  for (const dis::Candidate& c : command.candidates) gone.insert(c.name);
  absl::flat_hash_map<std::string, PodModel> moving;  // by pod name
  for (const NodeModel& n : m.nodes) {
    if (!gone.contains(n.name)) continue;
    for (const PodModel& p : n.pods) moving[p.name] = p;
  }
  absl::flat_hash_map<std::string, NodeModel*> by_name;
  for (NodeModel& n : m.nodes) by_name[n.name] = &n;
  size_t placed = 0;
  auto take = [&](const core::Pod* pod, NodeModel& to) {
    auto it = moving.find(pod->metadata.name);
    if (it == moving.end() || pod->metadata.namespace_ != "default") return;
    to.pods.push_back(it->second);
    ++placed;
  };
  for (const solver::ExistingPlacement& placement : result.plan.existing) {
    auto it = by_name.find(placement.node);
    if (it == by_name.end() || gone.contains(placement.node)) {
      return absl::InternalError(absl::StrCat("placement on ", placement.node));
    }
    for (const core::Pod* pod : placement.pods) take(pod, *it->second);
  }
  NodeModel added;
  if (!command.replacements.empty()) {
    if (result.plan.node_claims.size() != 1) return absl::InternalError("replacement differs");
    const solver::NewNodeClaim& r = command.replacements.front();
    added.name = absl::StrCat("repl-", m.serial++);
    added.type = r.instance_type;
    added.zone = r.zone;
    added.capacity_type = r.capacity_type;
    for (const core::Pod* pod : result.plan.node_claims.front().pods) take(pod, added);
  }
  if (placed != moving.size()) {
    return absl::InternalError(absl::StrCat("placed ", placed, " of ", moving.size()));
  }
  std::erase_if(m.nodes, [&](const NodeModel& n) { return gone.contains(n.name); });
  if (!added.name.empty()) m.nodes.push_back(std::move(added));
  return absl::OkStatus();
}

void PassesBench(benchmark::State& state, Variant variant, int n, int max_passes) {
  absl::StatusOr<Entry*> e = Get(variant, n);
  if (!e.ok()) return Fail(state, e.status());
  absl::StatusOr<const Repack*> repack = GetRepack(**e);
  if (!repack.ok()) return Fail(state, repack.status());
  const double start_cost = (*e)->current_cost;
  const double repack_cost = (*repack)->cost;
  RealClock clock;
  const dis::Options options;
  for (auto _ : state) {
    Model model = (*e)->model;
    int passes = 0, commands = 0, multi = 0, disrupted = 0;
    double compute = 0;
    const auto start = std::chrono::steady_clock::now();
    while (passes < max_passes) {
      ++passes;
      absl::StatusOr<std::unique_ptr<Cluster>> cluster = Build(model, variant);
      if (!cluster.ok()) return Fail(state, cluster.status());
      const dis::ClusterView& view = (*cluster)->view;
      const auto pass_start = std::chrono::steady_clock::now();
      auto sim = dis::Simulator::Create(view, options);
      if (!sim.ok()) return Fail(state, sim.status());
      std::optional<dis::Command> found;
      for (dis::Method method :
           {dis::Method::kMultiNodeConsolidation, dis::Method::kSingleNodeConsolidation}) {
        dis::BudgetMapping budgets = dis::BuildBudgetMapping(view, dis::ReasonOf(method));
        auto result = dis::ComputeCommands(method, view, **sim, budgets, options, clock);
        if (!result.ok()) return Fail(state, result.status());
        if (!result->commands.empty()) {
          found = std::move(result->commands.front());
          if (method == dis::Method::kMultiNodeConsolidation) ++multi;
          break;
        }
      }
      compute += Seconds(pass_start);
      if (!found.has_value()) break;
      ++commands;
      disrupted += static_cast<int>(found->candidates.size());
      if (absl::Status s = Apply(model, *found, **sim); !s.ok()) return Fail(state, s);
    }
    state.SetIterationTime(Seconds(start));
    const double final_cost = CurrentCost(model);
    state.counters["passes"] = passes;
    state.counters["commands"] = commands;
    state.counters["multi_commands"] = multi;
    state.counters["disrupted"] = disrupted;
    state.counters["final_nodes"] = static_cast<double>(model.nodes.size());
    state.counters["compute_s"] = compute;
    state.counters["start_cost"] = start_cost;
    state.counters["final_cost"] = final_cost;
    state.counters["repack_cost"] = repack_cost;
    state.counters["vs_repack"] = final_cost / repack_cost;
    state.counters["of_repack_savings"] =
        start_cost > repack_cost ? (start_cost - final_cost) / (start_cost - repack_cost) : 0;
  }
  Describe(state, **e);
}

void Register() {
  for (int n : {100, 500, 1000, 5000}) {
    for (Variant v : kVariants) {
      const std::string suffix = absl::StrCat("/", Name(v), "/", n);
      benchmark::RegisterBenchmark(absl::StrCat("create", suffix).c_str(),
                                   [v, n](benchmark::State& s) { CreateBench(s, v, n); })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->Iterations(n >= 5000 ? 1 : 3);
      benchmark::RegisterBenchmark(absl::StrCat("scan", suffix).c_str(),
                                   [v, n](benchmark::State& s) { ScanBench(s, v, n); })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->Iterations(1);
      if (n > 1000) continue;
      benchmark::RegisterBenchmark(absl::StrCat("repack", suffix).c_str(),
                                   [v, n](benchmark::State& s) { RepackBench(s, v, n); })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->Iterations(1);
      for (auto [what, method, global] :
           {std::tuple{"single", dis::Method::kSingleNodeConsolidation, false},
            std::tuple{"multi", dis::Method::kMultiNodeConsolidation, false},
            std::tuple{"multiglobal", dis::Method::kMultiNodeConsolidation, true}}) {
        benchmark::RegisterBenchmark(
            absl::StrCat(what, suffix).c_str(),
            [v, n, method, global](benchmark::State& s) { CommandsBench(s, v, n, method, global); })
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond)
            ->Iterations(1);
      }
      benchmark::RegisterBenchmark(absl::StrCat("passes", suffix).c_str(),
                                   [v, n](benchmark::State& s) { PassesBench(s, v, n, 50); })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->Iterations(1);
      if (v == Variant::kPlain || n <= 500) {
        benchmark::RegisterBenchmark(absl::StrCat("converge", suffix).c_str(),
                                     [v, n](benchmark::State& s) { PassesBench(s, v, n, 5000); })
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond)
            ->Iterations(1);
      }
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
