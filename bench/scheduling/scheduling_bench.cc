// dovetail_scheduling_bench: how fast solver::Solve plans, and how close to the lower bound its
// plans cost (issue 3, item 6; results in docs/benchmarks.md, run by scripts/bench).
//
// Benchmarks (names are "<workload>/<pods>"):
//   diverse/N            upstream's diverse mix on the 400-type linear catalog, N = 1 ... 20000
//   preferences/4000     preferred node affinity / preferred anti-affinity / ScheduleAnyway spread
//   anti_affinity/N      hostname self anti-affinity: one node per pod (N = 1000, 5000, 20000)
//   aws_mix/10000        unconstrained pods on the real AWS catalog (us-east-1, every type,
//                        on-demand and modelled spot); aws_mix_on_demand/10000 the same restricted
//                        to on-demand
//   kwok_mix/10000       the same pods on the kwok provider's synthetic catalog (non-linear prices)
// The timed loop calls Solve with the lower bound off (the bound is an LP solved after packing);
// once timing is done, one more Solve with the bound on supplies the cost counters and
// bound_solve_ms (that Solve's CPU time, packing included; minus the timed CPU time it is the
// LP's cost). Every plan is re-checked by CheckPlan; a plan that fails the check fails the
// benchmark.
//
// Times: Google Benchmark's CPU time (this thread) is the figure to read; the machine is shared, so
// real time includes waiting for the neighbours.
// Counters (Google Benchmark JSON): pods, pods_per_s and s_per_pod (rates over CPU time),
// node_claims, unschedulable, cost_per_hour, lower_bound, cost_over_bound, bound_solve_ms, and for
// the unconstrained mixes single_type_cost and lp_guided_cost (reference_plans.h: achievable
// naive plans) and reference_lp_bound (the reference packer's own LP, a cross-check of the bound).
// The label names the instance types the plan spends most on.
//
// Flags besides Google Benchmark's: --bound=false skips the extra Solve with the bound (for
// profiling the packing alone); --improve=false turns off the solver's improvement pass
// (Options::improve) to measure what it costs and buys.
//
// The aws_* benchmarks use the AWS catalog compiled into Dovetail (data/aws/).
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/scheduling/plan_check.h"
#include "bench/scheduling/reference_plans.h"
#include "bench/scheduling/workloads.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"
#include "dovetail/solver/solver.h"

namespace dovetail::bench {
namespace {

namespace v1 = apis::v1;

bool g_bound = true;
bool g_improve = true;

struct Scenario {
  PodSet pods;
  solver::Input input;  // input.pods point into `pods`
  std::vector<std::string> zones;
  absl::Status setup_error;
  // Unconstrained scenarios: also price the reference plans (reference_plans.h) over these types.
  std::vector<cloudprovider::InstanceTypePtr> reference_types;
};

using ScenarioFactory = std::function<std::unique_ptr<Scenario>()>;

std::vector<std::string> LinearZones() {
  return std::vector<std::string>(std::begin(kLinearZones), std::end(kLinearZones));
}

std::unique_ptr<Scenario> LinearScenario(PodSet pods) {
  auto s = std::make_unique<Scenario>();
  s->pods = std::move(pods);
  s->input.pods = s->pods.Pointers();
  s->input.pools.push_back(UnconstrainedPool("default", LinearCatalog()));
  s->zones = LinearZones();
  return s;
}

std::unique_ptr<Scenario> KwokScenario(int n) {
  auto s = std::make_unique<Scenario>();
  auto catalog = cloudprovider::kwok::SyntheticCatalog();
  if (!catalog.ok()) {
    s->setup_error = catalog.status();
    return s;
  }
  s->pods = MixedPods(n);
  s->input.pods = s->pods.Pointers();
  s->input.pools.push_back(UnconstrainedPool("default", catalog->instance_types()));
  s->zones = {"test-zone-a", "test-zone-b", "test-zone-c"};
  s->reference_types = catalog->instance_types();
  return s;
}

std::unique_ptr<Scenario> AwsScenario(int n, bool on_demand_only) {
  auto s = std::make_unique<Scenario>();
  auto catalog = AwsCatalog();
  if (!catalog.ok()) {
    s->setup_error = catalog.status();
    return s;
  }
  s->pods = MixedPods(n);
  s->input.pods = s->pods.Pointers();
  solver::PoolTemplate pool = UnconstrainedPool("default", catalog->instance_types());
  if (on_demand_only) {
    pool.requirements.Add(scheduling::Requirement::In(std::string(v1::kCapacityTypeLabelKey),
                                                      {v1::kCapacityTypeOnDemand}));
    // The reference plan sees the same on-demand-only offerings.
    for (const auto& t : catalog->instance_types()) {
      std::vector<cloudprovider::Offering> od;
      for (const auto& o : t->offerings()) {
        if (o.capacity_type == v1::kCapacityTypeOnDemand) od.push_back(o);
      }
      s->reference_types.push_back(std::make_shared<cloudprovider::InstanceType>(
          t->name(), t->requirements(), cloudprovider::Offerings(std::move(od)), t->capacity(),
          t->overhead()));
    }
  } else {
    s->reference_types = catalog->instance_types();
  }
  s->input.pools.push_back(std::move(pool));
  s->zones = {"us-east-1a", "us-east-1b", "us-east-1c"};
  return s;
}

// Builds the scenario on first use (outside the timed region) and keeps it for every run of the
// benchmark.
const Scenario& Get(std::unique_ptr<Scenario>& cache, const ScenarioFactory& make) {
  if (cache == nullptr) cache = make();
  return *cache;
}

// CPU time of this thread: the machine is shared, so wall time measures the neighbours too.
double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// The instance types the plan spends most on, e.g. "12x spot c8i.96xlarge (58% of cost), ...", for
// the label: what kind of nodes the packing chose.
std::string TypeMix(const solver::Plan& plan) {
  std::map<std::string, std::pair<double, int>> spend;
  for (const auto& c : plan.node_claims) {
    auto& [money, count] = spend[c.capacity_type + " " + c.instance_type];
    money += c.price;
    ++count;
  }
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [name, v] : spend) {
    ranked.emplace_back(v.first, absl::StrCat(v.second, "x ", name));
  }
  std::sort(ranked.rbegin(), ranked.rend());
  std::string out;
  for (size_t i = 0; i < ranked.size() && i < 3; ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ", ", ranked[i].second, " (",
                    static_cast<int>(100 * ranked[i].first / std::max(plan.total_price, 1e-12)),
                    "% of cost)");
  }
  if (ranked.size() > 3) absl::StrAppend(&out, ", +", ranked.size() - 3, " more");
  return out;
}

