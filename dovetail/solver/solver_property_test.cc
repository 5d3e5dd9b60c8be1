// Property test: seeded random workloads (catalogs, NodePools with weights, requirements, taints,
// limits and minValues, existing nodes with bound pods, DaemonSets, and pods with random mixes of
// node selectors, node affinity, tolerations, zone/hostname spread, (anti-)affinity including
// self-affinity, host ports and extended resources) are solved and every plan is checked by the
// independent PlanValidator. Also checked: the lower bound never exceeds the plan's price, solving
// twice gives the identical plan, and a pod without constraints that fits an unrestricted pool is
// never left unschedulable.
//
// A failing seed is shrunk (workloads, replicas, constraints, pools, nodes, DaemonSets removed
// while the failure persists) and printed as a minimal scenario. Environment knobs for exploration:
// DOVETAIL_PROPERTY_SEEDS (default 500), DOVETAIL_PROPERTY_FIRST_SEED (default 1),
// DOVETAIL_PROPERTY_SHRINK_ALL=1 (shrink and print every failing seed, not only the first of each
// kind) and DOVETAIL_PROPERTY_NO_IMPROVE=1 (solve with Options::improve off).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dovetail/apis/core/pod_requests.h"
#include "dovetail/scheduling/label_selector.h"
#include "dovetail/solver/plan_validator.h"
#include "dovetail/solver/solver.h"
#include "dovetail/solver/solver_test_builders.h"
#include "dovetail/solver/solver_test_rng.h"
#include "gtest/gtest.h"

