// The disruption methods (docs/disruption.md): emptiness, drift, multi-node and single-node
// consolidation, and the consolidation computation they share with validation.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/controllers/disruption/disruption.h"
#include "dovetail/controllers/disruption/internal.h"
#include "dovetail/controllers/launch/on_demand_base.h"
#include "dovetail/scenario/pod_filter.h"

namespace dovetail::controllers::disruption {

namespace v1 = apis::v1;
using cloudprovider::InstanceTypePtr;

std::string Command::Summary() const {
  std::vector<std::string> names;
  names.reserve(candidates.size());
  for (const Candidate& c : candidates) names.push_back(c.name);
  std::string out = absl::StrCat(std::string(Decision()), " ", candidates.size(),
                                 candidates.size() == 1 ? " node" : " nodes", " (",
                                 absl::StrJoin(names, ", "), ")");
  if (!replacements.empty()) {
    std::vector<std::string> shapes;
    for (const solver::NewNodeClaim& r : replacements) {
      shapes.push_back(absl::StrCat("(", r.instance_type, ", ", r.capacity_type, ")"));
    }
    absl::StrAppend(&out, " with ", replacements.size(), " ", absl::StrJoin(shapes, ", "));
  }
  absl::StrAppend(&out, ", saving $", absl::StrFormat("%.4f", savings_per_hour), "/h, moving ",
                  pods_moved, pods_moved == 1 ? " pod" : " pods");
  return out;
}

namespace internal {

std::optional<double> WorstLaunchPrice(const cloudprovider::InstanceType& type,
                                       const scheduling::Requirements& requirements) {
  const cloudprovider::Offerings offerings = type.offerings().Available().Compatible(requirements);
  if (offerings.empty()) return std::nullopt;
  std::string_view used;
  for (std::string_view ct :
       {v1::kCapacityTypeReserved, v1::kCapacityTypeSpot, v1::kCapacityTypeOnDemand}) {
    for (const cloudprovider::Offering& o : offerings) {
      if (o.capacity_type == ct) {
        used = ct;
        break;
      }
    }
    if (!used.empty()) break;
  }
  std::optional<double> worst;
  for (const cloudprovider::Offering& o : offerings) {
    if (!used.empty() && o.capacity_type != used) continue;
    if (!worst.has_value() || o.EffectivePrice() > *worst) worst = o.EffectivePrice();
  }
  return worst;
}

bool SatisfiesMinValues(const std::vector<InstanceTypePtr>& types,
                        const scheduling::Requirements& requirements) {
  for (const scheduling::Requirement& r : requirements) {
    if (!r.min_values().has_value()) continue;
    absl::flat_hash_set<std::string> values;
    for (const InstanceTypePtr& type : types) {
      const scheduling::Requirement* own = type->requirements().Find(r.key());
      if (own == nullptr || own->complement()) continue;
      for (const std::string& v : own->values()) {
        if (r.Has(v)) values.insert(v);
      }
    }
    if (static_cast<int64_t>(values.size()) < *r.min_values()) return false;
  }
  return true;
}

void SetReplacementTypes(solver::NewNodeClaim& replacement, std::vector<InstanceTypePtr> types) {
  // Cheapest first by the offering the claim would be priced with; types with none are dropped.
  std::vector<std::pair<double, InstanceTypePtr>> priced;
  for (InstanceTypePtr& type : types) {
    const cloudprovider::Offering* o = type->CheapestOffering(replacement.requirements);
    if (o != nullptr) priced.emplace_back(o->EffectivePrice(), std::move(type));
  }
  std::stable_sort(priced.begin(), priced.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return a.second->name() < b.second->name();
  });
  replacement.instance_types.clear();
  std::vector<std::string> names;
  for (auto& [price, type] : priced) {
    names.push_back(type->name());
    replacement.instance_types.push_back(std::move(type));
  }
  const std::string key(v1::kLabelInstanceType);
  std::optional<int32_t> min_values;
  if (const scheduling::Requirement* old = replacement.requirements.Find(key)) {
    min_values = old->min_values();
  }
  replacement.requirements.Remove(key);
  scheduling::Requirement in = scheduling::Requirement::In(key, names);
  in.set_min_values(min_values);
  replacement.requirements.Add(std::move(in));
  if (replacement.instance_types.empty()) return;
  const cloudprovider::Offering* o =
      replacement.instance_types.front()->CheapestOffering(replacement.requirements);
  replacement.instance_type = replacement.instance_types.front()->name();
  replacement.zone = o->zone;
  replacement.capacity_type = o->capacity_type;
  replacement.price = o->price;
  replacement.effective_price = o->EffectivePrice() + replacement.node_overhead;
}

namespace {

// The fewest cheapest types (in order) that keep minValues; all of them when none suffices.
size_t TypesNeededForMinValues(const std::vector<InstanceTypePtr>& types,
                               const scheduling::Requirements& requirements) {
  for (size_t n = 0; n <= types.size(); ++n) {
    std::vector<InstanceTypePtr> prefix(types.begin(), types.begin() + n);
    if (SatisfiesMinValues(prefix, requirements)) return n;
  }
  return types.size();
}

std::vector<InstanceTypePtr> CheaperThan(const std::vector<InstanceTypePtr>& types,
                                         const scheduling::Requirements& requirements,
                                         double limit) {
  std::vector<InstanceTypePtr> out;
  for (const InstanceTypePtr& type : types) {
    std::optional<double> worst = WorstLaunchPrice(*type, requirements);
    if (worst.has_value() && *worst < limit) out.push_back(type);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::optional<Command>> ComputeConsolidation(Method method,
                                                            std::span<const Candidate> candidates,
                                                            const Simulator& simulator,
                                                            const Options& options,
                                                            std::string* why) {
  ASSIGN_OR_RETURN(Simulator::Result result, simulator.Simulate(candidates));
  if (!result.unschedulable.empty()) {
    const auto& [pod, reason] = result.unschedulable.front();
    *why = absl::StrCat("not all pods would schedule, ", pod, " => ", reason);
    if (result.unschedulable.size() > 1) {
      absl::StrAppend(why, " (and ", result.unschedulable.size() - 1, " other pods)");
    }
    return std::nullopt;
  }
  Command command;
  command.method = method;
  command.candidates.assign(candidates.begin(), candidates.end());
  for (const solver::ExistingPlacement& placed : result.plan.existing) {
    command.destinations.push_back(placed.node);
  }
  double sources = 0;
  bool all_spot = true;
  for (const Candidate& c : candidates) {
    sources += c.price;
    command.pods_moved += static_cast<int>(c.reschedulable.size());
    all_spot = all_spot && c.capacity_type == v1::kCapacityTypeSpot;
  }
  if (result.plan.node_claims.empty()) {
    command.savings_per_hour = sources;
    return command;
  }
  if (result.plan.node_claims.size() > 1) {
    *why = absl::StrCat("Can't remove without creating ", result.plan.node_claims.size(),
                        " candidates");
    return std::nullopt;
  }
  solver::NewNodeClaim replacement = std::move(result.plan.node_claims.front());
  replacement.pods.clear();
  const std::string ct_key(v1::kCapacityTypeLabelKey);
  const scheduling::Requirement ct = replacement.requirements.Get(ct_key);
  std::vector<InstanceTypePtr> types;
  if (all_spot && ct.Has(v1::kCapacityTypeSpot)) {
    if (!options.spot_to_spot) {
      *why = "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node";
      return std::nullopt;
    }
    replacement.requirements.Add(
        scheduling::Requirement::In(ct_key, {std::string(v1::kCapacityTypeSpot)}));
    types = CheaperThan(replacement.instance_types, replacement.requirements, sources);
    if (types.empty()) {
      *why = "Can't replace spot node with a cheaper spot node";
      return std::nullopt;
    }
    if (candidates.size() == 1) {
      if (types.size() < kMinInstanceTypesForSpotToSpot) {
        *why = absl::StrCat("SpotToSpotConsolidation requires ", kMinInstanceTypesForSpotToSpot,
                            " cheaper instance type options than the current candidate to "
                            "consolidate, got ",
                            types.size());
        return std::nullopt;
      }
      SetReplacementTypes(replacement, std::move(types));
      types = replacement.instance_types;
      const size_t keep = std::max(kMinInstanceTypesForSpotToSpot,
                                   TypesNeededForMinValues(types, replacement.requirements));
      if (types.size() > keep) types.resize(keep);
    }
  } else {
    types = CheaperThan(replacement.instance_types, replacement.requirements, sources);
    if (types.empty()) {
      *why = "Can't replace with a cheaper node";
      return std::nullopt;
    }
    if (ct.Has(v1::kCapacityTypeSpot) && ct.Has(v1::kCapacityTypeOnDemand)) {
      replacement.requirements.Add(
          scheduling::Requirement::In(ct_key, {std::string(v1::kCapacityTypeSpot)}));
    }
  }
  SetReplacementTypes(replacement, std::move(types));
  if (replacement.instance_types.empty()) {
    *why = "Can't replace with a cheaper node";
    return std::nullopt;
  }
  if (!SatisfiesMinValues(replacement.instance_types, replacement.requirements)) {
    *why = "Can't replace with a cheaper node while keeping minValues";
    return std::nullopt;
  }
  command.savings_per_hour = sources - replacement.effective_price;
  command.replacements.push_back(std::move(replacement));
  return command;
}

}  // namespace internal

namespace {

using internal::ComputeConsolidation;

constexpr char kUnconsolidatable[] = "Unconsolidatable";
constexpr char kDisruptionBlocked[] = "DisruptionBlocked";

Explanation Explain(const Candidate& c, Method method, bool disrupted, std::string event_reason,
                    std::string message) {
  return Explanation{.node = c.name,
                     .node_claim = c.node_claim,
                     .node_pool = c.node_pool,
                     .method = method,
                     .disrupted = disrupted,
                     .event_reason = std::move(event_reason),
                     .message = std::move(message)};
}

std::string NoBudget(const Candidate& c, v1::DisruptionReason reason) {
  return absl::StrCat("NodePool \"", c.node_pool, "\" has no disruptions left for reason ",
                      reason == v1::DisruptionReason::kEmpty     ? "Empty"
                      : reason == v1::DisruptionReason::kDrifted ? "Drifted"
                                                                 : "Underutilized");
}

// Per Balanced NodePool: the cost and disruption cost of all its nodes.
struct PoolTotals {
  double cost = 0;
  double disruption = 0;
};

class Balanced {
 public:
  explicit Balanced(const ClusterView& view) {
    for (const auto& [name, pool] : view.node_pools) {
      if (internal::ConsolidationPolicyOf(pool) == v1::ConsolidationPolicy::kBalanced)
        totals_[name];
    }
    if (totals_.empty()) return;
    for (const state::StateNode& sn : view.snapshot.nodes) {
      if (!sn.Managed() || sn.node == nullptr || !sn.Active()) continue;
      auto t = totals_.find(sn.NodePool());
      if (t == totals_.end()) continue;
      const apis::core::StringMap labels = sn.Labels();
      auto label = [&](std::string_view key) {
        auto it = labels.find(key);
        return it == labels.end() ? std::string() : it->second;
      };
      const std::string type_name = label(v1::kLabelInstanceType);
      auto types = view.instance_types.find(t->first);
      auto pool = view.node_pools.find(t->first);
      if (types != view.instance_types.end() && pool != view.node_pools.end()) {
        for (const InstanceTypePtr& type : types->second) {
          if (type == nullptr || type->name() != type_name) continue;
          t->second.cost += internal::NodePrice(*type, label(v1::kLabelTopologyZone),
                                                label(v1::kCapacityTypeLabelKey), pool->second)
                                .value_or(0);
          break;
        }
      }
      double disruption = 1;
      auto pods = view.snapshot.pods_by_node.find(sn.Name());
      if (pods != view.snapshot.pods_by_node.end()) {
        for (const state::PodPtr& pod : pods->second) {
          if (scenario::IsReschedulable(*pod, view.now)) {
            disruption += std::max(0.0, internal::EvictionCost(*pod));
          }
        }
      }
      t->second.disruption += disruption;
    }
  }

  // One pool's verdict on a move: `scored` when the pool is Balanced.
  struct PoolScore {
    std::string pool;
    bool scored = false;
    double score = 0;
    bool approved = true;
    std::string why;  // when not approved
  };

  // The verdict of each pool of the candidates, by pool name. `replacement_price` is what the
  // move launches (0 for a delete).
  std::vector<PoolScore> Score(std::span<const Candidate> candidates,
                               double replacement_price) const {
    double sources = 0;
    absl::flat_hash_map<std::string, std::pair<double, double>> by_pool;  // cost, disruption
    for (const Candidate& c : candidates) {
      sources += c.price;
      auto& [cost, disruption] = by_pool[c.node_pool];
      cost += c.price;
      disruption += c.reschedule_disruption_cost;
    }
    const double savings = sources - replacement_price;
    constexpr double kK = 2;
    std::vector<PoolScore> out;
    for (const auto& [pool, totals] : by_pool) out.push_back({.pool = pool});
    std::sort(out.begin(), out.end(),
              [](const PoolScore& a, const PoolScore& b) { return a.pool < b.pool; });
    for (PoolScore& verdict : out) {
      auto t = totals_.find(verdict.pool);
      if (t == totals_.end()) continue;  // not Balanced
      const auto& [cost, disruption] = by_pool.at(verdict.pool);
      const double pool_savings = sources > 0 ? savings * cost / sources : 0;
      const double pool_cost = t->second.cost > 0 ? t->second.cost : cost;
      const double savings_fraction = pool_cost > 0 ? pool_savings / pool_cost : 0;
      const double disruption_fraction =
          t->second.disruption > 0 ? disruption / t->second.disruption : 0;
      double score = 0;
      if (pool_savings <= 0) {
        score = 0;
      } else if (disruption_fraction <= 0) {
        score = std::numeric_limits<double>::infinity();
      } else {
        score = savings_fraction / disruption_fraction;
      }
      verdict.scored = true;
      verdict.score = score;
      if (score < 1 / kK) {
        verdict.approved = false;
        verdict.why = absl::StrFormat(
            "NodePool \"%s\" (Balanced) rejects the move: score %.4f below %.2f (savings %.4f of "
            "the pool's cost, disruption %.4f of the pool's)",
            verdict.pool, score, 1 / kK, savings_fraction, disruption_fraction);
      }
    }
    return out;
  }

  // "" when every Balanced pool of the move approves it; else why not.
  std::string Rejects(std::span<const Candidate> candidates, double replacement_price) const {
    if (totals_.empty()) return "";
    for (const PoolScore& verdict : Score(candidates, replacement_price)) {
      if (!verdict.approved) return verdict.why;
    }
    return "";
  }

  // Records a scored move for karpenter_consolidation_moves_total / _score (upstream counts the
  // move each consolidation method settles on, approved or the last rejected).
  void Record(std::span<const Candidate> candidates, double replacement_price,
              const ClusterView& view, std::vector<ConsolidationMove>& out) const {
    const std::vector<PoolScore> verdicts = Score(candidates, replacement_price);
    bool approved = true;
    for (const PoolScore& v : verdicts) approved = approved && v.approved;
    for (const PoolScore& v : verdicts) {
      ConsolidationMove move{.node_pool = v.pool, .approved = approved};
      if (auto pool = view.node_pools.find(v.pool); pool != view.node_pools.end()) {
        move.policy =
            std::string(apis::core::EnumName(internal::ConsolidationPolicyOf(pool->second)));
      }
      if (v.scored) {
        move.score = v.score;
        move.score_approved = v.approved;
      }
      out.push_back(std::move(move));
    }
  }

 private:
  absl::flat_hash_map<std::string, PoolTotals> totals_;
};

// The Dovetail churn guard: the largest minimum savings among the candidates' pools.
std::string BelowMinSavings(const Command& command, const ClusterView& view,
                            const Options& options) {
  double min_savings = 0;
  for (const Candidate& c : command.candidates) {
    auto pool = view.node_pools.find(c.node_pool);
    if (pool == view.node_pools.end()) continue;
    min_savings = std::max(min_savings, internal::MinSavings(pool->second, options));
  }
  if (min_savings <= 0 || command.savings_per_hour >= min_savings) return "";
  return absl::StrFormat("savings $%.4f/h below the minimum $%.4f/h", command.savings_per_hour,
                         min_savings);
}

// Drops the replacement types that cost as much as the cheapest candidate of a type the
// replacement offers (keeping that node would disrupt less).
std::vector<InstanceTypePtr> FilterOutSameInstanceType(const solver::NewNodeClaim& replacement,
                                                       std::span<const Candidate> candidates) {
  absl::flat_hash_map<std::string, double> price_by_type;
  for (const Candidate& c : candidates) {
    auto [it, inserted] = price_by_type.try_emplace(c.instance_type, c.price);
    if (!inserted) it->second = std::min(it->second, c.price);
  }
  double max_price = std::numeric_limits<double>::max();
  for (const InstanceTypePtr& type : replacement.instance_types) {
    auto it = price_by_type.find(type->name());
    if (it != price_by_type.end()) max_price = std::min(max_price, it->second);
  }
  std::vector<InstanceTypePtr> out;
  for (const InstanceTypePtr& type : replacement.instance_types) {
    const cloudprovider::Offering* o = type->CheapestOffering(replacement.requirements);
    if (o != nullptr && o->EffectivePrice() < max_price) out.push_back(type);
  }
  return out;
}

// The on-demand base (launch/on_demand_base.h): a command must not lower the on-demand
// NodeClaims of a pool below the pool's base. The counts are the view's (NodeClaims neither
// deleting nor marked for deletion, in-flight ones included), taken before any command of the
// pass; each method returns at most one command per pass, and emptiness checks its candidates
// cumulatively. A replacement that would break the base is narrowed to on-demand (the same
// NarrowToOnDemand the provisioner uses) on the raw simulation, so that it is still cheaper than
// the candidates; a delete that would break it is refused. Invalid annotations are ignored here
// (the provisioner reports them).
class OnDemandBaseGuard {
 public:
  explicit OnDemandBaseGuard(const ClusterView& view) {
    for (const auto& [name, pool] : view.node_pools) {
      absl::StatusOr<std::optional<launch::OnDemandBase>> base = launch::OnDemandBaseOf(pool);
      if (base.ok() && base->has_value()) bases_[name] = **base;
    }
    if (!bases_.empty()) counts_ = launch::CountCapacityTypes(view.snapshot.nodes);
  }

  // "" when removing `candidates` and launching `replacements` leaves every pool whose on-demand
  // NodeClaims it lowers at or above its base; else `on-demand base of pool "X": N (...)`.
  std::string Violation(std::span<const Candidate> candidates,
                        std::span<const solver::NewNodeClaim> replacements) const {
    if (bases_.empty()) return "";
    absl::flat_hash_map<std::string, launch::CapacityCount> after;
    auto start = [&](const std::string& pool) -> launch::CapacityCount* {
      if (!bases_.contains(pool)) return nullptr;
      auto [it, inserted] = after.try_emplace(pool);
      if (inserted) {
        auto c = counts_.find(pool);
        if (c != counts_.end()) it->second = c->second;
      }
      return &it->second;
    };
    for (const Candidate& c : candidates) {
      if (launch::CapacityCount* n = start(c.node_pool)) {
        --n->total;
        if (c.capacity_type == v1::kCapacityTypeOnDemand) --n->on_demand;
      }
    }
    for (const solver::NewNodeClaim& r : replacements) {
      if (launch::CapacityCount* n = start(r.pool)) {
        ++n->total;
        if (launch::OnDemandOnly(r.requirements)) ++n->on_demand;
      }
    }
    std::vector<std::string> pools;
    for (const auto& [pool, n] : after) pools.push_back(pool);
    std::sort(pools.begin(), pools.end());
    for (const std::string& pool : pools) {
      const launch::CapacityCount& n = after.at(pool);
      auto before = counts_.find(pool);
      const int64_t on_demand_before = before == counts_.end() ? 0 : before->second.on_demand;
      if (n.on_demand >= on_demand_before) continue;  // does not lower it
      const launch::OnDemandBase& base = bases_.at(pool);
      const int64_t required = base.Required(n.total);
      if (n.on_demand >= required) continue;
      return absl::StrCat("on-demand base of pool \"", pool, "\": ", base.String(), " (",
                          n.on_demand, " of ", n.total, " NodeClaims would be on-demand, ",
                          required, " required)");
    }
    return "";
  }

  struct Outcome {
    std::string refused;  // why the command must not run; "" when it may
    std::string note;     // what was changed to keep the base
  };

  // Keeps a consolidation command within the bases: unchanged when it already is; else, for a
  // replace, the raw replacement of a fresh simulation narrowed to on-demand and cut to the types
  // cheaper than the candidates (savings recomputed); else refused.
  absl::StatusOr<Outcome> Keep(Command& command, const Simulator& simulator) const {
    std::string why = Violation(command.candidates, command.replacements);
    if (why.empty()) return Outcome{};
    if (command.replacements.empty()) return Outcome{.refused = why};
    ASSIGN_OR_RETURN(Simulator::Result result, simulator.Simulate(command.candidates));
    if (!result.unschedulable.empty() || result.plan.node_claims.size() != 1) {
      return Outcome{.refused = why};
    }
    solver::NewNodeClaim replacement = std::move(result.plan.node_claims.front());
    replacement.pods.clear();
    if (absl::Status narrowed = launch::NarrowToOnDemand(replacement); !narrowed.ok()) {
      return Outcome{.refused = absl::StrCat(
                         why, "; the replacement cannot be on-demand: ", narrowed.message())};
    }
    double sources = 0;
    for (const Candidate& c : command.candidates) sources += c.price;
    std::vector<InstanceTypePtr> types =
        internal::CheaperThan(replacement.instance_types, replacement.requirements, sources);
    internal::SetReplacementTypes(replacement, std::move(types));
    if (replacement.instance_types.empty()) {
      return Outcome{.refused = absl::StrCat(why, "; no on-demand replacement is cheaper")};
    }
    if (!internal::SatisfiesMinValues(replacement.instance_types, replacement.requirements)) {
      return Outcome{.refused =
                         absl::StrCat(why, "; no cheaper on-demand replacement keeps minValues")};
    }
    const std::span<const solver::NewNodeClaim> narrowed(&replacement, 1);
    if (std::string still = Violation(command.candidates, narrowed); !still.empty()) {
      return Outcome{.refused = still};  // e.g. the replacement belongs to another pool
    }
    command.replacements.clear();
    command.replacements.push_back(std::move(replacement));
    command.savings_per_hour = sources - command.replacements.front().effective_price;
    return Outcome{.note = absl::StrCat("replacement kept on-demand: ", why)};
  }

  // Drift is not refused, but its replacements (raw simulation NodeClaims) are narrowed like a
  // provisioning batch, the drifted candidate no longer counted.
  void NarrowDriftReplacements(Command& command) const {
    if (bases_.empty() || command.replacements.empty()) return;
    absl::flat_hash_map<std::string, launch::CapacityCount> counts = counts_;
    for (const Candidate& c : command.candidates) {
      auto it = counts.find(c.node_pool);
      if (it == counts.end()) continue;
      --it->second.total;
      if (c.capacity_type == v1::kCapacityTypeOnDemand) --it->second.on_demand;
    }
    launch::ApplyOnDemandBase(command.replacements, bases_, counts);
    double launched = 0;
    for (const solver::NewNodeClaim& r : command.replacements) launched += r.effective_price;
    double sources = 0;
    for (const Candidate& c : command.candidates) sources += c.price;
    command.savings_per_hour = sources - launched;
  }

 private:
  absl::flat_hash_map<std::string, launch::OnDemandBase> bases_;
  absl::flat_hash_map<std::string, launch::CapacityCount> counts_;
};

void ExplainCommand(const Command& command, std::vector<Explanation>& out,
                    std::string_view note = "") {
  std::string summary = command.Summary();
  if (!note.empty()) absl::StrAppend(&summary, " (", AsAbsl(note), ")");
  for (const Candidate& c : command.candidates) {
    out.push_back(Explain(c, command.method, true, "", summary));
  }
}

MethodResult Emptiness(const ClusterView& view, BudgetMapping& budgets, const Options& options) {
  MethodResult out;
  std::vector<Candidate> candidates =
      GetCandidates(view, Method::kEmptiness, options, &out.explanations);
  out.eligible = candidates.size();
  const OnDemandBaseGuard guard(view);
  Command command;
  command.method = Method::kEmptiness;
  for (Candidate& c : candidates) {
    if (budgets.Remaining(c.node_pool) <= 0) {
      out.explanations.push_back(
          Explain(c, Method::kEmptiness, false, "", NoBudget(c, v1::DisruptionReason::kEmpty)));
      continue;
    }
    command.candidates.push_back(c);
    std::string base = guard.Violation(command.candidates, {});
    command.candidates.pop_back();
    if (!base.empty()) {
      out.explanations.push_back(Explain(c, Method::kEmptiness, false, kUnconsolidatable, base));
      continue;
    }
    budgets.Take(c.node_pool);
    command.savings_per_hour += c.price;
    command.pods_moved += static_cast<int>(c.reschedulable.size());
    command.candidates.push_back(std::move(c));
  }
  if (!command.candidates.empty()) {
    ExplainCommand(command, out.explanations);
    out.commands.push_back(std::move(command));
  }
  return out;
}

absl::StatusOr<MethodResult> Drift(const ClusterView& view, const Simulator& simulator,
                                   BudgetMapping& budgets, const Options& options) {
  MethodResult out;
  std::vector<Candidate> candidates =
      GetCandidates(view, Method::kDrift, options, &out.explanations);
  out.eligible = candidates.size();
  const OnDemandBaseGuard guard(view);
  for (Candidate& c : candidates) {
    if (budgets.Remaining(c.node_pool) <= 0) {
      out.explanations.push_back(
          Explain(c, Method::kDrift, false, "", NoBudget(c, v1::DisruptionReason::kDrifted)));
      continue;
    }
    ASSIGN_OR_RETURN(Simulator::Result result, simulator.Simulate(std::span(&c, 1)));
    if (!result.unschedulable.empty()) {
      const auto& [pod, reason] = result.unschedulable.front();
      out.explanations.push_back(
          Explain(c, Method::kDrift, false, kDisruptionBlocked,
                  absl::StrCat("not all pods would schedule, ", pod, " => ", reason)));
      continue;
    }
    Command command;
    command.method = Method::kDrift;
    command.pods_moved = static_cast<int>(c.reschedulable.size());
    for (const solver::ExistingPlacement& placed : result.plan.existing) {
      command.destinations.push_back(placed.node);
    }
    double launched = 0;
    for (solver::NewNodeClaim& claim : result.plan.node_claims) {
      claim.pods.clear();
      launched += claim.effective_price;
      command.replacements.push_back(std::move(claim));
    }
    command.savings_per_hour = c.price - launched;
    budgets.Take(c.node_pool);
    command.candidates.push_back(std::move(c));
    guard.NarrowDriftReplacements(command);
    ExplainCommand(command, out.explanations);
    out.commands.push_back(std::move(command));
    break;
  }
  return out;
}

// Budget pre-filter of multi-node consolidation: a candidate is kept only while its pool has
// budget left; the others are explained.
std::vector<Candidate> WithinBudget(std::vector<Candidate> all, const BudgetMapping& budgets,
                                    std::vector<Explanation>& explanations) {
  absl::flat_hash_map<std::string, int64_t> left;
  std::vector<Candidate> candidates;
  for (Candidate& c : all) {
    auto [it, inserted] = left.try_emplace(c.node_pool, budgets.Remaining(c.node_pool));
    if (it->second <= 0) {
      explanations.push_back(Explain(c, Method::kMultiNodeConsolidation, false, "",
                                     NoBudget(c, v1::DisruptionReason::kUnderutilized)));
      continue;
    }
    --it->second;
    candidates.push_back(std::move(c));
  }
  return candidates;
}

// The search of multi-node consolidation over the first `max` of `candidates` (at least 2),
// until the method's time limit. It remembers what the chosen command's explanation and the
// Balanced record need.
class MultiNodeSearch {
 public:
  MultiNodeSearch(const ClusterView& view, const Simulator& simulator, const Options& options,
                  const Clock& clock, absl::Time start, const std::vector<Candidate>& candidates,
                  size_t max)
      : view_(view),
        simulator_(simulator),
        options_(options),
        clock_(clock),
        start_(start),
        candidates_(candidates),
        max_(max),
        balanced_(view),
        guard_(view) {}

  // The best command: with the global search, the largest savings over every prefix size, then
  // the best group grown greedily with each candidate outside it (in order) while that increases
  // the savings (the budget pre-filter admits any subset of the candidates); else the largest
  // consolidatable prefix by binary search.
  absl::StatusOr<std::optional<Command>> Run() {
    return options_.global_multi_node_search ? SearchGlobally() : SearchPrefixes();
  }
  bool timed_out() const { return timed_out_; }
  // What the on-demand base guard changed for `group`; "" when nothing.
  std::string BaseNote(std::span<const Candidate> group) const {
    auto note = base_notes_.find(GroupKey(group));
    return note == base_notes_.end() ? "" : note->second;
  }
  // Records the move in `moves`: `best`'s, else the last group a Balanced pool rejected.
  void RecordMove(const std::optional<Command>& best, std::vector<ConsolidationMove>& moves) const {
    if (best.has_value()) {
      const double launched =
          best->replacements.empty() ? 0 : best->replacements.front().effective_price;
      balanced_.Record(best->candidates, launched, view_, moves);
    } else if (!last_rejected_.empty()) {
      balanced_.Record(last_rejected_, last_rejected_price_, view_, moves);
    }
  }

 private:
  static std::string GroupKey(std::span<const Candidate> group) {
    std::string key;
    for (const Candidate& c : group) absl::StrAppend(&key, c.name, "\n");
    return key;
  }
  std::span<const Candidate> Prefix(size_t k) const {
    return std::span<const Candidate>(candidates_.data(), k);
  }
  bool Expired() const { return clock_.Now() - start_ > options_.multi_node_timeout; }

  // A valid command for the group (consolidatable, keeping the on-demand base, a replacement
  // type other than the group's, accepted by Balanced pools, above the minimum savings), or
  // nullopt.
  absl::StatusOr<std::optional<Command>> Attempt(std::span<const Candidate> group) {
    std::string why;
    ASSIGN_OR_RETURN(
        std::optional<Command> command,
        ComputeConsolidation(Method::kMultiNodeConsolidation, group, simulator_, options_, &why));
    if (!command.has_value()) return std::nullopt;
    ASSIGN_OR_RETURN(OnDemandBaseGuard::Outcome base, guard_.Keep(*command, simulator_));
    if (!base.refused.empty()) return std::nullopt;
    if (!base.note.empty()) base_notes_[GroupKey(group)] = base.note;
    double launched = 0;
    if (!command->replacements.empty()) {
      solver::NewNodeClaim& r = command->replacements.front();
      internal::SetReplacementTypes(r, FilterOutSameInstanceType(r, group));
      if (r.instance_types.empty()) return std::nullopt;
      launched = r.effective_price;
      double sources = 0;
      for (const Candidate& c : group) sources += c.price;
      command->savings_per_hour = sources - launched;
    }
    if (!balanced_.Rejects(group, launched).empty()) {
      last_rejected_.assign(group.begin(), group.end());
      last_rejected_price_ = launched;
      return std::nullopt;
    }
    if (!BelowMinSavings(*command, view_, options_).empty()) return std::nullopt;
    return command;
  }

  absl::StatusOr<std::optional<Command>> SearchGlobally() {
    std::optional<Command> best;
    for (size_t k = 2; k <= max_ && !(timed_out_ = Expired()); ++k) {
      ASSIGN_OR_RETURN(std::optional<Command> command, Attempt(Prefix(k)));
      if (command.has_value() &&
          (!best.has_value() || command->savings_per_hour >= best->savings_per_hour)) {
        best = std::move(command);
      }
    }
    if (!best.has_value()) return best;
    std::vector<Candidate> group = best->candidates;
    for (size_t i = 0; i < max_ && !timed_out_ && !(timed_out_ = Expired()); ++i) {
      const Candidate& c = candidates_[i];
      bool in_group = false;
      for (const Candidate& g : group) in_group = in_group || g.name == c.name;
      if (in_group) continue;
      group.push_back(c);
      ASSIGN_OR_RETURN(std::optional<Command> command, Attempt(group));
      if (command.has_value() && command->savings_per_hour > best->savings_per_hour) {
        best = std::move(command);
      } else {
        group.pop_back();
      }
    }
    return best;
  }

  absl::StatusOr<std::optional<Command>> SearchPrefixes() {
    std::optional<Command> best;
    size_t lo = 2, hi = max_;
    while (lo <= hi) {
      if (Expired()) {
        timed_out_ = true;
        break;
      }
      const size_t mid = (lo + hi) / 2;
      ASSIGN_OR_RETURN(std::optional<Command> command, Attempt(Prefix(mid)));
      if (command.has_value()) {
        best = std::move(command);
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return best;
  }

  const ClusterView& view_;
  const Simulator& simulator_;
  const Options& options_;
  const Clock& clock_;
  const absl::Time start_;
  const std::vector<Candidate>& candidates_;
  const size_t max_;
  const Balanced balanced_;
  const OnDemandBaseGuard guard_;
  bool timed_out_ = false;
  // What the guard changed, by group (candidate names), for the chosen command's explanation.
  absl::flat_hash_map<std::string, std::string> base_notes_;
  // The last group a Balanced pool rejected, and its replacement's price.
  std::vector<Candidate> last_rejected_;
  double last_rejected_price_ = 0;
};

// Why each candidate outside the chosen group (all of them without one) was not disrupted.
void ExplainNotChosen(const std::vector<Candidate>& candidates, const std::optional<Command>& best,
                      size_t max, bool timed_out, std::vector<Explanation>& explanations) {
  absl::flat_hash_set<std::string> chosen;
  if (best.has_value()) {
    for (const Candidate& c : best->candidates) chosen.insert(c.name);
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (chosen.contains(c.name)) continue;
    std::string message =
        i >= max ? absl::StrCat("beyond the multi-node batch of ", max)
                 : (best.has_value() ? "not in the largest consolidatable group of candidates"
                                     : "no group of candidates including it can be consolidated");
    if (timed_out) absl::StrAppend(&message, " (search timed out)");
    explanations.push_back(Explain(c, Method::kMultiNodeConsolidation, false, "", message));
  }
}

absl::StatusOr<MethodResult> MultiNode(const ClusterView& view, const Simulator& simulator,
                                       BudgetMapping& budgets, const Options& options,
                                       const Clock& clock) {
  const absl::Time start = clock.Now();
  MethodResult out;
  std::vector<Candidate> all =
      GetCandidates(view, Method::kMultiNodeConsolidation, options, &out.explanations);
  out.eligible = all.size();
  const std::vector<Candidate> candidates = WithinBudget(std::move(all), budgets, out.explanations);
  const size_t max = std::min(candidates.size(), options.max_multi_node_batch);
  if (max < 2) {
    for (const Candidate& c : candidates) {
      out.explanations.push_back(Explain(c, Method::kMultiNodeConsolidation, false, "",
                                         "fewer than 2 candidates for multi-node consolidation"));
    }
    return out;
  }
  MultiNodeSearch search(view, simulator, options, clock, start, candidates, max);
  ASSIGN_OR_RETURN(std::optional<Command> best, search.Run());
  if (best.has_value()) {
    for (const Candidate& c : best->candidates) budgets.Take(c.node_pool);
    ExplainCommand(*best, out.explanations, search.BaseNote(best->candidates));
  }
  ExplainNotChosen(candidates, best, max, search.timed_out(), out.explanations);
  search.RecordMove(best, out.moves);
  if (best.has_value()) out.commands.push_back(std::move(*best));
  out.timed_out = search.timed_out();
  return out;
}

absl::StatusOr<MethodResult> SingleNode(const ClusterView& view, const Simulator& simulator,
                                        BudgetMapping& budgets, const Options& options,
                                        const Clock& clock) {
  const absl::Time start = clock.Now();
  MethodResult out;
  std::vector<Candidate> sorted =
      GetCandidates(view, Method::kSingleNodeConsolidation, options, &out.explanations);
  out.eligible = sorted.size();
  // Round robin over NodePools, each pool's candidates in order.
  std::vector<std::string> pool_order;
  absl::flat_hash_map<std::string, std::vector<Candidate*>> by_pool;
  for (Candidate& c : sorted) {
    auto [it, inserted] = by_pool.try_emplace(c.node_pool);
    if (inserted) pool_order.push_back(c.node_pool);
    it->second.push_back(&c);
  }
  std::vector<Candidate*> candidates;
  for (size_t round = 0; candidates.size() < sorted.size(); ++round) {
    for (const std::string& pool : pool_order) {
      const auto& list = by_pool[pool];
      if (round < list.size()) candidates.push_back(list[round]);
    }
  }
  const Balanced balanced(view);
  const OnDemandBaseGuard guard(view);
  for (Candidate* c : candidates) {
    if (clock.Now() - start > options.single_node_timeout) {
      out.timed_out = true;
      break;
    }
    if (budgets.Remaining(c->node_pool) <= 0) {
      out.explanations.push_back(Explain(*c, Method::kSingleNodeConsolidation, false, "",
                                         NoBudget(*c, v1::DisruptionReason::kUnderutilized)));
      continue;
    }
    std::span<const Candidate> one(c, 1);
    if (std::string why = balanced.Rejects(one, 0); !why.empty()) {
      out.explanations.push_back(Explain(*c, Method::kSingleNodeConsolidation, false,
                                         kUnconsolidatable,
                                         absl::StrCat(why, " even if deleted outright")));
      continue;
    }
    std::string why;
    ASSIGN_OR_RETURN(
        std::optional<Command> command,
        ComputeConsolidation(Method::kSingleNodeConsolidation, one, simulator, options, &why));
    if (!command.has_value()) {
      out.explanations.push_back(
          Explain(*c, Method::kSingleNodeConsolidation, false, kUnconsolidatable, why));
      continue;
    }
    ASSIGN_OR_RETURN(OnDemandBaseGuard::Outcome base, guard.Keep(*command, simulator));
    if (!base.refused.empty()) {
      out.explanations.push_back(
          Explain(*c, Method::kSingleNodeConsolidation, false, kUnconsolidatable, base.refused));
      continue;
    }
    const double launched =
        command->replacements.empty() ? 0 : command->replacements.front().effective_price;
    balanced.Record(one, launched, view, out.moves);
    if (std::string rejected = balanced.Rejects(one, launched); !rejected.empty()) {
      out.explanations.push_back(
          Explain(*c, Method::kSingleNodeConsolidation, false, kUnconsolidatable, rejected));
      continue;
    }
    if (std::string below = BelowMinSavings(*command, view, options); !below.empty()) {
      out.explanations.push_back(Explain(*c, Method::kSingleNodeConsolidation, false, "",
                                         absl::StrCat(command->Summary(), " not taken: ", below)));
      continue;
    }
    budgets.Take(c->node_pool);
    ExplainCommand(*command, out.explanations, base.note);
    out.commands.push_back(std::move(*command));
    break;
  }
  return out;
}

}  // namespace

absl::StatusOr<MethodResult> ComputeCommands(Method method, const ClusterView& view,
                                             const Simulator& simulator, BudgetMapping& budgets,
                                             const Options& options, const Clock& clock) {
  switch (method) {
    case Method::kEmptiness:
      return Emptiness(view, budgets, options);
    case Method::kDrift:
      return Drift(view, simulator, budgets, options);
    case Method::kMultiNodeConsolidation:
      return MultiNode(view, simulator, budgets, options, clock);
    case Method::kSingleNodeConsolidation:
      return SingleNode(view, simulator, budgets, options, clock);
  }
  return absl::InvalidArgumentError("unknown disruption method");
}

}  // namespace dovetail::controllers::disruption