void RunSolve(benchmark::State& state, const Scenario& s) {
  if (!s.setup_error.ok()) {
    state.SkipWithError(std::string(s.setup_error.message()).c_str());
    return;
  }
  solver::Input timed = s.input;
  timed.options.lower_bound = false;
  timed.options.improve = g_improve;
  absl::StatusOr<solver::Plan> plan;
  for (auto _ : state) {
    plan = solver::Solve(timed);
    benchmark::DoNotOptimize(plan);
  }
  if (!plan.ok()) {
    state.SkipWithError(std::string(plan.status().message()).c_str());
    return;
  }
  if (absl::Status check = CheckPlan(s.input.pods, *plan, s.zones); !check.ok()) {
    state.SkipWithError(absl::StrCat("invalid plan: ", check.message()).c_str());
    return;
  }
  const double n = static_cast<double>(s.input.pods.size());
  state.counters["pods"] = n;
  state.counters["pods_per_s"] =
      benchmark::Counter(n, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["s_per_pod"] = benchmark::Counter(
      n, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["node_claims"] = static_cast<double>(plan->node_claims.size());
  state.counters["unschedulable"] = static_cast<double>(plan->unschedulable.size());
  state.counters["cost_per_hour"] = plan->total_price;

  std::string label = TypeMix(*plan);
  if (!s.reference_types.empty()) {
    if (auto ref = BestSingleTypePlan(s.input.pods, s.reference_types); ref.has_value()) {
      state.counters["single_type_cost"] = ref->cost;
      absl::StrAppend(&label, "; single-type reference: ", ref->nodes, "x ", ref->capacity_type,
                      " ", ref->instance_type, " = ", absl::StrFormat("%.2f", ref->cost), " $/h");
    }
    if (auto ref = LpGuidedPlan(s.input.pods, s.reference_types); ref.ok()) {
      state.counters["lp_guided_cost"] = ref->cost;
      state.counters["reference_lp_bound"] = ref->lp_bound;
      absl::StrAppend(&label, "; LP-guided reference: ", ref->nodes, " nodes in ", ref->rounds,
                      " LP rounds (", ref->leftover_pods,
                      " pods left to the single-type packer) = ",
                      absl::StrFormat("%.2f", ref->cost), " $/h; the LP buys ", ref->lp_mix);
    } else {
      absl::StrAppend(&label, "; LP-guided reference failed: ", ref.status().message());
    }
  }
  state.SetLabel(label);

  if (!g_bound) return;
  solver::Input bounded = s.input;
  bounded.options.lower_bound = true;
  bounded.options.improve = g_improve;
  const double start = ThreadCpuMs();
  absl::StatusOr<solver::Plan> with_bound = solver::Solve(bounded);
  state.counters["bound_solve_ms"] = ThreadCpuMs() - start;
  if (!with_bound.ok()) {
    state.SetLabel(absl::StrCat(label, "; bound: ", with_bound.status().message()));
    return;
  }
  if (!with_bound->lower_bound) {
    state.SetLabel(absl::StrCat(label, "; no bound: ", with_bound->lower_bound_error));
    return;
  }
  state.counters["lower_bound"] = *with_bound->lower_bound;
  if (*with_bound->lower_bound > 0) {
    state.counters["cost_over_bound"] = with_bound->total_price / *with_bound->lower_bound;
  }
}

void Register(const std::string& name, ScenarioFactory make) {
  auto cache = std::make_shared<std::unique_ptr<Scenario>>();
  benchmark::RegisterBenchmark(name.c_str(), [cache, make](benchmark::State& state) {
    RunSolve(state, Get(*cache, make));
  })->Unit(benchmark::kMillisecond);
}

void RegisterAll() {
  for (int n : {1, 50, 100, 500, 1000, 2000, 5000, 10000, 20000}) {
    Register(absl::StrCat("diverse/", n), [n] { return LinearScenario(DiversePods(n)); });
  }
  Register("preferences/4000", [] { return LinearScenario(PreferencePods(4000)); });
  for (int n : {1000, 5000, 20000}) {
    Register(absl::StrCat("anti_affinity/", n),
             [n] { return LinearScenario(AntiAffinityPods(n)); });
  }
  Register("aws_mix/10000", [] { return AwsScenario(10000, false); });
  Register("aws_mix_on_demand/10000", [] { return AwsScenario(10000, true); });
  Register("kwok_mix/10000", [] { return KwokScenario(10000); });
}

}  // namespace
}  // namespace dovetail::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--bound=false") {
      dovetail::bench::g_bound = false;
    } else if (arg == "--bound=true" || arg == "--bound") {
      dovetail::bench::g_bound = true;
    } else if (arg == "--improve=false") {
      dovetail::bench::g_improve = false;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  dovetail::bench::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