namespace dovetail::solver {
namespace {

using apis::core::NodeInclusionPolicy;
using apis::core::NodeSelectorRequirement;
using apis::core::NodeSelectorTerm;
using apis::core::SelectorOperator;
using apis::core::TaintEffect;
namespace v1 = apis::v1;

const std::vector<std::string> kZones = {"zone-a", "zone-b", "zone-c"};
constexpr std::string_view kArch = v1::kLabelArch;
constexpr std::string_view kCt = v1::kCapacityTypeLabelKey;
constexpr char kGpu[] = "example.com/gpu";

// ---- the scenario: plain data, so that it can be shrunk and printed ----------------------------

struct SpreadSpec {
  std::string key;
  int skew = 1;
  std::optional<int> min_domains;
  bool ignore_affinity = false;
  bool honor_taints = false;
  bool anyway = false;
  bool match_revision = false;  // matchLabelKeys: [rev]
  std::string selects;          // workload label value
};

struct TermSpec {
  std::string key;
  std::string selects;
  bool anti = false;
  bool preferred = false;
  bool all_namespaces = false;
};

struct WorkloadSpec {
  std::string name;
  std::string ns = "default";
  int replicas = 1;
  std::string cpu = "500m";
  std::string mem = "512Mi";
  int gpu = 0;
  StringMap node_selector;
  std::vector<std::vector<std::string>> zone_terms;  // required node affinity: OR of zone sets
  std::optional<std::string> preferred_zone;
  std::vector<std::string> tolerations;  // keys ("*": everything)
  std::vector<SpreadSpec> spreads;
  std::vector<TermSpec> terms;
  int host_port = 0;
  std::vector<std::string> volume_zones;  // zonal volume: one alternative per zone
  bool two_revisions = false;             // replicas alternate rev=r1 / rev=r2 (a rollout)
};

struct PoolSpec {
  std::string name;
  int weight = 0;
  std::vector<int> types;  // indices into Scenario::types
  std::optional<std::string> arch;
  std::vector<std::string> zones;  // empty: unrestricted
  std::vector<std::string> capacity_types;
  std::optional<std::string> team;  // template label team=<value>
  bool taint = false;               // dedicated=<name>:NoSchedule
  bool prefer_taint = false;        // soft=<name>:PreferNoSchedule
  std::optional<int> cpu_limit;
  std::optional<int> node_limit;
  std::optional<int> min_values;  // on the instance type
};

struct BoundSpec {
  std::string workload;  // label app=<workload>
  std::string cpu = "100m";
  bool guard = false;  // required zone anti-affinity against app=<workload>... of `guards`
  std::string guards;
  bool daemon = false;  // a pod of DaemonSet <workload>
};

struct NodeSpec {
  std::string name;
  std::string zone;
  int cpu = 4;
  std::string pool;
  bool taint = false;  // dedicated=<pool>
  bool uninitialized = false;
  std::vector<BoundSpec> bound;
};

struct DaemonSpec {
  std::string name;
  std::string cpu = "100m";
  std::string mem = "128Mi";
  std::vector<std::string> tolerations;
  std::optional<std::string> arch;
  int host_port = 0;
};

struct Scenario {
  uint64_t seed = 0;
  std::vector<TypeSpec> types;
  std::vector<PoolSpec> pools;
  std::vector<NodeSpec> nodes;
  std::vector<DaemonSpec> daemons;
  std::vector<WorkloadSpec> workloads;
  bool min_values_strict = true;
  bool respect_preferences = true;
};

// ---- generation -------------------------------------------------------------------------------

Scenario Generate(uint64_t seed) {
  Rng r(seed);
  Scenario s;
  s.seed = seed;
  s.min_values_strict = !r.Chance(0.2);
  s.respect_preferences = !r.Chance(0.2);

  // Catalog.
  struct Family {
    const char* name;
    int mem_per_cpu;
    double factor;
  };
  const std::vector<Family> families = {{"c", 2, 1.0}, {"m", 4, 1.2}, {"r", 8, 1.5}};
  const std::vector<int> sizes = {1, 2, 4, 8, 16};
  std::set<std::string> names;
  const int ntypes = r.Int(4, 9);
  for (int i = 0; i < ntypes * 3 && static_cast<int>(s.types.size()) < ntypes; ++i) {
    const Family& f = r.Pick(families);
    const int cpu = r.Pick(sizes);
    const bool arm = r.Chance(0.25);
    TypeSpec t;
    t.name = absl::StrCat(f.name, arm ? "g" : "", ".", cpu, "x");
    if (!names.insert(t.name).second) continue;
    t.cpu = cpu;
    t.mem_gi = int64_t{cpu} * f.mem_per_cpu;
    t.arch = arm ? "arm64" : "amd64";
    t.price = cpu * 0.04 * f.factor * (arm ? 0.85 : 1.0) * (0.9 + 0.2 * r.Int(0, 10) / 10.0);
    if (r.Chance(0.2)) {
      t.zones.clear();
      for (const auto& z : kZones) {
        if (r.Chance(0.6)) t.zones.push_back(z);
      }
      if (t.zones.empty()) t.zones.push_back(r.Pick(kZones));
    }
    t.spot_factor = r.Chance(0.15) ? 0 : 0.3 + 0.1 * r.Int(0, 4);
    for (const auto& z : t.zones) {
      for (const char* ct : {"on-demand", "spot"}) {
        if (r.Chance(0.08)) t.unavailable.push_back(absl::StrCat(ct, "/", z));
      }
    }
    if (r.Chance(0.3)) t.reserved_milli_cpu = 100;
    if (r.Chance(0.1)) t.extended.push_back({kGpu, r.Int(1, 4)});
    s.types.push_back(std::move(t));
  }

  // Pools.
  const int npools = r.Int(1, 3);
  for (int i = 0; i < npools; ++i) {
    PoolSpec p;
    p.name = absl::StrCat("pool-", std::string(1, static_cast<char>('a' + i)));
    p.weight = r.Pick(std::vector<int>{0, 0, 10, 50});
    for (size_t t = 0; t < s.types.size(); ++t) {
      if (r.Chance(0.7)) p.types.push_back(static_cast<int>(t));
    }
    if (p.types.empty()) p.types.push_back(r.Int(0, static_cast<int>(s.types.size()) - 1));
    if (r.Chance(0.15)) p.arch = r.Chance(0.7) ? "amd64" : "arm64";
    if (r.Chance(0.2)) {
      for (const auto& z : kZones) {
        if (r.Chance(0.6)) p.zones.push_back(z);
      }
    }
    if (r.Chance(0.2)) p.capacity_types = {r.Chance(0.5) ? "spot" : "on-demand"};
    if (r.Chance(0.25)) p.team = r.Chance(0.5) ? "blue" : "green";
    p.taint = r.Chance(0.25);
    p.prefer_taint = r.Chance(0.1);
    if (r.Chance(0.2)) p.cpu_limit = r.Int(4, 48);
    if (r.Chance(0.1)) p.node_limit = r.Int(1, 4);
    if (r.Chance(0.15)) p.min_values = 2;
    s.pools.push_back(std::move(p));
  }

  // Workloads (generated before nodes so that bound pods can carry their labels).
  const int nworkloads = r.Int(2, 7);
  for (int i = 0; i < nworkloads; ++i) {
    WorkloadSpec w;
    w.name = absl::StrCat("w", i);
    if (r.Chance(0.1)) w.ns = "team-b";
    w.replicas = r.Int(1, 8);
    w.cpu = r.Pick(std::vector<std::string>{"100m", "250m", "500m", "1", "1500m", "2", "3"});
    w.mem = r.Pick(std::vector<std::string>{"128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"});
    if (r.Chance(0.05)) w.gpu = 1;
    if (r.Chance(0.1)) w.node_selector[std::string(kArch)] = r.Chance(0.7) ? "amd64" : "arm64";
    if (r.Chance(0.08)) w.node_selector[std::string(kZone)] = r.Pick(kZones);
    if (r.Chance(0.08)) w.node_selector["team"] = r.Chance(0.5) ? "blue" : "green";
    if (r.Chance(0.08)) w.node_selector[std::string(kCt)] = r.Chance(0.5) ? "spot" : "on-demand";
    if (r.Chance(0.1)) {
      const int nterms = r.Chance(0.4) ? 2 : 1;
      for (int t = 0; t < nterms; ++t) {
        std::vector<std::string> zs;
        for (const auto& z : kZones) {
          if (r.Chance(0.5)) zs.push_back(z);
        }
        if (zs.empty()) zs.push_back(r.Pick(kZones));
        w.zone_terms.push_back(zs);
      }
    }
    if (r.Chance(0.1)) w.preferred_zone = r.Pick(kZones);
    for (const auto& p : s.pools) {
      if (p.taint && r.Chance(0.35)) w.tolerations.push_back(p.name);
    }
    if (r.Chance(0.04)) w.tolerations.push_back("*");
    if (r.Chance(0.3)) {
      SpreadSpec sp;
      sp.key = std::string(kZone);
      sp.skew = r.Chance(0.7) ? 1 : 2;
      if (r.Chance(0.25)) sp.min_domains = r.Int(2, 4);
      sp.ignore_affinity = r.Chance(0.15);
      sp.honor_taints = r.Chance(0.15);
      sp.anyway = r.Chance(0.15);
      sp.match_revision = r.Chance(0.25);
      sp.selects = w.name;
      w.spreads.push_back(sp);
    }
    if (r.Chance(0.15)) {
      SpreadSpec sp;
      sp.key = std::string(kHost);
      sp.skew = r.Int(1, 3);
      sp.anyway = r.Chance(0.1);
      sp.selects = w.name;
      w.spreads.push_back(sp);
    }
    if (r.Chance(0.15)) w.terms.push_back({std::string(kHost), w.name, true, r.Chance(0.15)});
    if (r.Chance(0.04)) w.terms.push_back({std::string(kZone), w.name, true, false});
    if (r.Chance(0.1)) {
      w.terms.push_back({std::string(r.Chance(0.7) ? kZone : kHost), w.name, false, false});
    }
    if (i > 0 && r.Chance(0.1)) {
      w.terms.push_back(
          {std::string(kZone), absl::StrCat("w", r.Int(0, i - 1)), false, r.Chance(0.2)});
    }
    if (i > 0 && r.Chance(0.1)) {
      w.terms.push_back({std::string(r.Chance(0.6) ? kHost : kZone),
                         absl::StrCat("w", r.Int(0, i - 1)), true, false, r.Chance(0.2)});
    }
    if (r.Chance(0.1)) w.host_port = r.Chance(0.5) ? 8080 : 9100;
    if (r.Chance(0.06)) {
      w.volume_zones.push_back(r.Pick(kZones));
      if (r.Chance(0.3)) w.volume_zones.push_back(r.Pick(kZones));
    }
    w.two_revisions = r.Chance(0.15);
    s.workloads.push_back(std::move(w));
  }

  // DaemonSets.
  const int ndaemons = r.Int(0, 3);
  for (int i = 0; i < ndaemons; ++i) {
    DaemonSpec d;
    d.name = absl::StrCat("ds", i);
    d.cpu = r.Pick(std::vector<std::string>{"50m", "100m", "250m", "500m"});
    d.mem = r.Pick(std::vector<std::string>{"64Mi", "128Mi", "256Mi"});
    if (r.Chance(0.3)) {
      d.tolerations.push_back("*");
    } else {
      for (const auto& p : s.pools) {
        if (p.taint && r.Chance(0.4)) d.tolerations.push_back(p.name);
      }
    }
    if (r.Chance(0.2)) d.arch = r.Chance(0.6) ? "amd64" : "arm64";
    if (r.Chance(0.15)) d.host_port = 9100;
    s.daemons.push_back(std::move(d));
  }

  // Existing nodes with bound pods.
  const int nnodes = r.Chance(0.4) ? r.Int(1, 3) : 0;
  for (int i = 0; i < nnodes; ++i) {
    NodeSpec n;
    n.name = absl::StrCat("node-", i);
    n.zone = r.Pick(kZones);
    n.cpu = r.Pick(std::vector<int>{2, 4, 8});
    if (r.Chance(0.6)) n.pool = r.Pick(s.pools).name;
    n.taint = !n.pool.empty() && r.Chance(0.2);
    n.uninitialized = r.Chance(0.1);
    const int nbound = r.Int(0, 3);
    for (int b = 0; b < nbound; ++b) {
      BoundSpec bs;
      bs.workload = r.Pick(s.workloads).name;
      bs.cpu = r.Pick(std::vector<std::string>{"100m", "250m", "500m"});
      if (r.Chance(0.15)) {
        bs.guard = true;
        bs.guards = r.Pick(s.workloads).name;
      }
      n.bound.push_back(bs);
    }
    if (!s.daemons.empty() && r.Chance(0.4)) {
      BoundSpec ds;
      ds.workload = r.Pick(s.daemons).name;
      ds.daemon = true;
      n.bound.push_back(ds);
    }
    s.nodes.push_back(std::move(n));
  }
  return s;
}

// ---- materialisation ----------------------------------------------------------------------------

// Owns the pods and instance types of one scenario's Input.
struct World {
  Scene scene;
  std::vector<InstanceTypePtr> types;
};

std::unique_ptr<World> Build(const Scenario& s) {
  auto world = std::make_unique<World>();
  Input& in = world->scene.input;
  in.options.min_values_strict = s.min_values_strict;
  in.options.respect_preferences = s.respect_preferences;
  in.options.improve = std::getenv("DOVETAIL_PROPERTY_NO_IMPROVE") == nullptr;
  in.namespace_labels = {{"default", {{"kubernetes.io/metadata.name", "default"}}},
                         {"team-b", {{"kubernetes.io/metadata.name", "team-b"}}}};
  for (const auto& t : s.types) world->types.push_back(MakeType(t));
  for (const auto& ps : s.pools) {
    std::vector<InstanceTypePtr> types;
    for (int t : ps.types) types.push_back(world->types[t]);
    PoolTemplate p = Pool(ps.name, std::move(types), ps.weight);
    if (ps.arch) p.requirements.Add(scheduling::Requirement::In(std::string(kArch), {*ps.arch}));
    if (!ps.zones.empty())
      p.requirements.Add(scheduling::Requirement::In(std::string(kZone), ps.zones));
    if (!ps.capacity_types.empty()) {
      p.requirements.Add(scheduling::Requirement::In(std::string(kCt), ps.capacity_types));
    }
    if (ps.team) PoolLabel(p, "team", *ps.team);
    if (ps.taint) p.taints.push_back({"dedicated", ps.name, TaintEffect::kNoSchedule});
    if (ps.prefer_taint) p.taints.push_back({"soft", ps.name, TaintEffect::kPreferNoSchedule});
    if (ps.cpu_limit || ps.node_limit) {
      p.remaining_limits.emplace();
      if (ps.cpu_limit) (*p.remaining_limits)["cpu"] = Quantity::FromUnits(*ps.cpu_limit);
      if (ps.node_limit) (*p.remaining_limits)["nodes"] = Quantity::FromUnits(*ps.node_limit);
    }
    if (ps.min_values) {
      (void)p.requirements.Add(NodeSelectorRequirement{
          std::string(v1::kLabelInstanceType), SelectorOperator::kExists, {}, *ps.min_values});
    }
    in.pools.push_back(std::move(p));
  }
  auto tolerate = [](Pod& pod, const std::vector<std::string>& keys) {
    for (const auto& k : keys) {
      if (k == "*") {
        pod.spec.tolerations.push_back(
            {"", apis::core::TolerationOperator::kExists, "", std::nullopt});
      } else {
        pod.spec.tolerations.push_back(
            {"dedicated", apis::core::TolerationOperator::kEqual, k, TaintEffect::kNoSchedule});
      }
    }
  };
  for (const auto& d : s.daemons) {
    auto pod = MakePod(d.name, d.cpu.c_str(), d.mem.c_str(), {{"app", d.name}}, "kube-system");
    tolerate(*pod, d.tolerations);
    if (d.arch) pod->spec.node_selector[std::string(kArch)] = *d.arch;
    if (d.host_port) AddHostPort(*pod, d.host_port);
    world->scene.AddDaemonSet(std::move(pod), absl::StrCat("kube-system/", d.name));
  }
  for (const auto& ns : s.nodes) {
    ExistingNode n = Node(ns.name, ns.zone, absl::StrCat(ns.cpu).c_str(),
                          absl::StrCat(ns.cpu * 2, "Gi").c_str(), ns.pool);
    for (const auto& ps : s.pools) {
      if (ps.name == ns.pool && ps.team) n.labels["team"] = *ps.team;
    }
    if (ns.taint) n.taints.push_back({"dedicated", ns.pool, TaintEffect::kNoSchedule});
    if (ns.uninitialized) {
      n.initialized = false;
      n.taints.push_back({"startup", "", TaintEffect::kNoSchedule});
      n.startup_taint_keys = {"startup"};
    }
    in.nodes.push_back(n);
    int i = 0;
    for (const auto& b : ns.bound) {
      const std::string name = absl::StrCat(ns.name, "-", b.workload, "-", i++);
      if (b.daemon) {
        auto pod = MakePod(name, "100m", "128Mi", {{"app", b.workload}}, "kube-system");
        pod->metadata.owner_references.push_back(
            {"apps/v1", "DaemonSet", b.workload, "uid", true, std::nullopt});
        world->scene.AddBound(std::move(pod), ns.name);
        continue;
      }
      std::string wns = "default";
      for (const auto& w : s.workloads) {
        if (w.name == b.workload) wns = w.ns;
      }
      auto pod = MakePod(name, b.cpu.c_str(), "128Mi", {{"app", b.workload}}, wns);
      if (b.guard) AddAntiAffinity(*pod, kZone, {{"app", b.guards}});
      world->scene.AddBound(std::move(pod), ns.name);
    }
  }
  for (const auto& w : s.workloads) {
    for (int i = 0; i < w.replicas; ++i) {
      auto pod = MakePod(absl::StrCat(w.name, "-", i), w.cpu.c_str(), w.mem.c_str(),
                         {{"app", w.name}, {"rev", w.two_revisions && i % 2 ? "r2" : "r1"}}, w.ns);
      if (w.gpu) pod->spec.containers[0].resources.requests[kGpu] = Quantity::FromUnits(w.gpu);
      pod->spec.node_selector = w.node_selector;
      if (!w.zone_terms.empty()) {
        std::vector<NodeSelectorTerm> terms;
        for (const auto& zs : w.zone_terms) {
          terms.push_back({{{std::string(kZone), SelectorOperator::kIn, zs, std::nullopt}}, {}});
        }
        RequireNodeAffinity(*pod, terms);
      }
      if (w.preferred_zone) {
        auto& a = pod->spec.affinity ? *pod->spec.affinity : pod->spec.affinity.emplace();
        auto& na = a.node_affinity ? *a.node_affinity : a.node_affinity.emplace();
        apis::core::PreferredSchedulingTerm t;
        t.weight = 10;
        t.preference.match_expressions.push_back(
            {std::string(kZone), SelectorOperator::kIn, {*w.preferred_zone}, std::nullopt});
        na.preferred.push_back(t);
      }
      tolerate(*pod, w.tolerations);
      for (const auto& sp : w.spreads) {
        auto& c = AddSpread(*pod, sp.key, sp.skew, {{"app", sp.selects}});
        c.min_domains = sp.min_domains;
        if (sp.ignore_affinity) c.node_affinity_policy = NodeInclusionPolicy::kIgnore;
        if (sp.honor_taints) c.node_taints_policy = NodeInclusionPolicy::kHonor;
        if (sp.anyway) {
          c.when_unsatisfiable = apis::core::UnsatisfiableConstraintAction::kScheduleAnyway;
        }
        if (sp.match_revision) c.match_label_keys = {"rev"};
      }
      for (const auto& t : w.terms) {
        apis::core::PodAffinityTerm term = AffinityTerm(t.key, {{"app", t.selects}});
        if (t.all_namespaces) term.namespace_selector.emplace();
        auto& a = pod->spec.affinity ? *pod->spec.affinity : pod->spec.affinity.emplace();
        auto& pa =
            t.anti ? (a.pod_anti_affinity ? *a.pod_anti_affinity : a.pod_anti_affinity.emplace())
                   : (a.pod_affinity ? *a.pod_affinity : a.pod_affinity.emplace());
        if (t.preferred) {
          pa.preferred.push_back({50, term});
        } else {
          pa.required.push_back(term);
        }
      }
      if (w.host_port) AddHostPort(*pod, w.host_port);
      Pod* added = world->scene.AddPod(std::move(pod));
      for (const auto& z : w.volume_zones) {
        scheduling::Requirements alt;
        alt.Add(scheduling::Requirement::In(std::string(kZone), {z}));
        in.volume_requirements[added].push_back(std::move(alt));
      }
    }
  }
  return world;
}

// ---- description --------------------------------------------------------------------------------

std::string Describe(const Scenario& s) {
  std::vector<std::string> lines;
  lines.push_back(absl::StrCat("seed ", s.seed, s.min_values_strict ? "" : " minValues=BestEffort",
                               s.respect_preferences ? "" : " preferences=Ignore"));
  for (const auto& t : s.types) {
    std::string line = absl::StrCat(
        "  type ", t.name, " cpu=", t.cpu, " mem=", t.mem_gi, "Gi arch=", t.arch, " od=", t.price,
        t.spot_factor > 0 ? absl::StrCat(" spot=", t.price * t.spot_factor) : " no-spot",
        " zones=", absl::StrJoin(t.zones, ","));
    if (!t.unavailable.empty())
      absl::StrAppend(&line, " unavailable=", absl::StrJoin(t.unavailable, ","));
    if (t.reserved_milli_cpu) absl::StrAppend(&line, " reserved-cpu=", t.reserved_milli_cpu, "m");
    for (const auto& [k, n] : t.extended) absl::StrAppend(&line, " ", k, "=", n);
    lines.push_back(line);
  }
  for (const auto& p : s.pools) {
    std::vector<std::string> types;
    for (int t : p.types) types.push_back(s.types[t].name);
    std::string line =
        absl::StrCat("  pool ", p.name, " weight=", p.weight, " types=", absl::StrJoin(types, ","));
    if (p.arch) absl::StrAppend(&line, " arch=", *p.arch);
    if (!p.zones.empty()) absl::StrAppend(&line, " zones=", absl::StrJoin(p.zones, ","));
    if (!p.capacity_types.empty())
      absl::StrAppend(&line, " ct=", absl::StrJoin(p.capacity_types, ","));
    if (p.team) absl::StrAppend(&line, " label team=", *p.team);
    if (p.taint) absl::StrAppend(&line, " taint dedicated=", p.name, ":NoSchedule");
    if (p.prefer_taint) absl::StrAppend(&line, " taint soft:PreferNoSchedule");
    if (p.cpu_limit) absl::StrAppend(&line, " limit cpu=", *p.cpu_limit);
    if (p.node_limit) absl::StrAppend(&line, " limit nodes=", *p.node_limit);
    if (p.min_values) absl::StrAppend(&line, " minValues(instance-type)=", *p.min_values);
    lines.push_back(line);
  }
  for (const auto& d : s.daemons) {
    std::string line = absl::StrCat("  daemonset ", d.name, " cpu=", d.cpu, " mem=", d.mem);
    if (!d.tolerations.empty())
      absl::StrAppend(&line, " tolerates=", absl::StrJoin(d.tolerations, ","));
    if (d.arch) absl::StrAppend(&line, " arch=", *d.arch);
    if (d.host_port) absl::StrAppend(&line, " hostPort=", d.host_port);
    lines.push_back(line);
  }
  for (const auto& n : s.nodes) {
    std::string line = absl::StrCat("  node ", n.name, " zone=", n.zone, " cpu=", n.cpu);
    if (!n.pool.empty()) absl::StrAppend(&line, " pool=", n.pool);
    if (n.taint) absl::StrAppend(&line, " taint dedicated=", n.pool);
    if (n.uninitialized) absl::StrAppend(&line, " uninitialized(startup taint)");
    for (const auto& b : n.bound) {
      absl::StrAppend(&line, "\n    bound ", b.daemon ? "daemonset pod " : "", "app=", b.workload,
                      " cpu=", b.cpu,
                      b.guard ? absl::StrCat(" zone-anti-affinity app=", b.guards) : "");
    }
    lines.push_back(line);
  }
  for (const auto& w : s.workloads) {
    std::string line = absl::StrCat("  workload ", w.name, " x", w.replicas, " ns=", w.ns,
                                    " cpu=", w.cpu, " mem=", w.mem);
    if (w.gpu) absl::StrAppend(&line, " gpu=", w.gpu);
    for (const auto& [k, v] : w.node_selector) absl::StrAppend(&line, " nodeSelector ", k, "=", v);
    if (!w.zone_terms.empty()) {
      std::vector<std::string> terms;
      for (const auto& t : w.zone_terms)
        terms.push_back(absl::StrCat("zone in {", absl::StrJoin(t, ","), "}"));
      absl::StrAppend(&line, " nodeAffinity ", absl::StrJoin(terms, " OR "));
    }
    if (w.preferred_zone) absl::StrAppend(&line, " prefers zone=", *w.preferred_zone);
    if (!w.tolerations.empty())
      absl::StrAppend(&line, " tolerates=", absl::StrJoin(w.tolerations, ","));
    for (const auto& sp : w.spreads) {
      absl::StrAppend(
          &line, " spread(", sp.key == kZone ? "zone" : "hostname", " maxSkew=", sp.skew,
          sp.min_domains ? absl::StrCat(" minDomains=", *sp.min_domains) : "",
          sp.ignore_affinity ? " nodeAffinityPolicy=Ignore" : "",
          sp.honor_taints ? " nodeTaintsPolicy=Honor" : "", sp.anyway ? " ScheduleAnyway" : "",
          sp.match_revision ? " matchLabelKeys=rev" : "", ")");
    }
    for (const auto& t : w.terms) {
      absl::StrAppend(&line, " ", t.preferred ? "preferred-" : "",
                      t.anti ? "anti-affinity(" : "affinity(", t.key == kZone ? "zone" : "hostname",
                      " app=", t.selects, t.all_namespaces ? " all-namespaces" : "", ")");
    }
    if (w.host_port) absl::StrAppend(&line, " hostPort=", w.host_port);
    if (!w.volume_zones.empty()) {
      absl::StrAppend(&line, " volume in one of {", absl::StrJoin(w.volume_zones, ","), "}");
    }
    if (w.two_revisions) absl::StrAppend(&line, " revisions r1/r2");
    lines.push_back(line);
  }
  return absl::StrJoin(lines, "\n");
}

std::string Describe(const Plan& plan) {
  std::vector<std::string> lines;
  auto pods = [](const std::vector<const Pod*>& ps) {
    std::vector<std::string> names;
    names.reserve(ps.size());
    for (const Pod* p : ps) names.push_back(p->metadata.name);
    return absl::StrJoin(names, ",");
  };
  for (const auto& c : plan.node_claims) {
    std::vector<std::string> options;
    for (const auto& t : c.instance_types) options.push_back(t->name());
    lines.push_back(absl::StrCat("  claim ", c.hostname, " pool=", c.pool, " ", c.instance_type,
                                 " ", c.capacity_type, " ", c.zone, " $", c.price, " options=[",
                                 absl::StrJoin(options, ","), "] reqs={", c.requirements.String(),
                                 "} pods=", pods(c.pods)));
  }
  for (const auto& e : plan.existing)
    lines.push_back(absl::StrCat("  node ", e.node, " +", pods(e.pods)));
  for (const auto& u : plan.unschedulable) {
    lines.push_back(absl::StrCat("  unschedulable ", u.pod->metadata.name, ": ", u.reason));
  }
  lines.push_back(absl::StrCat("  total $", plan.total_price,
                               plan.lower_bound
                                   ? absl::StrCat(" lower bound $", *plan.lower_bound)
                                   : absl::StrCat(" no bound: ", plan.lower_bound_error)));
  return absl::StrJoin(lines, "\n");
}

// Everything a plan says, for the determinism check.
std::string Canonical(const Plan& plan) {
  std::string out = Describe(plan);
  for (const auto& c : plan.node_claims) {
    for (const auto& [k, v] : c.labels) absl::StrAppend(&out, "|", k, "=", v);
    for (const auto& [k, q] : c.requests) absl::StrAppend(&out, "|", k, ":", q.ToString());
    absl::StrAppend(&out, c.min_values_relaxed ? "|relaxed" : "");
  }
  return out;
}

// ---- properties ---------------------------------------------------------------------------------

// A failure: its category (used to keep the same failure while shrinking) and a description.
struct Failure {
  std::string category;
  std::string detail;
};

// A pod with no constraints (no selectors, tolerations, topology, ports; a zonal volume at most),
// that no other pod's required anti-affinity selects, and that fits some type of an untainted,
// unlimited pool without minValues next to every DaemonSet, in an offering one of its volume
// alternatives allows, must be placed.
bool PlainPodMustFit(const Pod& pod, const Input& in) {
  const auto& s = pod.spec;
  if (!s.node_selector.empty() || s.affinity || !s.tolerations.empty() ||
      !s.topology_spread_constraints.empty() || !s.containers[0].ports.empty()) {
    return false;
  }
  for (const auto* list : {&in.pods, &in.bound_pods}) {
    for (const Pod* other : *list) {
      if (!other->spec.affinity || !other->spec.affinity->pod_anti_affinity) continue;
      for (const auto& t : other->spec.affinity->pod_anti_affinity->required) {
        if (t.label_selector && scheduling::Matches(*t.label_selector, pod.metadata.labels)) {
          return false;  // conservatively, whatever the namespaces
        }
      }
    }
  }
  ResourceList req = apis::core::PodRequests(pod);
  for (const auto& ds : in.daemon_sets) {
    for (const auto& [k, q] : apis::core::PodRequests(*ds.pod)) req[k] += q;
  }
  for (const auto& pool : in.pools) {
    bool hard_taint = false;
    for (const auto& t : pool.taints) hard_taint |= t.effect != TaintEffect::kPreferNoSchedule;
    bool min_values = false;
    for (const auto& r : pool.requirements) min_values |= r.min_values().has_value();
    if (hard_taint || pool.remaining_limits || min_values) continue;
    for (const auto& t : pool.instance_types) {
      if (!cloudprovider::RequirementsIntersect(t->requirements(), pool.requirements)) continue;
      auto volumes = in.volume_requirements.find(&pod);
      bool offering = false;
      for (const auto& o : t->offerings()) {
        if (!o.available ||
            !cloudprovider::RequirementsIntersect(o.requirements, pool.requirements)) {
          continue;
        }
        if (volumes == in.volume_requirements.end() || volumes->second.empty()) {
          offering = true;
          continue;
        }
        for (const auto& alt : volumes->second) {
          offering |= cloudprovider::RequirementsIntersect(o.requirements, alt) &&
                      cloudprovider::RequirementsIntersect(pool.requirements, alt);
        }
      }
      if (!offering) continue;
      bool fits = true;
      for (const auto& [k, q] : req) {
        auto it = t->Allocatable().find(k);
        fits &= it != t->Allocatable().end() && q <= it->second;
      }
      if (fits) return true;
    }
  }
  return false;
}

std::optional<Failure> Check(const Scenario& scenario) {
  auto world = Build(scenario);
  const Input& in = world->scene.input;
  auto plan = Solve(in);
  if (!plan.ok()) return Failure{"solve-error", plan.status().ToString()};
  std::vector<Violation> vs = ValidatePlan(in, *plan);
  if (!vs.empty()) {
    std::set<std::string> kinds;
    std::vector<std::string> lines;
    for (const auto& v : vs) {
      kinds.insert(std::string(ViolationKindName(v.kind)));
      lines.push_back(v.ToString());
    }
    return Failure{absl::StrCat("violation:", absl::StrJoin(kinds, ",")),
                   absl::StrCat(absl::StrJoin(lines, "\n"), "\nplan:\n", Describe(*plan))};
  }
  if (plan->lower_bound && *plan->lower_bound > plan->total_price + 1e-6) {
    return Failure{"lower-bound",
                   absl::StrCat("lower bound ", *plan->lower_bound, " exceeds the plan's price ",
                                plan->total_price, "\nplan:\n", Describe(*plan))};
  }
  for (const auto& u : plan->unschedulable) {
    if (PlainPodMustFit(*u.pod, in)) {
      return Failure{"plain-pod-unschedulable",
                     absl::StrCat("pod ", u.pod->metadata.name,
                                  " has no constraints and fits an unrestricted pool, but: ",
                                  u.reason, "\nplan:\n", Describe(*plan))};
    }
  }
  auto again = Solve(in);
  if (!again.ok() || Canonical(*again) != Canonical(*plan)) {
    return Failure{"nondeterministic",
                   absl::StrCat("first:\n", Describe(*plan), "\nsecond:\n",
                                again.ok() ? Describe(*again) : again.status().ToString())};
  }
  return std::nullopt;
}

// Removes parts of the scenario while the same category of failure persists.
Scenario Shrink(Scenario s, const std::string& category, int budget = 400) {
  auto fails = [&](const Scenario& c) {
    if (--budget < 0) return false;
    auto f = Check(c);
    return f.has_value() && f->category == category;
  };
  bool progress = true;
  while (progress && budget > 0) {
    progress = false;
    auto attempt = [&](const std::function<void(Scenario&)>& edit) {
      Scenario c = s;
      edit(c);
      if (fails(c)) {
        s = std::move(c);
        progress = true;
        return true;
      }
      return false;
    };
    for (size_t i = s.workloads.size(); i-- > 0;) {
      // Keep workloads others refer to only if removing them changes nothing.
      attempt([i](Scenario& c) { c.workloads.erase(c.workloads.begin() + i); });
    }
    for (size_t i = 0; i < s.workloads.size(); ++i) {
      while (s.workloads[i].replicas > 1 && attempt([i](Scenario& c) {
               c.workloads[i].replicas = (c.workloads[i].replicas + 1) / 2;
             })) {
      }
      while (s.workloads[i].replicas > 1 &&
             attempt([i](Scenario& c) { --c.workloads[i].replicas; })) {
      }
      for (size_t j = s.workloads[i].spreads.size(); j-- > 0;) {
        attempt([i, j](Scenario& c) {
          c.workloads[i].spreads.erase(c.workloads[i].spreads.begin() + j);
        });
      }
      for (size_t j = s.workloads[i].terms.size(); j-- > 0;) {
        attempt(
            [i, j](Scenario& c) { c.workloads[i].terms.erase(c.workloads[i].terms.begin() + j); });
      }
      if (!s.workloads[i].node_selector.empty())
        attempt([i](Scenario& c) { c.workloads[i].node_selector.clear(); });
      if (!s.workloads[i].zone_terms.empty())
        attempt([i](Scenario& c) { c.workloads[i].zone_terms.clear(); });
      if (s.workloads[i].preferred_zone)
        attempt([i](Scenario& c) { c.workloads[i].preferred_zone.reset(); });
      if (!s.workloads[i].tolerations.empty())
        attempt([i](Scenario& c) { c.workloads[i].tolerations.clear(); });
      if (s.workloads[i].host_port) attempt([i](Scenario& c) { c.workloads[i].host_port = 0; });
      if (s.workloads[i].gpu) attempt([i](Scenario& c) { c.workloads[i].gpu = 0; });
      if (!s.workloads[i].volume_zones.empty()) {
        attempt([i](Scenario& c) { c.workloads[i].volume_zones.clear(); });
      }
      if (s.workloads[i].two_revisions)
        attempt([i](Scenario& c) { c.workloads[i].two_revisions = false; });
      if (s.workloads[i].ns != "default")
        attempt([i](Scenario& c) { c.workloads[i].ns = "default"; });
    }
    for (size_t i = s.daemons.size(); i-- > 0;) {
      attempt([i](Scenario& c) {
        const std::string name = c.daemons[i].name;
        c.daemons.erase(c.daemons.begin() + i);
        for (auto& n : c.nodes) {
          std::erase_if(n.bound,
                        [&](const BoundSpec& b) { return b.daemon && b.workload == name; });
        }
      });
    }
    for (size_t i = s.nodes.size(); i-- > 0;) {
      attempt([i](Scenario& c) { c.nodes.erase(c.nodes.begin() + i); });
      if (i < s.nodes.size()) {
        for (size_t j = s.nodes[i].bound.size(); j-- > 0;) {
          attempt([i, j](Scenario& c) { c.nodes[i].bound.erase(c.nodes[i].bound.begin() + j); });
        }
      }
    }
    for (size_t i = s.pools.size(); i-- > 0;) {
      if (s.pools.size() > 1) attempt([i](Scenario& c) { c.pools.erase(c.pools.begin() + i); });
      if (i >= s.pools.size()) continue;
      for (size_t j = s.pools[i].types.size(); j-- > 0 && s.pools[i].types.size() > 1;) {
        attempt([i, j](Scenario& c) { c.pools[i].types.erase(c.pools[i].types.begin() + j); });
      }
      if (s.pools[i].cpu_limit) attempt([i](Scenario& c) { c.pools[i].cpu_limit.reset(); });
      if (s.pools[i].node_limit) attempt([i](Scenario& c) { c.pools[i].node_limit.reset(); });
      if (s.pools[i].min_values) attempt([i](Scenario& c) { c.pools[i].min_values.reset(); });
      if (s.pools[i].prefer_taint) attempt([i](Scenario& c) { c.pools[i].prefer_taint = false; });
      if (!s.pools[i].zones.empty()) attempt([i](Scenario& c) { c.pools[i].zones.clear(); });
      if (!s.pools[i].capacity_types.empty())
        attempt([i](Scenario& c) { c.pools[i].capacity_types.clear(); });
      if (s.pools[i].weight) attempt([i](Scenario& c) { c.pools[i].weight = 0; });
    }
    for (size_t i = 0; i < s.types.size(); ++i) {
      if (!s.types[i].unavailable.empty())
        attempt([i](Scenario& c) { c.types[i].unavailable.clear(); });
      if (s.types[i].reserved_milli_cpu)
        attempt([i](Scenario& c) { c.types[i].reserved_milli_cpu = 0; });
    }
  }
  // Drop types no pool uses, renumbering the pools' indices.
  std::vector<int> used(s.types.size(), 0);
  for (const auto& p : s.pools) {
    for (int t : p.types) used[t] = 1;
  }
  std::vector<int> renumber(s.types.size(), -1);
  std::vector<TypeSpec> kept;
  for (size_t t = 0; t < s.types.size(); ++t) {
    if (used[t]) {
      renumber[t] = static_cast<int>(kept.size());
      kept.push_back(s.types[t]);
    }
  }
  s.types = std::move(kept);
  for (auto& p : s.pools) {
    for (int& t : p.types) t = renumber[t];
  }
  return s;
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v == nullptr ? fallback : std::atoi(v);
}

TEST(SolverPropertyTest, RandomWorkloadsGiveValidDeterministicPlans) {
  const int seeds = EnvInt("DOVETAIL_PROPERTY_SEEDS", 500);
  const int first = EnvInt("DOVETAIL_PROPERTY_FIRST_SEED", 1);
  std::map<std::string, std::vector<int>> failing;  // category -> seeds
  int shrunk = 0;
  for (int seed = first; seed < first + seeds; ++seed) {
    Scenario s = Generate(static_cast<uint64_t>(seed));
    std::optional<Failure> f = Check(s);
    if (!f) continue;
    failing[f->category].push_back(seed);
    // Shrink and print the first failure of each category in detail; list the others.
    const bool all = EnvInt("DOVETAIL_PROPERTY_SHRINK_ALL", 0) != 0;
    if (!all && (failing[f->category].size() > 1 || shrunk >= 6)) continue;
    ++shrunk;
    Scenario minimal = Shrink(s, f->category);
    std::optional<Failure> mf = Check(minimal);
    ADD_FAILURE() << "seed " << seed << ": " << f->category << "\nminimal scenario:\n"
                  << Describe(minimal) << "\n"
                  << (mf ? mf->detail : f->detail);
  }
  for (const auto& [category, list] : failing) {
    ADD_FAILURE() << category << " on " << list.size() << " of " << seeds
                  << " seeds: " << absl::StrJoin(list, ",");
  }
}

// The generator must produce the constraint mix the property is about; a test that cannot fail
// is a defect, so check that the scenarios really contain each kind.
TEST(SolverPropertyTest, GeneratorCoversEveryConstraintKind) {
  std::map<std::string, int> seen;
  for (int seed = 1; seed <= 200; ++seed) {
    Scenario s = Generate(static_cast<uint64_t>(seed));
    for (const auto& w : s.workloads) {
      if (!w.node_selector.empty()) ++seen["nodeSelector"];
      if (!w.zone_terms.empty()) ++seen["nodeAffinity"];
      if (!w.tolerations.empty()) ++seen["tolerations"];
      if (w.host_port) ++seen["hostPort"];
      if (w.gpu) ++seen["gpu"];
      if (!w.volume_zones.empty()) ++seen["volumeTopology"];
      for (const auto& sp : w.spreads) {
        ++seen[sp.key == kZone ? "zoneSpread" : "hostnameSpread"];
        if (sp.min_domains) ++seen["minDomains"];
        if (sp.match_revision && w.two_revisions) ++seen["matchLabelKeys"];
      }
      for (const auto& t : w.terms) {
        if (t.anti) ++seen["antiAffinity"];
        if (!t.anti && t.selects == w.name) ++seen["selfAffinity"];
        if (!t.anti && t.selects != w.name) ++seen["affinity"];
      }
    }
    for (const auto& p : s.pools) {
      if (p.taint) ++seen["taintedPool"];
      if (p.cpu_limit || p.node_limit) ++seen["limits"];
      if (p.min_values) ++seen["minValues"];
    }
    if (s.pools.size() > 1) ++seen["severalPools"];
    for (const auto& n : s.nodes) {
      ++seen["existingNode"];
      for (const auto& b : n.bound) ++seen[b.guard ? "existingAntiAffinity" : "boundPod"];
    }
    for (const auto& d : s.daemons) {
      if (!d.tolerations.empty()) ++seen["daemonSetWithTolerations"];
    }
  }
  for (const char* kind : {"nodeSelector",
                           "nodeAffinity",
                           "tolerations",
                           "hostPort",
                           "gpu",
                           "zoneSpread",
                           "hostnameSpread",
                           "minDomains",
                           "antiAffinity",
                           "selfAffinity",
                           "affinity",
                           "taintedPool",
                           "limits",
                           "minValues",
                           "severalPools",
                           "existingNode",
                           "existingAntiAffinity",
                           "boundPod",
                           "daemonSetWithTolerations",
                           "volumeTopology",
                           "matchLabelKeys"}) {
    EXPECT_GE(seen[kind], 5) << kind;
  }
}

}  // namespace
}  // namespace dovetail::solver
