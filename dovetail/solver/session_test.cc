// Property test of solver::Session: over seeded random clusters (existing nodes of several pools
// with bound pods, zone and hostname spread, hostname and zone anti-affinity, pod affinity,
// tainted pools, node selectors, pending pods), every question Simulate(removed, moved) must give
// the plan Solve gives on the reduced input (removed nodes and their bound pods erased, moved pods
// appended to the pending ones), whatever order the questions are asked in. DOVETAIL_SESSION_SEEDS
// sets the number of clusters (default 300).
#include "dovetail/solver/session.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dovetail/solver/solver.h"
#include "dovetail/solver/solver_test_builders.h"
#include "dovetail/solver/solver_test_rng.h"
#include "gtest/gtest.h"

namespace dovetail::solver {
namespace {

// A Deployment: its pods' shape and constraints.
struct Workload {
  std::string name;
  const char* cpu;
  const char* mem;
  bool zone_spread = false;
  bool zone_spread_anyway = false;
  bool host_spread = false;
  bool host_anti = false;
  bool zone_anti = false;
  bool preferred_host_anti = false;
  bool preferred_zone_anti = false;
  std::string affinity_to;  // required zone affinity to app=<affinity_to>
  std::string anti_to;      // required zone anti-affinity to app=<anti_to>
  bool tolerate = false;    // tolerates the dedicated pool's taint
  std::string team;         // node selector team=<team>
};

std::unique_ptr<Pod> WorkloadPod(const Workload& w, const std::string& name) {
  auto p = MakePod(name, w.cpu, w.mem, {{"app", w.name}});
  const StringMap self = {{"app", w.name}};
  if (w.zone_spread) {
    auto& c = AddSpread(*p, kZone, 1, self);
    if (w.zone_spread_anyway) {
      c.when_unsatisfiable = apis::core::UnsatisfiableConstraintAction::kScheduleAnyway;
    }
  }
  if (w.host_spread) AddSpread(*p, kHost, 1, self);
  if (w.host_anti) AddAntiAffinity(*p, kHost, self);
  if (w.zone_anti) AddAntiAffinity(*p, kZone, self);
  if (w.preferred_host_anti) {
    auto& a = p->spec.affinity ? *p->spec.affinity : p->spec.affinity.emplace();
    auto& pa = a.pod_anti_affinity ? *a.pod_anti_affinity : a.pod_anti_affinity.emplace();
    pa.preferred.push_back({50, AffinityTerm(kHost, self)});
  }
  if (w.preferred_zone_anti) {
    auto& a = p->spec.affinity ? *p->spec.affinity : p->spec.affinity.emplace();
    auto& pa = a.pod_anti_affinity ? *a.pod_anti_affinity : a.pod_anti_affinity.emplace();
    pa.preferred.push_back({20, AffinityTerm(kZone, self)});
  }
  if (!w.anti_to.empty()) AddAntiAffinity(*p, kZone, {{"app", w.anti_to}});
  if (!w.affinity_to.empty()) AddAffinity(*p, kZone, {{"app", w.affinity_to}});
  if (w.tolerate) Tolerate(*p, "dedicated");
  if (!w.team.empty()) p->spec.node_selector["team"] = w.team;
  return p;
}

struct Cluster {
  Scene scene;
  std::vector<Workload> workloads;
  // Bound pods per node index.
  std::vector<std::vector<const Pod*>> bound;
};

std::unique_ptr<Cluster> Generate(uint64_t seed) {
  Rng r(seed);
  auto c = std::make_unique<Cluster>();
  Input& in = c->scene.input;
  in.options.improve = r.Chance(0.15);
  in.options.lower_bound = false;
  in.options.respect_preferences = !r.Chance(0.2);
  const std::vector<std::string> zones = {"zone-a", "zone-b", "zone-c"};

  auto general = Pool("general", SmallCatalog());
  auto team = Pool("team", {Type("c.large", 8, 8, 0.30), Type("m.xlarge", 16, 64, 0.90)}, 10);
  PoolLabel(team, "team", "blue");
  auto dedicated = Pool("dedicated", {Type("small", 2, 4, 0.10), Type("large", 8, 16, 0.40)}, 50);
  dedicated.taints.push_back({"dedicated", "true", apis::core::TaintEffect::kNoSchedule});
  in.pools = {general, team};
  if (r.Chance(0.5)) in.pools.push_back(dedicated);
  if (r.Chance(0.2)) in.pools[0].remaining_limits = ResourceList{{"cpu", Q("64")}};

  const char* cpus[] = {"100m", "250m", "500m", "1", "2"};
  const char* mems[] = {"128Mi", "512Mi", "1Gi", "2Gi"};
  const int nworkloads = r.Int(2, 7);
  for (int i = 0; i < nworkloads; ++i) {
    Workload w;
    w.name = absl::StrCat("w", i);
    w.cpu = cpus[r.Int(0, 4)];
    w.mem = mems[r.Int(0, 3)];
    w.zone_spread = r.Chance(0.3);
    w.zone_spread_anyway = w.zone_spread && r.Chance(0.3);
    w.host_spread = r.Chance(0.2);
    w.host_anti = r.Chance(0.2);
    w.zone_anti = r.Chance(0.05);
    w.preferred_host_anti = r.Chance(0.1);
    w.preferred_zone_anti = r.Chance(0.1);
    if (i > 0 && r.Chance(0.1)) w.affinity_to = absl::StrCat("w", r.Int(0, i - 1));
    if (i > 0 && r.Chance(0.15)) w.anti_to = absl::StrCat("w", r.Int(0, i - 1));
    w.tolerate = r.Chance(0.3);
    if (r.Chance(0.1)) w.team = "blue";
    c->workloads.push_back(w);
  }

  const int nnodes = r.Int(1, 14);
  c->bound.resize(nnodes);
  int serial = 0;
  for (int n = 0; n < nnodes; ++n) {
    const std::string name = absl::StrCat("node-", n);
    const bool teamed = r.Chance(0.25);
    const int pool = teamed ? 1 : (in.pools.size() > 2 && r.Chance(0.2) ? 2 : 0);
    ExistingNode node = Node(name, zones[r.Int(0, 2)], r.Chance(0.5) ? "4" : "8",
                             r.Chance(0.5) ? "8Gi" : "16Gi", in.pools[pool].name);
    if (teamed) node.labels["team"] = "blue";
    if (pool == 2) node.taints = in.pools[2].taints;
    in.nodes.push_back(std::move(node));
    const int npods = r.Int(0, 6);
    for (int k = 0; k < npods; ++k) {
      const Workload& w = c->workloads[r.Int(0, nworkloads - 1)];
      Pod* p = c->scene.AddBound(WorkloadPod(w, absl::StrCat(w.name, "-b", serial++)), name);
      c->bound[n].push_back(p);
    }
  }
  const int npending = r.Int(0, 4);
  for (int k = 0; k < npending; ++k) {
    const Workload& w = c->workloads[r.Int(0, nworkloads - 1)];
    c->scene.AddPod(WorkloadPod(w, absl::StrCat(w.name, "-p", serial++)));
  }
  return c;
}

// Everything a plan decides, as text, so that a mismatch prints what differs.
std::string Describe(const absl::StatusOr<Plan>& plan) {
  if (!plan.ok()) return plan.status().ToString();
  std::string out;
  auto names = [](const std::vector<const Pod*>& pods) {
    std::vector<std::string> v;
    v.reserve(pods.size());
    for (const Pod* p : pods) v.push_back(p->metadata.name);
    return absl::StrJoin(v, ",");
  };
  for (const auto& c : plan->node_claims) {
    std::vector<std::string> types;
    for (const auto& t : c.instance_types) types.push_back(t->name());
    absl::StrAppend(&out, "claim ", c.pool, " ", c.hostname, " ", c.instance_type, " ", c.zone, " ",
                    c.capacity_type, " ", c.price, " [", absl::StrJoin(types, ","),
                    "] reqs=", c.requirements.String(), " pods=", names(c.pods), "\n");
  }
  for (const auto& e : plan->existing) {
    absl::StrAppend(&out, "existing ", e.node, " pods=", names(e.pods), "\n");
  }
  for (const auto& u : plan->unschedulable) {
    absl::StrAppend(&out, "unschedulable ", u.pod->metadata.name, ": ", u.reason, "\n");
  }
  absl::StrAppend(&out, "total ", plan->total_price, "\n");
  return out;
}

struct Question {
  std::vector<size_t> removed;
  std::vector<const Pod*> moved;
};

// The reduced input the contract defines, built independently of the session.
Input Reduced(const Input& base, const Question& q) {
  Input out = base;
  absl::flat_hash_set<std::string> gone;
  for (size_t i : q.removed) gone.insert(base.nodes[i].name);
  out.nodes.clear();
  for (const auto& n : base.nodes) {
    if (!gone.contains(n.name)) out.nodes.push_back(n);
  }
  out.bound_pods.clear();
  for (const Pod* p : base.bound_pods) {
    if (!gone.contains(p->spec.node_name)) out.bound_pods.push_back(p);
  }
  out.pods.insert(out.pods.end(), q.moved.begin(), q.moved.end());
  return out;
}

std::vector<Question> Questions(Cluster& c, Rng& r) {
  std::vector<Question> out;
  const size_t n = c.scene.input.nodes.size();
  // Every single node (a full single-node scan), then random sets.
  for (size_t i = 0; i < n; ++i) {
    Question q;
    q.removed = {i};
    q.moved.assign(c.bound[i].begin(), c.bound[i].end());
    out.push_back(std::move(q));
  }
  for (int k = 0; k < 6; ++k) {
    Question q;
    for (size_t i = 0; i < n; ++i) {
      if (r.Chance(0.3)) q.removed.push_back(i);
    }
    for (size_t i : q.removed) {
      for (const Pod* p : c.bound[i]) {
        // Mostly the bound pods themselves; sometimes an equal pod (a fresh replica), sometimes
        // dropped (a pod that would not be rescheduled).
        if (r.Chance(0.15)) continue;
        if (r.Chance(0.2)) {
          auto copy = std::make_unique<Pod>(*p);
          copy->metadata.name += "-copy";
          copy->metadata.uid += "-copy";
          copy->spec.node_name.clear();
          q.moved.push_back(c.scene.AddPod(std::move(copy)));
          c.scene.input.pods.pop_back();  // owned by the scene, not pending
        } else {
          q.moved.push_back(p);
        }
      }
    }
    out.push_back(std::move(q));
  }
  return out;
}

TEST(SessionTest, SimulateGivesTheSolvePlanOfTheReducedInputInAnyOrder) {
  // DOVETAIL_SESSION_SEEDS explores more clusters (default 300).
  const char* env = std::getenv("DOVETAIL_SESSION_SEEDS");
  const int seeds = env != nullptr ? std::atoi(env) : 300;
  int compared = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    auto cluster = Generate(seed);
    Rng r(static_cast<uint64_t>(seed) * 7919);
    std::vector<Question> questions = Questions(*cluster, r);
    const Input& base = cluster->scene.input;
    std::vector<std::string> expected;
    expected.reserve(questions.size());
    for (const auto& q : questions) expected.push_back(Describe(Solve(Reduced(base, q))));

    auto session = Session::Create(base);
    ASSERT_TRUE(session.ok()) << session.status();
    std::vector<size_t> order(questions.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (int pass = 0; pass < 3; ++pass) {
      if (pass == 1) std::reverse(order.begin(), order.end());
      if (pass == 2) {
        for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[r.Next() % i]);
      }
      for (size_t qi : order) {
        const Question& q = questions[qi];
        ASSERT_EQ(Describe((*session)->Simulate(q.removed, q.moved)), expected[qi])
            << "question " << qi << " (pass " << pass << ") removing "
            << absl::StrJoin(q.removed, ",");
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 1000);
}

// The `general` pool (SmallCatalog()) and its `nodes`, planned without the improvement pass or the
// lower bound.
Scene GeneralPoolScene(std::vector<ExistingNode> nodes) {
  Scene s;
  s.input.options.improve = false;
  s.input.options.lower_bound = false;
  s.input.pools = {Pool("general", SmallCatalog())};
  s.input.nodes = std::move(nodes);
  return s;
}

TEST(SessionTest, RejectsAnOutOfRangeNodeAndANullPod) {
  Scene s;
  s.input.pools = {Pool("general", SmallCatalog())};
  s.input.nodes = {Node("n1", "zone-a", "4", "8Gi", "general")};
  auto session = Session::Create(s.input);
  ASSERT_TRUE(session.ok());
  const size_t out_of_range[] = {1};
  EXPECT_EQ((*session)->Simulate(out_of_range, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  const Pod* null_pod[] = {nullptr};
  EXPECT_EQ((*session)->Simulate({}, null_pod).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SessionTest, RemovedNodeIsNotADestinationAndItsPodsLeaveTheTopologyCounts) {
  Scene s = GeneralPoolScene(
      {Node("n1", "zone-a", "4", "8Gi", "general"), Node("n2", "zone-b", "4", "8Gi", "general")});
  Workload w{"web", "500m", "512Mi"};
  w.host_anti = true;
  const Pod* on_n1 = s.AddBound(WorkloadPod(w, "web-1"), "n1");
  s.AddBound(WorkloadPod(w, "web-2"), "n2");
  auto session = Session::Create(s.input);
  ASSERT_TRUE(session.ok());
  const size_t remove_n1[] = {0};
  const Pod* moved[] = {on_n1};
  auto plan = (*session)->Simulate(remove_n1, moved);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // n2 holds a replica (anti-affinity), n1 is gone: the pod needs a new NodeClaim.
  EXPECT_TRUE(plan->existing.empty());
  ASSERT_EQ(plan->node_claims.size(), 1u);
  EXPECT_EQ(plan->node_claims[0].pods, std::vector<const Pod*>{on_n1});
}

TEST(SessionTest, AntiAffinityOfPodsThatAreGoneNoLongerPinsNewNodeClaims) {
  Scene s = GeneralPoolScene(
      {Node("n1", "zone-a", "4", "8Gi", "general"), Node("n2", "zone-b", "1", "1Gi", "general")});
  // A guard on n1 keeps `web` out of its zone; a spread pod on n2 keeps the `app` key read.
  Workload guard{"guard", "100m", "128Mi"};
  guard.anti_to = "web";
  s.AddBound(WorkloadPod(guard, "guard-1"), "n1");
  Workload other{"other", "100m", "128Mi"};
  other.host_spread = true;
  s.AddBound(WorkloadPod(other, "other-1"), "n2");
  Workload web{"web", "2", "2Gi"};
  s.AddPod(WorkloadPod(web, "web-1"));
  auto session = Session::Create(s.input);
  ASSERT_TRUE(session.ok());
  const size_t remove_n1[] = {0};
  Question q;
  q.removed = {0};
  const std::string expected = Describe(Solve(Reduced(s.input, q)));
  auto plan = (*session)->Simulate(remove_n1, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(Describe(plan), expected);
  ASSERT_EQ(plan->node_claims.size(), 1u);
  EXPECT_EQ(plan->node_claims[0].requirements.Find(std::string(kZone)), nullptr);
}

}  // namespace
}  // namespace dovetail::solver
