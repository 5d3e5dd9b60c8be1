// Candidate filtering and ordering (docs/disruption.md, "Which nodes are candidates").
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/duration.h"
#include "dovetail/controllers/disruption/disruption.h"
#include "dovetail/controllers/disruption/internal.h"
#include "dovetail/controllers/nodeclaim/conditions.h"
#include "dovetail/scenario/pod_filter.h"
#include "dovetail/scenario/pool_template.h"
#include "dovetail/scheduling/label_selector.h"
#include "dovetail/state/pod_predicates.h"

namespace dovetail::controllers::disruption {

namespace core = apis::core;
namespace v1 = apis::v1;

std::string_view MethodName(Method method) {
  switch (method) {
    case Method::kEmptiness:
      return "emptiness";
    case Method::kDrift:
      return "drift";
    case Method::kMultiNodeConsolidation:
      return "multi-node-consolidation";
    case Method::kSingleNodeConsolidation:
      return "single-node-consolidation";
  }
  return "";
}

bool IsConsolidation(Method method) { return method != Method::kDrift; }

namespace internal {

double EvictionCost(const kube::PodInfo& pod) {
  double cost = 1.0;
  if (const std::string* value = pod.meta.Annotation(kPodDeletionCostAnnotationKey)) {
    int64_t deletion_cost = 0;
    // An unparseable cost is ignored (as the ReplicaSet controller ignores it).
    if (absl::SimpleAtoi(*value, &deletion_cost)) {
      cost += static_cast<double>(deletion_cost) / std::ldexp(1.0, 27);
    }
  }
  cost += static_cast<double>(pod.priority) / std::ldexp(1.0, 25);
  return std::clamp(cost, -10.0, 10.0);
}

double LifetimeRemaining(const state::StateNode& node, absl::Time now) {
  if (node.node_claim == nullptr || !node.node_claim->spec.expire_after.has_value()) return 1.0;
  absl::StatusOr<std::optional<absl::Duration>> expire =
      ParseNillableDuration(*node.node_claim->spec.expire_after);
  if (!expire.ok() || !expire->has_value() || **expire <= absl::ZeroDuration()) return 1.0;
  const absl::Time created =
      node.node_claim->metadata.creation_timestamp.value_or(absl::InfinitePast());
  if (created == absl::InfinitePast()) return 1.0;
  const double remaining = absl::FDivDuration(**expire - (now - created), **expire);
  return std::clamp(remaining, 0.0, 1.0);
}

std::optional<double> NodePrice(const cloudprovider::InstanceType& type, std::string_view zone,
                                std::string_view capacity_type, const v1::NodePool& pool) {
  std::optional<double> price;
  for (const cloudprovider::Offering& o : type.offerings()) {
    if (o.zone != zone || o.capacity_type != capacity_type) continue;
    if (!price.has_value() || o.EffectivePrice() < *price) price = o.EffectivePrice();
  }
  if (price.has_value()) *price += scenario::NodeOverheadPerHour(pool).value_or(0);
  return price;
}

double MinSavings(const v1::NodePool& pool, const Options& options) {
  auto it = pool.metadata.annotations.find(kMinSavingsAnnotationKey);
  double value = 0;
  if (it != pool.metadata.annotations.end() && absl::SimpleAtod(it->second, &value)) return value;
  return options.min_savings_per_hour;
}

absl::Duration MinNodeAge(const v1::NodePool& pool, const Options& options) {
  auto it = pool.metadata.annotations.find(kMinNodeAgeAnnotationKey);
  if (it != pool.metadata.annotations.end()) {
    absl::StatusOr<absl::Duration> d = ParseGoDuration(it->second);
    if (d.ok()) return *d;
  }
  return options.min_node_age;
}

// The default is the API's (karpenter.sh/v1 NodePool: WhenEmptyOrUnderutilized).
v1::ConsolidationPolicy ConsolidationPolicyOf(const v1::NodePool& pool) {
  if (!pool.spec.disruption.has_value() ||
      !pool.spec.disruption->consolidation_policy.has_value()) {
    return v1::ConsolidationPolicy::kWhenEmptyOrUnderutilized;
  }
  return *pool.spec.disruption->consolidation_policy;
}

}  // namespace internal

namespace {

using internal::EvictionCost;

bool ConditionTrue(const v1::NodeClaim& claim, std::string_view type) {
  const core::Condition* c = v1::FindCondition(claim.status.conditions, type);
  return c != nullptr && c->status == core::ConditionStatus::kTrue;
}

bool ConsolidateAfterNever(const v1::NodePool& pool) {
  return pool.spec.disruption.has_value() && pool.spec.disruption->consolidate_after.has_value() &&
         *pool.spec.disruption->consolidate_after == "Never";
}

core::StringMap LabelsOf(const kube::PodInfo& pod) {
  core::StringMap out;
  for (const kube::KeyValue& kv : pod.meta.labels) out[*kv.key] = kv.value;
  return out;
}

// The PDB that blocks evicting `pod`, as a message; "" when none does.
std::string PdbBlock(const kube::PodInfo& pod,
                     const std::vector<const core::PodDisruptionBudget*>& namespace_pdbs) {
  if (namespace_pdbs.empty()) return "";
  const core::StringMap labels = LabelsOf(pod);
  std::vector<const core::PodDisruptionBudget*> matched;
  for (const core::PodDisruptionBudget* pdb : namespace_pdbs) {
    if (!pdb->spec.selector.has_value()) continue;  // selects nothing
    if (scheduling::Matches(*pdb->spec.selector, labels)) matched.push_back(pdb);
  }
  if (matched.size() > 1) {
    return absl::StrCat("pod \"", pod.meta.Key(), "\" is matched by multiple PDBs (\"",
                        matched[0]->metadata.namespace_, "/", matched[0]->metadata.name, "\", \"",
                        matched[1]->metadata.namespace_, "/", matched[1]->metadata.name, "\")");
  }
  if (matched.size() == 1) {
    const core::PodDisruptionBudget& pdb = *matched[0];
    const int32_t allowed = pdb.status.has_value() ? pdb.status->disruptions_allowed : 0;
    if (allowed > 0) return "";
    const bool always_allow =
        pdb.spec.unhealthy_pod_eviction_policy.has_value() &&
        *pdb.spec.unhealthy_pod_eviction_policy == core::UnhealthyPodEvictionPolicy::kAlwaysAllow;
    if (always_allow && !pod.ready) return "";
    return absl::StrCat("pdb \"", pdb.metadata.namespace_, "/", pdb.metadata.name,
                        "\" prevents pod evictions");
  }
  return "";
}

struct Rejection {
  std::string event_reason;
  std::string message;
};

constexpr char kBlocked[] = "DisruptionBlocked";

using PdbsByNamespace =
    absl::flat_hash_map<std::string, std::vector<const core::PodDisruptionBudget*>>;

PdbsByNamespace IndexPdbs(const std::vector<core::PodDisruptionBudget>& pdbs) {
  PdbsByNamespace out;
  for (const core::PodDisruptionBudget& pdb : pdbs) {
    out[pdb.metadata.namespace_].push_back(&pdb);
  }
  return out;
}

// Why a managed, registered node is no candidate of any method: its lifecycle, the orchestration
// queue, a nomination, its do-not-disrupt annotation, or a NodePool or instance types that do not
// resolve. nullopt when none of these holds.
std::optional<Rejection> NodeBlock(const ClusterView& view, const state::StateNode& sn) {
  if (!sn.Initialized()) return Rejection{"", "node is not initialized"};
  if (sn.Deleting()) return Rejection{"", "node is being deleted"};
  if (sn.marked_for_deletion) return Rejection{"", "node is marked for deletion"};
  if (view.queued.contains(sn.Key())) {
    return Rejection{"", "node is already being disrupted (in the orchestration queue)"};
  }
  if (sn.Nominated(view.now)) return Rejection{kBlocked, "node is nominated for a pending pod"};
  if (const std::string* dnd = sn.node->meta.Annotation(v1::kDoNotDisruptAnnotationKey);
      dnd != nullptr && *dnd == "true") {
    return Rejection{kBlocked,
                     absl::StrCat("disruption is blocked through the \"",
                                  std::string(v1::kDoNotDisruptAnnotationKey), "\" annotation")};
  }
  const std::string pool_name = sn.NodePool();
  if (pool_name.empty()) {
    return Rejection{kBlocked, absl::StrCat("node does not have label \"",
                                            std::string(v1::kNodePoolLabelKey), "\"")};
  }
  if (!view.node_pools.contains(pool_name)) {
    return Rejection{kBlocked, absl::StrCat("NodePool \"", pool_name, "\" not found")};
  }
  if (!view.instance_types.contains(pool_name)) {
    return Rejection{kBlocked, absl::StrCat("instance types of NodePool \"", pool_name,
                                            "\" could not be resolved")};
  }
  return std::nullopt;
}

// The candidate's identity and offering from the node's labels.
Candidate LabelledCandidate(const state::StateNode& sn, const std::string& pool_name) {
  const core::StringMap labels = sn.Labels();
  auto label = [&](std::string_view key) {
    auto it = labels.find(key);
    return it == labels.end() ? std::string() : it->second;
  };
  Candidate c;
  c.node = sn;
  c.name = sn.Name();
  c.node_claim = sn.node_claim->metadata.name;
  c.node_pool = pool_name;
  c.instance_type = label(v1::kLabelInstanceType);
  c.zone = label(v1::kLabelTopologyZone);
  c.capacity_type = label(v1::kCapacityTypeLabelKey);
  return c;
}

const cloudprovider::InstanceType* FindType(
    const std::vector<cloudprovider::InstanceTypePtr>& types, const std::string& name) {
  for (const cloudprovider::InstanceTypePtr& t : types) {
    if (t != nullptr && t->name() == name) return t.get();
  }
  return nullptr;
}

// The first pod-level block of a node: a pod with an active do-not-disrupt annotation, else an
// evictable pod a PDB blocks; "" when none.
std::string PodBlock(const std::vector<state::PodPtr>& pods, const PdbsByNamespace& pdbs,
                     absl::Time now) {
  static const std::vector<const core::PodDisruptionBudget*> kNoPdbs;
  for (const state::PodPtr& pod : pods) {
    if (state::HasActiveDoNotDisrupt(*pod, now)) {
      return absl::StrCat("pod \"", pod->meta.Key(), "\" has \"",
                          std::string(v1::kDoNotDisruptAnnotationKey), "\" annotation");
    }
  }
  for (const state::PodPtr& pod : pods) {
    if (!state::IsEvictable(*pod)) continue;
    auto ns = pdbs.find(*pod->meta.namespace_);
    std::string block = PdbBlock(*pod, ns == pdbs.end() ? kNoPdbs : ns->second);
    if (!block.empty()) return block;
  }
  return "";
}

// The candidate's pods and costs (eviction cost x lifetime remaining; 1 + the reschedulable
// pods' costs), whether it is empty, and since when it is drifted.
void AddPodsAndCosts(const state::StateNode& sn, const std::vector<state::PodPtr>& pods,
                     absl::Time now, Candidate& c) {
  const double lifetime = internal::LifetimeRemaining(sn, now);
  double eviction_costs = 0;
  c.reschedule_disruption_cost = 1;
  for (const state::PodPtr& pod : pods) {
    c.pods.push_back(pod);
    const double cost = EvictionCost(*pod);
    eviction_costs += cost;
    if (scenario::IsReschedulable(*pod, now)) {
      c.reschedulable.push_back(pod);
      c.reschedule_disruption_cost += std::max(0.0, cost);
    }
  }
  c.disruption_cost = eviction_costs * lifetime;
  c.empty = c.reschedule_disruption_cost <= 1.0;
  if (const core::Condition* drifted =
          v1::FindCondition(sn.node_claim->status.conditions, nodeclaim::kConditionDrifted);
      drifted != nullptr && drifted->status == core::ConditionStatus::kTrue) {
    c.drifted_since = drifted->last_transition_time.value_or(absl::InfinitePast());
  }
}

// The consolidation methods' predicate; `type` is the candidate's instance type (null when not
// in the pool's catalog), `price` its offering's.
std::optional<Rejection> ConsolidationRejection(const ClusterView& view, const v1::NodePool& pool,
                                                const Candidate& c,
                                                const cloudprovider::InstanceType* type,
                                                std::optional<double> price,
                                                const Options& options) {
  constexpr char kUnconsolidatable[] = "Unconsolidatable";
  const absl::Duration min_age = internal::MinNodeAge(pool, options);
  const absl::Time created =
      c.node.node_claim->metadata.creation_timestamp.value_or(absl::InfinitePast());
  if (v1::IsStatic(pool)) return Rejection{"", "NodePool is static"};
  if (type == nullptr) {
    return Rejection{kUnconsolidatable,
                     absl::StrCat("instance type \"", c.instance_type, "\" not found")};
  }
  if (c.capacity_type.empty() || c.zone.empty() || !price.has_value()) {
    return Rejection{
        kUnconsolidatable,
        absl::StrCat("node does not have labels \"", std::string(v1::kCapacityTypeLabelKey),
                     "\" and \"", std::string(v1::kLabelTopologyZone), "\" of a known offering")};
  }
  if (ConsolidateAfterNever(pool)) {
    return Rejection{kUnconsolidatable,
                     absl::StrCat("NodePool \"", c.node_pool,
                                  "\" has consolidation disabled (consolidateAfter Never)")};
  }
  if (c.empty) return Rejection{"", "node is empty (left to emptiness)"};
  if (internal::ConsolidationPolicyOf(pool) == v1::ConsolidationPolicy::kWhenEmpty) {
    return Rejection{kUnconsolidatable,
                     absl::StrCat("NodePool \"", c.node_pool,
                                  "\" has consolidation disabled (policy WhenEmpty)")};
  }
  if (!ConditionTrue(*c.node.node_claim, nodeclaim::kConditionConsolidatable)) {
    return Rejection{"", "node is not consolidatable yet (consolidateAfter)"};
  }
  if (min_age > absl::ZeroDuration() && view.now - created < min_age) {
    return Rejection{
        "", absl::StrCat("node is younger than the minimum node age ", FormatGoDuration(min_age))};
  }
  return std::nullopt;
}

// The method's predicate over a candidate that passed the node- and pod-level checks.
std::optional<Rejection> MethodRejection(Method method, const ClusterView& view,
                                         const v1::NodePool& pool, const Candidate& c,
                                         const cloudprovider::InstanceType* type,
                                         std::optional<double> price, const Options& options) {
  switch (method) {
    case Method::kEmptiness:
      if (v1::IsStatic(pool)) return Rejection{"", "NodePool is static"};
      if (ConsolidateAfterNever(pool)) return Rejection{"", "NodePool has consolidateAfter Never"};
      if (!c.empty) return Rejection{"", "node is not empty"};
      if (!ConditionTrue(*c.node.node_claim, nodeclaim::kConditionConsolidatable)) {
        return Rejection{"", "node is not consolidatable yet (consolidateAfter)"};
      }
      return std::nullopt;
    case Method::kDrift:
      if (v1::IsStatic(pool)) return Rejection{"", "NodePool is static"};
      if (!c.drifted_since.has_value()) return Rejection{"", "node is not drifted"};
      return std::nullopt;
    case Method::kMultiNodeConsolidation:
    case Method::kSingleNodeConsolidation:
      return ConsolidationRejection(view, pool, c, type, price, options);
  }
  return std::nullopt;
}

// Drift: empty ones first, then oldest Drifted; the others: descending price /
// RescheduleDisruptionCost. Ties by name.
void SortCandidates(Method method, std::vector<Candidate>& candidates) {
  if (method == Method::kDrift) {
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) {
                       if (a.empty != b.empty) return a.empty;
                       if (*a.drifted_since != *b.drifted_since) {
                         return *a.drifted_since < *b.drifted_since;
                       }
                       return a.name < b.name;
                     });
  } else {
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) {
                       const double ra = a.price / a.reschedule_disruption_cost;
                       const double rb = b.price / b.reschedule_disruption_cost;
                       if (ra != rb) return ra > rb;
                       return a.name < b.name;
                     });
  }
}

}  // namespace

