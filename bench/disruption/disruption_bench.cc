// dovetail_disruption_bench: what a disruption simulation costs with solver::Session, against
// solving every reduced input from scratch (docs/benchmarks.md, "Disruption simulation").
//
// Clusters: N existing nodes (kwok synthetic catalog types, three zones, two NodePools) holding on
// average 20 bound pods each, left after a 30 % scale-in: nodes are on average ~70 % full, some
// much emptier. Every node also runs one DaemonSet pod. No pending pods. Variants:
//   plain       Deployments without constraints
//   spread      topologySpreadConstraints maxSkew 1 on kubernetes.io/hostname (half of the
//               Deployments DoNotSchedule, half ScheduleAnyway)
//   anti        required pod anti-affinity on kubernetes.io/hostname for a fifth of the
//               Deployments
//   tight       no constraints, larger pods (1-2 vCPU, 1-3 GiB) packed onto c7k.4xlarge nodes until
//               no more fit (~8 pods per node): moved pods mostly need new NodeClaims
// A candidate is one node: removed, its (non-DaemonSet) pods moved. Options: improve=false,
// lower_bound=false (as disruption runs the solver).
//
// Benchmarks (names "<what>/<variant>/<nodes>"):
//   create/V/N     Session::Create
//   simulate/V/N   Session::Simulate, one candidate per iteration, cycling over every node (a
//                  full single-node scan; iterations = N)
//   solve/V/N      Solve on the reduced input of the same candidates (N <= 1000; a sample of
//                  candidates spread over the cluster), input construction not timed; counter
//                  `mismatches`: candidates whose Session plan differs from Solve's (must be 0)
// Read CPU time: the machine is shared.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "bench/generated_cluster.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "dovetail/solver/session.h"
#include "dovetail/solver/solver.h"