std::vector<Candidate> GetCandidates(const ClusterView& view, Method method, const Options& options,
                                     std::vector<Explanation>* explanations) {
  const PdbsByNamespace pdbs = IndexPdbs(view.pdbs);
  static const std::vector<state::PodPtr> kNoPods;

  std::vector<Candidate> out;
  for (const state::StateNode& sn : view.snapshot.nodes) {
    if (!sn.Managed() || sn.node == nullptr) continue;  // not ours, or not registered yet
    const std::string name = sn.Name();
    auto explain = [&](std::string event_reason, std::string message) {
      if (explanations == nullptr) return;
      explanations->push_back(Explanation{.node = name,
                                          .node_claim = sn.node_claim->metadata.name,
                                          .node_pool = sn.NodePool(),
                                          .method = method,
                                          .disrupted = false,
                                          .event_reason = std::move(event_reason),
                                          .message = std::move(message)});
    };
    if (std::optional<Rejection> blocked = NodeBlock(view, sn); blocked.has_value()) {
      explain(std::move(blocked->event_reason), std::move(blocked->message));
      continue;
    }
    const std::string pool_name = sn.NodePool();
    const v1::NodePool& pool = view.node_pools.at(pool_name);
    Candidate c = LabelledCandidate(sn, pool_name);
    const cloudprovider::InstanceType* type =
        FindType(view.instance_types.at(pool_name), c.instance_type);
    std::optional<double> price;
    if (type != nullptr) price = internal::NodePrice(*type, c.zone, c.capacity_type, pool);
    c.price = price.value_or(0);

    // Pod-level blocks (ignored by drift when the NodeClaim has a terminationGracePeriod).
    auto pods_it = view.snapshot.pods_by_node.find(name);
    const std::vector<state::PodPtr>& pods =
        pods_it == view.snapshot.pods_by_node.end() ? kNoPods : pods_it->second;
    const bool ignore_pod_blocks =
        method == Method::kDrift && sn.node_claim->spec.termination_grace_period.has_value();
    if (std::string block = ignore_pod_blocks ? "" : PodBlock(pods, pdbs, view.now);
        !block.empty()) {
      explain(kBlocked, std::move(block));
      continue;
    }

    AddPodsAndCosts(sn, pods, view.now, c);
    if (std::optional<Rejection> rejected =
            MethodRejection(method, view, pool, c, type, price, options);
        rejected.has_value()) {
      explain(std::move(rejected->event_reason), std::move(rejected->message));
      continue;
    }
    out.push_back(std::move(c));
  }
  SortCandidates(method, out);
  return out;
}

}  // namespace dovetail::controllers::disruption