namespace dovetail::bench {
namespace {

namespace v1 = apis::v1;
using apis::core::Pod;
using solver::Input;

enum class Variant { kPlain, kSpread, kAnti, kTight };

const char* Name(Variant v) {
  switch (v) {
    case Variant::kPlain:
      return "plain";
    case Variant::kSpread:
      return "spread";
    case Variant::kAnti:
      return "anti";
    case Variant::kTight:
      return "tight";
  }
  return "";
}

Quantity Q(const std::string& s) { return *Quantity::Parse(s); }

struct Cluster {
  std::vector<std::unique_ptr<Pod>> pods;
  std::vector<std::vector<const Pod*>> movable;  // per node: its Deployment pods
  Input input;
};

std::unique_ptr<Cluster> MakeCluster(int nodes, Variant variant) {
  auto c = std::make_unique<Cluster>();
  Rng r(static_cast<uint64_t>(nodes) * 31 + static_cast<uint64_t>(variant));
  auto catalog = cloudprovider::kwok::SyntheticCatalog();
  if (!catalog.ok()) return nullptr;
  Input& in = c->input;
  in.options.improve = false;
  in.options.lower_bound = false;

  // Pools: general purpose amd64 (weight 10) and everything (weight 0).
  std::vector<cloudprovider::InstanceTypePtr> amd, all;
  for (const auto& t : catalog->instance_types()) {
    const auto* arch = t->requirements().Find(v1::kLabelArch);
    const bool gpu = t->capacity().contains("nvidia.com/gpu");
    if (gpu) continue;
    all.push_back(t);
    if (arch != nullptr && arch->Has(std::string(v1::kArchitectureAmd64))) amd.push_back(t);
  }
  solver::PoolTemplate general;
  general.name = "general";
  general.weight = 10;
  general.instance_types = amd;
  general.labels[std::string(v1::kNodePoolLabelKey)] = "general";
  solver::PoolTemplate flexible;
  flexible.name = "flexible";
  flexible.instance_types = all;
  in.pools = {general, flexible};

  // The node shapes existing nodes have.
  std::vector<cloudprovider::InstanceTypePtr> shapes;
  for (const char* name : {"m7k.xlarge", "m7k.2xlarge", "c7k.2xlarge", "r7k.xlarge", "m7k.4xlarge",
                           "c7k.4xlarge", "r7k.2xlarge"}) {
    const auto* t = catalog->Find(name);
    for (const auto& p : all) {
      if (p.get() == t) shapes.push_back(p);
    }
  }

  // Deployments: enough that every node holds distinct ones (hostname spread and anti-affinity
  // allow one replica per node).
  struct Deployment {
    std::string name;
    std::string cpu, mem;
    bool spread = false, anyway = false, anti = false;
  };
  const int ndeployments = std::max(60, nodes / 5);
  const bool tight = variant == Variant::kTight;
  const std::vector<std::string> cpus =
      tight ? std::vector<std::string>{"1", "1500m", "2"}
            : std::vector<std::string>{"100m", "200m", "250m", "300m", "500m", "750m", "1"};
  const std::vector<std::string> mems =
      tight ? std::vector<std::string>{"1Gi", "2Gi", "3Gi"}
            : std::vector<std::string>{"128Mi", "256Mi", "512Mi", "768Mi", "1Gi", "2Gi"};
  std::vector<Deployment> deployments;
  for (int d = 0; d < ndeployments; ++d) {
    Deployment dep;
    dep.name = absl::StrCat("app-", d);
    dep.cpu = cpus[r.Int(0, static_cast<int>(cpus.size()) - 1)];
    dep.mem = mems[r.Int(0, static_cast<int>(mems.size()) - 1)];
    dep.spread = variant == Variant::kSpread;
    dep.anyway = dep.spread && d % 2 == 1;
    dep.anti = variant == Variant::kAnti && d % 5 == 0;
    deployments.push_back(dep);
  }
  auto make_pod = [&](const Deployment& d, const std::string& name) {
    auto p = std::make_unique<Pod>();
    p->metadata.name = name;
    p->metadata.namespace_ = "default";
    p->metadata.uid = "uid-" + name;
    p->metadata.labels = {{"app", d.name}};
    apis::core::Container ct;
    ct.name = "app";
    ct.resources.requests = {{"cpu", Q(d.cpu)}, {"memory", Q(d.mem)}};
    p->spec.containers.push_back(std::move(ct));
    apis::core::LabelSelector self;
    self.match_labels = {{"app", d.name}};
    if (d.spread) {
      apis::core::TopologySpreadConstraint tsc;
      tsc.topology_key = std::string(v1::kLabelHostname);
      tsc.max_skew = 1;
      tsc.label_selector = self;
      if (d.anyway) {
        tsc.when_unsatisfiable = apis::core::UnsatisfiableConstraintAction::kScheduleAnyway;
      }
      p->spec.topology_spread_constraints.push_back(std::move(tsc));
    }
    if (d.anti) {
      apis::core::PodAffinityTerm term;
      term.topology_key = std::string(v1::kLabelHostname);
      term.label_selector = self;
      auto& a = p->spec.affinity.emplace();
      a.pod_anti_affinity.emplace().required.push_back(std::move(term));
    }
    return p;
  };

  // The DaemonSet.
  auto ds = std::make_unique<Pod>();
  ds->metadata.name = "node-agent";
  ds->metadata.namespace_ = "kube-system";
  apis::core::Container agent;
  agent.name = "agent";
  agent.resources.requests = {{"cpu", Q("100m")}, {"memory", Q("128Mi")}};
  ds->spec.containers.push_back(agent);
  in.daemon_sets.push_back({"kube-system/node-agent", ds.get()});
  c->pods.push_back(std::move(ds));

  const std::vector<std::string> zones = {"test-zone-a", "test-zone-b", "test-zone-c"};
  c->movable.resize(nodes);
  int serial = 0;
  for (int n = 0; n < nodes; ++n) {
    const std::string name = absl::StrCat("node-", n);
    // 30 % scale-in: on average 20 of ~28 pods left, unevenly (some nodes nearly empty).
    const int count = std::clamp(static_cast<int>(28 * (0.25 + 1.1 * r.Unit())), 3, 34);
    std::vector<int> picked;
    absl::flat_hash_set<int> seen;
    int64_t cpu = 100, mem = int64_t{128} << 20;  // the DaemonSet pod
    if (tight) {
      // Packed to the brim: up to 40 random Deployments, each taken when it still fits.
      const auto& a = shapes[5]->Allocatable();
      for (int tries = 0; tries < 40; ++tries) {
        const int d = r.Int(0, ndeployments - 1);
        const int64_t c = Q(deployments[d].cpu).MilliValue();
        const int64_t m = Q(deployments[d].mem).Value();
        if (seen.contains(d) || cpu + c > a.at("cpu").MilliValue() ||
            mem + m > a.at("memory").Value()) {
          continue;
        }
        seen.insert(d);
        picked.push_back(d);
        cpu += c;
        mem += m;
      }
    } else {
      while (static_cast<int>(picked.size()) < count) {
        const int d = r.Int(0, ndeployments - 1);
        if (seen.insert(d).second) picked.push_back(d);
      }
      for (int d : picked) {
        cpu += Q(deployments[d].cpu).MilliValue();
        mem += Q(deployments[d].mem).Value();
      }
    }
    // The node: the shape this load fills closest to a random target between 45 % and 95 %.
    const double target = 0.45 + 0.5 * r.Unit();
    cloudprovider::InstanceTypePtr best;
    double best_gap = 1e9;
    for (const auto& t : shapes) {
      const auto& a = t->Allocatable();
      const double fc = static_cast<double>(cpu) / static_cast<double>(a.at("cpu").MilliValue());
      const double fm = static_cast<double>(mem) / static_cast<double>(a.at("memory").Value());
      const double fill = std::max(fc, fm);
      if (fill > 0.97) continue;
      if (std::abs(fill - target) < best_gap) {
        best_gap = std::abs(fill - target);
        best = t;
      }
    }
    if (best == nullptr || tight) best = shapes[5];
    solver::ExistingNode node;
    node.name = name;
    const std::string zone = zones[n % zones.size()];
    const std::string pool = best->requirements().Find(v1::kLabelArch)->Has("amd64") && n % 4 != 0
                                 ? "general"
                                 : "flexible";
    node.labels = {{std::string(v1::kLabelArch), "amd64"},
                   {std::string(v1::kLabelOS), "linux"},
                   {std::string(v1::kLabelTopologyZone), zone},
                   {std::string(v1::kLabelHostname), name},
                   {std::string(v1::kLabelInstanceType), best->name()},
                   {std::string(v1::kCapacityTypeLabelKey), "on-demand"},
                   {std::string(v1::kNodePoolLabelKey), pool}};
    node.allocatable = best->Allocatable();
    node.node_pool = pool;
    in.nodes.push_back(std::move(node));
    // Its DaemonSet pod and Deployment pods.
    auto agent_pod = std::make_unique<Pod>(*c->pods.front());
    agent_pod->metadata.name = absl::StrCat("node-agent-", n);
    agent_pod->metadata.uid = absl::StrCat("uid-node-agent-", n);
    agent_pod->metadata.owner_references.push_back(
        {"apps/v1", "DaemonSet", "node-agent", "", {}, {}});
    agent_pod->spec.node_name = name;
    agent_pod->status.phase = apis::core::PodPhase::kRunning;
    in.bound_pods.push_back(agent_pod.get());
    c->pods.push_back(std::move(agent_pod));
    for (int d : picked) {
      auto p = make_pod(deployments[d], absl::StrCat(deployments[d].name, "-", serial++));
      p->spec.node_name = name;
      p->status.phase = apis::core::PodPhase::kRunning;
      in.bound_pods.push_back(p.get());
      c->movable[n].push_back(p.get());
      c->pods.push_back(std::move(p));
    }
  }
  return c;
}

// What a plan decides, for comparing Session's plan with Solve's.
std::string Summary(const solver::Plan& plan) {
  std::string out;
  for (const auto& c : plan.node_claims) {
    absl::StrAppend(&out, c.pool, "/", c.instance_type, "/", c.zone, "/", c.price, ":");
    for (const Pod* p : c.pods) absl::StrAppend(&out, p->metadata.name, ",");
    absl::StrAppend(&out, ";");
  }
  for (const auto& e : plan.existing) {
    absl::StrAppend(&out, e.node, ":");
    for (const Pod* p : e.pods) absl::StrAppend(&out, p->metadata.name, ",");
    absl::StrAppend(&out, ";");
  }
  for (const auto& u : plan.unschedulable) absl::StrAppend(&out, u.pod->metadata.name, "!");
  absl::StrAppend(&out, plan.total_price);
  return out;
}

// The reduced input of one candidate: node `n` gone, its Deployment pods pending.
Input Reduced(const Cluster& c, size_t n) {
  Input out = c.input;
  const std::string& gone = c.input.nodes[n].name;
  out.nodes.erase(out.nodes.begin() + static_cast<std::ptrdiff_t>(n));
  out.bound_pods.clear();
  for (const Pod* p : c.input.bound_pods) {
    if (p->spec.node_name != gone) out.bound_pods.push_back(p);
  }
  out.pods.insert(out.pods.end(), c.movable[n].begin(), c.movable[n].end());
  return out;
}

void Create(benchmark::State& state, Variant variant) {
  auto c = MakeCluster(static_cast<int>(state.range(0)), variant);
  if (c == nullptr) {
    state.SkipWithError("no catalog");
    return;
  }
  for (auto _ : state) {
    auto session = solver::Session::Create(c->input);
    if (!session.ok()) state.SkipWithError(std::string(session.status().message()).c_str());
    benchmark::DoNotOptimize(session);
  }
  state.counters["bound_pods"] = static_cast<double>(c->input.bound_pods.size());
}

void Simulate(benchmark::State& state, Variant variant) {
  const int nodes = static_cast<int>(state.range(0));
  auto c = MakeCluster(nodes, variant);
  if (c == nullptr) {
    state.SkipWithError("no catalog");
    return;
  }
  auto session = solver::Session::Create(c->input);
  if (!session.ok()) {
    state.SkipWithError(std::string(session.status().message()).c_str());
    return;
  }
  size_t n = 0;
  double claims = 0, unschedulable = 0;
  for (auto _ : state) {
    const size_t removed[] = {n};
    auto plan = (*session)->Simulate(removed, c->movable[n]);
    if (!plan.ok()) {
      state.SkipWithError(std::string(plan.status().message()).c_str());
      break;
    }
    claims += static_cast<double>(plan->node_claims.size());
    unschedulable += static_cast<double>(plan->unschedulable.size());
    n = (n + 1) % static_cast<size_t>(nodes);
  }
  state.counters["claims_per_candidate"] =
      benchmark::Counter(claims, benchmark::Counter::kAvgIterations);
  state.counters["unschedulable_per_candidate"] =
      benchmark::Counter(unschedulable, benchmark::Counter::kAvgIterations);
}

void SolveReduced(benchmark::State& state, Variant variant) {
  const int nodes = static_cast<int>(state.range(0));
  auto c = MakeCluster(nodes, variant);
  if (c == nullptr) {
    state.SkipWithError("no catalog");
    return;
  }
  // Candidates spread over the cluster: the same mix of nodes the scan sees.
  const size_t stride = std::max<size_t>(1, static_cast<size_t>(nodes) / 40);
  size_t n = 0;
  double claims = 0, mismatches = 0;
  auto session = solver::Session::Create(c->input);
  if (!session.ok()) {
    state.SkipWithError(std::string(session.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    state.PauseTiming();
    Input reduced = Reduced(*c, n);
    state.ResumeTiming();
    auto plan = solver::Solve(reduced);
    if (!plan.ok()) {
      state.SkipWithError(std::string(plan.status().message()).c_str());
      break;
    }
    claims += static_cast<double>(plan->node_claims.size());
    state.PauseTiming();
    const size_t removed[] = {n};
    auto simulated = (*session)->Simulate(removed, c->movable[n]);
    if (!simulated.ok() || Summary(*simulated) != Summary(*plan)) ++mismatches;
    state.ResumeTiming();
    n = (n + stride) % static_cast<size_t>(nodes);
  }
  state.counters["claims_per_candidate"] =
      benchmark::Counter(claims, benchmark::Counter::kAvgIterations);
  state.counters["mismatches"] = mismatches;
}

void Register() {
  for (Variant v : {Variant::kPlain, Variant::kSpread, Variant::kAnti, Variant::kTight}) {
    for (int n : {100, 500, 1000, 5000}) {
      benchmark::RegisterBenchmark(absl::StrCat("create/", Name(v), "/", n).c_str(),
                                   [v](benchmark::State& s) { Create(s, v); })
          ->Arg(n)
          ->Unit(benchmark::kMillisecond)
          ->Iterations(n >= 5000 ? 1 : 3);
      benchmark::RegisterBenchmark(absl::StrCat("simulate/", Name(v), "/", n).c_str(),
                                   [v](benchmark::State& s) { Simulate(s, v); })
          ->Arg(n)
          ->Unit(benchmark::kMicrosecond)
          ->Iterations(n);
      if (n <= 1000) {
        benchmark::RegisterBenchmark(absl::StrCat("solve/", Name(v), "/", n).c_str(),
                                     [v](benchmark::State& s) { SolveReduced(s, v); })
            ->Arg(n)
            ->Unit(benchmark::kMillisecond)
            ->Iterations(40);
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
