#include "dovetail/solver/solver.h"

#include <algorithm>
#include <array>
#include <bitset>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dovetail/apis/core/pod_requests.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/saturating.h"
#include "dovetail/scheduling/label_selector.h"
#include "dovetail/scheduling/taints.h"
#include "dovetail/solver/lower_bound.h"
#include "dovetail/solver/prepared_solver.h"
#include "dovetail/solver/type_set.h"

namespace dovetail::solver {

using cloudprovider::Offering;

namespace {

using apis::core::LabelSelector;
using apis::core::Taint;
using apis::core::TaintEffect;
using apis::core::Toleration;
using scheduling::AllowUndefined;
using scheduling::Requirement;
using scheduling::Requirements;
namespace v1 = apis::v1;

constexpr double kInfPrice = std::numeric_limits<double>::infinity();
constexpr size_t kMaxPairs = 256;
using PairMask = std::bitset<kMaxPairs>;
using Amounts = absl::InlinedVector<int64_t, 6>;

// ---------------------------------------------------------------------------------------------
// Resources: names interned to dimensions; amounts in milli-units.

class ResourceIndex {
 public:
  ResourceIndex() {
    for (std::string_view n : {"cpu", "memory", "pods", "ephemeral-storage"}) Intern(n);
  }
  int Intern(std::string_view name) {
    auto it = ids_.find(std::string(name));
    if (it != ids_.end()) return it->second;
    int id = static_cast<int>(names_.size());
    names_.emplace_back(name);
    ids_.emplace(names_.back(), id);
    return id;
  }
  void InternAll(const ResourceList& list) {
    for (const auto& [name, _] : list) Intern(name);
  }
  size_t size() const { return names_.size(); }
  const std::string& name(size_t i) const { return names_[i]; }
  Amounts ToAmounts(const ResourceList& list) const {
    Amounts a(names_.size(), 0);
    for (const auto& [name, q] : list) {
      auto it = ids_.find(name);
      if (it != ids_.end()) a[it->second] = q.MilliValue();
    }
    return a;
  }
  ResourceList ToList(const Amounts& a) const {
    ResourceList out;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] == 0) continue;
      QuantityFormat f = names_[i] == "memory" || names_[i] == "ephemeral-storage"
                             ? QuantityFormat::kBinarySI
                             : QuantityFormat::kDecimalSI;
      out[names_[i]] = Quantity::FromMilli(a[i], f);
    }
    return out;
  }

 private:
  std::vector<std::string> names_;
  absl::flat_hash_map<std::string, int> ids_;
};

bool Fits(const Amounts& used, const Amounts& add, const Amounts& cap) {
  for (size_t i = 0; i < add.size(); ++i) {
    // Amounts are saturated at INT64_MAX but otherwise finite: a saturated request fills a
    // saturated capacity (cap - used cannot overflow: both are within [0, INT64_MAX]).
    if (add[i] > cap[i] - used[i]) return false;
  }
  return true;
}
bool FitsIn(const Amounts& used, const Amounts& cap) {
  for (size_t i = 0; i < used.size(); ++i) {
    if (used[i] > cap[i]) return false;
  }
  return true;
}
void AddTo(Amounts& a, const Amounts& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] = SaturatingAdd(a[i], b[i]);
}
void SubFloor(Amounts& a, const Amounts& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::max<int64_t>(0, SaturatingSub(a[i], b[i]));
}

// ---------------------------------------------------------------------------------------------
// Offerings: every distinct (zone, capacity type) is a "pair" with a bit in a PairMask.

struct PairTable {
  std::vector<std::string> zones;
  std::vector<std::string> capacity_types;
  std::vector<Requirements> requirements;  // zone In [z], capacity-type In [ct] (+ zone-id)
  absl::flat_hash_map<std::pair<std::string, std::string>, int> index;
  std::vector<std::string> keys;  // every key the pairs' requirements use
  PairMask all;

  absl::StatusOr<int> Intern(const cloudprovider::Offering& o) {
    auto key = std::make_pair(o.zone, o.capacity_type);
    auto it = index.find(key);
    if (it != index.end()) return it->second;
    if (zones.size() >= kMaxPairs) {
      return absl::InvalidArgumentError(
          absl::StrCat("more than ", kMaxPairs, " zone/capacity-type combinations in the catalog"));
    }
    int id = static_cast<int>(zones.size());
    zones.push_back(o.zone);
    capacity_types.push_back(o.capacity_type);
    requirements.push_back(o.requirements);
    index.emplace(key, id);
    all.set(id);
    for (const auto& r : o.requirements) {
      if (std::find(keys.begin(), keys.end(), r.key()) == keys.end()) keys.push_back(r.key());
    }
    return id;
  }
  // The pairs whose offering requirements intersect `reqs` (cloudprovider::RequirementsIntersect,
  // looking only at the keys offerings use).
  PairMask Allowed(const Requirements& reqs) const {
    const Requirement* found[8];
    size_t n = 0;
    for (const auto& k : keys) {
      const Requirement* r = reqs.Find(k);
      if (r == nullptr) continue;
      if (n == std::size(found)) return AllowedSlow(reqs);
      found[n++] = r;
    }
    if (n == 0) return all;
    PairMask m;
    for (size_t i = 0; i < requirements.size(); ++i) {
      bool ok = true;
      for (size_t j = 0; j < n && ok; ++j) {
        const Requirement* pr = requirements[i].Find(found[j]->key());
        if (pr == nullptr) continue;
        if (IsNegativeRequirement(*pr) && IsNegativeRequirement(*found[j])) continue;
        ok = pr->Intersects(*found[j]);
      }
      if (ok) m.set(i);
    }
    return m;
  }
  PairMask AllowedSlow(const Requirements& reqs) const {
    PairMask m;
    for (size_t i = 0; i < requirements.size(); ++i) {
      if (cloudprovider::RequirementsIntersect(requirements[i], reqs)) m.set(i);
    }
    return m;
  }
  static bool IsNegativeRequirement(const Requirement& r) {
    return r.Operator() == apis::core::SelectorOperator::kNotIn ||
           r.Operator() == apis::core::SelectorOperator::kDoesNotExist;
  }
};

struct TypeInfo {
  InstanceTypePtr type;
  Amounts allocatable;
  Amounts capacity;
  PairMask available;
  std::vector<double> pair_price;  // per pair; +inf when there is no available offering
};

// ---------------------------------------------------------------------------------------------
// Topology: spread constraints, pod affinity and anti-affinity over interned domains.

struct DomainTable {
  absl::flat_hash_map<std::string, int> ids;
  std::vector<std::string> names;
  // RegisterDomains: values before `static_size` come from the catalog and the pools, those up to
  // `registered_size` from existing nodes' labels.
  size_t static_size = 0;
  size_t registered_size = 0;
  int Intern(std::string_view v) {
    auto it = ids.find(std::string(v));
    if (it != ids.end()) return it->second;
    int id = static_cast<int>(names.size());
    names.emplace_back(v);
    ids.emplace(names.back(), id);
    return id;
  }
  int Find(std::string_view v) const {
    auto it = ids.find(std::string(v));
    return it == ids.end() ? -1 : it->second;
  }
};

struct NamespaceSet {
  bool all = false;
  absl::flat_hash_set<std::string> names;
  bool Contains(const std::string& ns) const { return all || names.contains(ns); }
  std::string Key() const {
    if (all) return "*";
    std::vector<std::string> v(names.begin(), names.end());
    std::sort(v.begin(), v.end());
    return absl::StrJoin(v, ",");
  }
};

enum class GroupKind { kSpread, kAffinity, kAntiAffinity };

struct TopologyGroup {
  GroupKind kind = GroupKind::kSpread;
  std::string key;
  LabelSelector selector;
  NamespaceSet namespaces;
  int32_t max_skew = 1;
  int32_t min_domains = 0;
  bool is_hostname = false;
  // Spread only: nodes must satisfy one of these to count (nodeAffinityPolicy Honor: the pod's
  // node selector with each of its required node-affinity terms, which are ORed). Empty: all.
  std::vector<Requirements> node_filters;
  bool FilterAdmits(const Requirements& node, AllowUndefined allow) const {
    if (node_filters.empty()) return true;
    for (const auto& f : node_filters) {
      if (node.Compatible(f, allow).ok()) return true;
    }
    return false;
  }
  // Spread only: nodes' taints must be tolerated to count (nodeTaintsPolicy Honor).
  std::optional<std::vector<Toleration>> taint_filter;
  std::vector<int64_t> counts;        // per domain id: pods matching the selector
  std::vector<int64_t> owner_counts;  // anti-affinity: per domain, pods owning this term
  absl::flat_hash_set<int> eligible;  // spread: domains that count for the global minimum
  int64_t total = 0;

  int64_t Count(int d) const { return d < static_cast<int>(counts.size()) ? counts[d] : 0; }
  int64_t OwnerCount(int d) const {
    return d < static_cast<int>(owner_counts.size()) ? owner_counts[d] : 0;
  }
  void Inc(std::vector<int64_t>& v, int d) {
    if (d >= static_cast<int>(v.size())) v.resize(d + 1, 0);
    ++v[d];
  }
  bool Selects(const std::string& ns, const StringMap& labels) const {
    return namespaces.Contains(ns) && scheduling::Matches(selector, labels);
  }
};

// ---------------------------------------------------------------------------------------------
// Pod classes and their relaxation variants.

struct HostPort {
  std::string ip;
  int32_t port = 0;
  apis::core::Protocol protocol = apis::core::Protocol::kTCP;
  bool Conflicts(const HostPort& o) const {
    if (port != o.port || protocol != o.protocol) return false;
    auto wildcard = [](const std::string& ip) {
      return ip.empty() || ip == "0.0.0.0" || ip == "::";
    };
    return wildcard(ip) || wildcard(o.ip) || ip == o.ip;
  }
};

bool PortsConflict(const std::vector<HostPort>& a, const std::vector<HostPort>& b) {
  for (const auto& x : a) {
    for (const auto& y : b) {
      if (x.Conflicts(y)) return true;
    }
  }
  return false;
}

// Which preferences a variant still honours (upstream's relaxation order).
struct RelaxState {
  int required_term = 0;  // index of the required node selector term in use
  int pref_affinity_dropped = 0;
  int pref_anti_dropped = 0;
  int pref_node_dropped = 0;
  int spread_anyway_dropped = 0;
  bool tolerate_prefer_no_schedule = false;
  bool operator==(const RelaxState&) const = default;
};

struct PoolFit {
  bool computed = false;
  absl::Status status;
  TypeSet types;   // pool types compatible with the variant's requirements that fit one pod
  PairMask pairs;  // offerings the pool's and the variant's requirements allow
  double alone_price = -1;  // cheapest NodeClaim for one such pod alone; -1 until computed
};

struct Variant {
  int cls = 0;
  RelaxState state;
  absl::Status requirements_status;
  Requirements reqs;
  std::vector<Toleration> tolerations;
  std::vector<int> owned;  // topology groups this pod must satisfy
  std::vector<PoolFit> pool_fit;
  std::vector<int8_t> node_fit;      // per existing node: -1 unknown, 0 no, 1 static checks pass
  size_t claim_cursor = 0;           // claims before this index permanently reject this variant
  std::vector<size_t> retry_claims;  // claims that rejected for reasons that may change
  std::vector<size_t> priced_out;    // claims refused by the price guard (see TryClaim)
};

struct PodClass {
  const Pod* rep = nullptr;
  std::string ns;
  StringMap labels;
  Amounts requests;
  std::vector<HostPort> ports;
  std::vector<Requirements> volume_alternatives;
  std::vector<int> selected_by;  // groups whose selector matches this class
  std::vector<int> inverse;      // anti-affinity groups whose selector matches (inverse rule)
  // Topology terms, by kind, as group ids (preferred ones sorted heaviest first).
  std::vector<int> required_affinity, required_anti, spread_required;
  std::vector<int> preferred_affinity, preferred_anti, spread_anyway;
  std::vector<int> counting;        // counting_groups + owner groups for anti-affinity owner counts
  std::vector<int> owner_anti_all;  // every anti-affinity term it owns (required + preferred)
  // Preferred node affinity terms sorted heaviest first.
  std::vector<const apis::core::NodeSelectorTerm*> preferred_node_terms;
  std::vector<apis::core::NodeSelectorTerm> required_terms;
  bool has_match_fields = false;
};

// ---------------------------------------------------------------------------------------------
// Placement targets.

struct NodeState {
  const ExistingNode* node = nullptr;
  Requirements label_reqs;
  Amounts allocatable;
  Amounts used;
  std::vector<HostPort> ports;
  std::vector<Taint> effective_taints;
  StringMap labels;
  std::vector<const Pod*> placed;
};

struct Claim {
  int pool = 0;
  int hostname_domain = 0;
  std::string hostname;
  Requirements reqs;
  PairMask pairs;
  TypeSet types;
  // Summaries of `types`: the element-wise largest room a type offers (after DaemonSet overhead),
  // kept in step; every pair some type has an available offering in, recomputed when needed.
  Amounts max_room;
  mutable PairMask offered;
  mutable bool offered_stale = true;
  Amounts used;
  std::vector<HostPort> ports;
  std::vector<int> variants;  // variants already on the claim (requirements merged)
  std::vector<const Pod*> pods;
  bool min_values_relaxed = false;
  double price = -1;  // ClaimPrice(types, pairs) for the price guard; -1 when not known
};

struct PoolInfo {
  const PoolTemplate* t = nullptr;
  TypeSet types;                  // types new NodeClaims may use (after the improvement pass's cap)
  TypeSet all_types;              // every type of the pool: where topology domains come from
  std::vector<Amounts> overhead;  // per global type index (only pool types are meaningful)
  std::vector<Amounts> effective;  // allocatable minus overhead, per global type index
  std::vector<HostPort> ds_ports;
  std::optional<Amounts> remaining;  // limits
  std::optional<int64_t> remaining_nodes;
  bool has_prefer_no_schedule = false;
  // FitForPool's label and offering filters by the requirements they were computed for (variants
  // of different pod classes usually share requirements).
  struct LabelFit {
    Requirements reqs;
    TypeSet label_match;  // types whose requirements intersect `reqs`
    TypeSet offered;      // ... that also have an available offering `reqs` allows
    PairMask pairs;       // the offerings `reqs` allows
  };
  std::vector<LabelFit> label_fits;
};

std::string PodKey(const Pod& p) {
  return absl::StrCat(p.metadata.namespace_, "/", p.metadata.name);
}

// Appends a compact, unambiguous encoding of the scheduling-relevant parts of a pod spec (node
// affinity, pod (anti-)affinity, tolerations, topology spread) to `key`: pods with equal keys are
// interchangeable for the solver. Length-free separators are safe because the separator bytes
// (0x1c-0x1f) cannot appear in label keys, values or names.
void AppendSelector(const LabelSelector& sel, std::string* key) {
  for (const auto& [k, v] : sel.match_labels) absl::StrAppend(key, k, "=", v, "\x1c");
  for (const auto& e : sel.match_expressions) {
    absl::StrAppend(key, e.key, "\x1d", static_cast<int>(e.op), "\x1d");
    for (const auto& v : e.values) absl::StrAppend(key, v, ",");
    absl::StrAppend(key, "\x1c");
  }
}

void AppendNodeTerm(const apis::core::NodeSelectorTerm& t, std::string* key) {
  for (const auto* list : {&t.match_expressions, &t.match_fields}) {
    for (const auto& e : *list) {
      absl::StrAppend(key, e.key, "\x1d", static_cast<int>(e.op), "\x1d");
      for (const auto& v : e.values) absl::StrAppend(key, v, ",");
      absl::StrAppend(key, "\x1c");
    }
    absl::StrAppend(key, "|");
  }
}

void AppendPodTerm(const apis::core::PodAffinityTerm& t, std::string* key) {
  absl::StrAppend(key, t.topology_key, "\x1d", t.label_selector ? "s" : "-");
  if (t.label_selector) AppendSelector(*t.label_selector, key);
  absl::StrAppend(key, "\x1d");
  for (const auto& n : t.namespaces) absl::StrAppend(key, n, ",");
  absl::StrAppend(key, "\x1d", t.namespace_selector ? "s" : "-");
  if (t.namespace_selector) AppendSelector(*t.namespace_selector, key);
  for (const auto& k : t.match_label_keys) absl::StrAppend(key, "+", k);
  for (const auto& k : t.mismatch_label_keys) absl::StrAppend(key, "-", k);
  absl::StrAppend(key, "\x1e");
}

void AppendSchedulingKey(const apis::core::PodSpec& s, std::string* key) {
  if (s.affinity) {
    const auto& a = *s.affinity;
    if (a.node_affinity) {
      absl::StrAppend(key, "NA");
      if (a.node_affinity->required) {
        for (const auto& t : a.node_affinity->required->terms) AppendNodeTerm(t, key);
      }
      absl::StrAppend(key, "P");
      for (const auto& p : a.node_affinity->preferred) {
        absl::StrAppend(key, p.weight, ":");
        AppendNodeTerm(p.preference, key);
      }
    }
    for (const auto* pa : {&a.pod_affinity, &a.pod_anti_affinity}) {
      absl::StrAppend(key, pa == &a.pod_affinity ? "PA" : "AA");
      if (!*pa) continue;
      for (const auto& t : (*pa)->required) AppendPodTerm(t, key);
      absl::StrAppend(key, "P");
      for (const auto& w : (*pa)->preferred) {
        absl::StrAppend(key, w.weight, ":");
        AppendPodTerm(w.term, key);
      }
    }
  }
  absl::StrAppend(key, "\x1fT");
  for (const auto& t : s.tolerations) {
    absl::StrAppend(key, t.key, "\x1d", static_cast<int>(t.op), "\x1d", t.value, "\x1d",
                    t.effect ? static_cast<int>(*t.effect) : -1, "\x1d",
                    t.toleration_seconds.value_or(-1), "\x1c");
  }
  absl::StrAppend(key, "\x1fS");
  for (const auto& c : s.topology_spread_constraints) {
    absl::StrAppend(key, c.max_skew, "\x1d", c.topology_key, "\x1d",
                    static_cast<int>(c.when_unsatisfiable), "\x1d", c.min_domains.value_or(-1),
                    "\x1d", c.node_affinity_policy ? static_cast<int>(*c.node_affinity_policy) : -1,
                    "\x1d", c.node_taints_policy ? static_cast<int>(*c.node_taints_policy) : -1,
                    "\x1d", c.label_selector ? "s" : "-");
    if (c.label_selector) AppendSelector(*c.label_selector, key);
    for (const auto& k : c.match_label_keys) absl::StrAppend(key, "+", k);
    absl::StrAppend(key, "\x1e");
  }
}

// Adds the label keys a pod's selectors read (spread constraints, pod (anti-)affinity terms) to
// `keys`: only those keys split pods into classes.
void NoteSelectorKeys(const Pod& p, absl::flat_hash_set<std::string>* keys) {
  auto note_term = [&](const apis::core::PodAffinityTerm& t) {
    if (t.label_selector) {
      for (const auto& [k, v] : t.label_selector->match_labels) keys->insert(k);
      for (const auto& e : t.label_selector->match_expressions) keys->insert(e.key);
    }
    for (const auto& k : t.match_label_keys) keys->insert(k);
    for (const auto& k : t.mismatch_label_keys) keys->insert(k);
  };
  const auto& s = p.spec;
  for (const auto& c : s.topology_spread_constraints) {
    if (c.label_selector) {
      for (const auto& [k, v] : c.label_selector->match_labels) keys->insert(k);
      for (const auto& e : c.label_selector->match_expressions) keys->insert(e.key);
    }
    for (const auto& k : c.match_label_keys) keys->insert(k);
  }
  if (s.affinity) {
    for (const auto* pa : {&s.affinity->pod_affinity, &s.affinity->pod_anti_affinity}) {
      if (!*pa) continue;
      for (const auto& t : (*pa)->required) note_term(t);
      for (const auto& w : (*pa)->preferred) note_term(w.term);
    }
  }
}

// ---------------------------------------------------------------------------------------------

class SolverImpl {
 public:
  // `cap`, when set, limits new NodeClaims to instance types no larger (cpu and memory) than it.
  // `pod_requests[i]` is PodRequests(*in.pods[i]) (computed once for every packing).
  // `class_pods` are the pods classes are built for (Solve: in.pods); `pod_requests` is aligned
  // with them.
  SolverImpl(const Input& in, std::span<const Pod* const> class_pods,
             const std::vector<ResourceList>& pod_requests, const cloudprovider::InstanceType* cap)
      : in_(in), class_pods_(class_pods), pod_requests_(pod_requests), cap_(cap) {}

  absl::StatusOr<Plan> Run();

 private:
  friend class PreparedSolverImpl;

  // The build phase: resources, types, pools, nodes, classes and topology counts.
  absl::Status Build();
  // Places `q_pods_` (classes `q_class_`) on the built state and returns the plan.
  Plan PlaceAll();
  absl::Status BuildResources();
  absl::Status BuildTypes();
  absl::Status BuildPools();
  absl::Status BuildNodes();
  absl::Status BuildClasses();
  // Pods with equal keys are interchangeable: one class.
  std::string ClassKey(const Pod& p, const ResourceList& requests) const;
  void BuildTopologyCounts();
  // Groups by a label their selector requires (the first of matchLabels), so that a pod is only
  // matched against groups that may select it.
  void IndexGroups();
  // The groups that may select a pod with `labels`, in id order.
  void CandidateGroups(const StringMap& labels, std::vector<int>* out) const;

  int GroupFor(GroupKind kind, const std::string& ns, const apis::core::PodAffinityTerm& term,
               const Pod& owner);
  int SpreadGroupFor(const apis::core::TopologySpreadConstraint& c, const Pod& owner,
                     const PodClass& cls);
  int InternGroup(TopologyGroup g, const std::string& identity);
  void RegisterDomains(const std::string& key);
  NamespaceSet ResolveNamespaces(const std::string& own, const apis::core::PodAffinityTerm& t);
  void ComputeEligibleDomains(TopologyGroup& g, const PodClass& cls);

  int VariantFor(int cls, const RelaxState& state);
  std::optional<RelaxState> NextRelaxation(const Variant& v) const;
  const PoolFit& FitForPool(int variant, int pool);

  std::string DomainOfNode(const TopologyGroup& g, const NodeState& n) const;
  bool NodePassesFilter(const TopologyGroup& g, const NodeState& n) const;

  // Topology: narrows `reqs` (for a claim) or checks a node; returns an error describing the
  // violated constraint.
  absl::Status CheckTopologyNode(const Variant& v, const PodClass& c, const NodeState& n) const;
  // On failure, `*permanent` tells whether the claim can never accept the variant again (counts
  // only grow: anti-affinity and hostname spread refusals are final, affinity and zonal spread
  // refusals may go away as other pods land).
  absl::Status ApplyTopologyClaim(const Variant& v, const PodClass& c, Claim& claim,
                                  Requirements& reqs, PairMask& pairs, bool* permanent) const;
  std::vector<int> ClaimDomains(const TopologyGroup& g, const Claim& claim,
                                const Requirements& reqs, const PairMask& pairs) const;

  absl::Status TryNode(int variant, size_t node);
  absl::Status TryClaim(int variant, size_t claim, bool* permanent);
  absl::Status TryNewClaim(int variant, int pool);
  // Cheapest available offering of any of `types` within `pairs` (kInfPrice if none).
  double ClaimPrice(const TypeSet& types, const PairMask& pairs) const;
  // ClaimPrice of a new NodeClaim for one pod of variant `vi` alone in pool `pi` (cached).
  double AlonePrice(int vi, int pi);
  bool Place(const Pod* pod, int variant, std::vector<std::string>* reasons);
  void RecordPlacement(const PodClass& c, const NodeState* node, const Claim* claim);

  absl::Status MinValuesOk(const Requirements& reqs, const TypeSet& types, bool* relaxed) const;
  // Replaces claim.types by `types` (a subset) and updates the summaries.
  void SetTypes(Claim& claim, TypeSet types) const;
  const PairMask& Offered(const Claim& claim) const;
  double TypePrice(size_t type, const PairMask& pairs, int* pair) const;

  // Re-packs the pods of NodeClaims that share pool, requirements and offering pairs, and whose
  // pods have no hostname-level constraint (so moving them between nodes changes nothing a
  // constraint sees), first-fit decreasing onto the cheapest single type for all of them or for
  // each shape of pod (memory per cpu); keeps the result when it costs less.
  void SplitClaims();
  Plan Finalize();
  void ComputeLowerBound(Plan& plan);

  const Input& in_;
  std::span<const Pod* const> class_pods_;
  const std::vector<ResourceList>& pod_requests_;
  const cloudprovider::InstanceType* cap_ = nullptr;
  // The pods PlaceAll places and their classes (Solve: the input's pods).
  std::span<const Pod* const> q_pods_;
  std::span<const int> q_class_;
  ResourceIndex res_;
  PairTable pairs_;
  std::vector<TypeInfo> types_;
  absl::flat_hash_map<const cloudprovider::InstanceType*, int> type_index_;
  std::vector<PoolInfo> pools_;  // sorted by weight desc, name desc
  std::vector<NodeState> nodes_;
  // Per node: cpu and memory left (allocatable minus used), kept in step with `used`, so that the
  // scan over existing nodes skips full ones without touching their state.
  std::vector<std::array<int64_t, 2>> node_room_;
  void UpdateRoom(size_t ni) {
    const NodeState& n = nodes_[ni];
    node_room_[ni] = {n.allocatable[0] - n.used[0], n.allocatable[1] - n.used[1]};
  }
  absl::flat_hash_map<std::string, int> node_by_name_;
  std::vector<PodClass> classes_;
  std::vector<int> pod_class_;                            // per class pod
  absl::flat_hash_map<std::string, int> class_ids_;       // by class key
  absl::flat_hash_set<std::string> class_selector_keys_;  // the keys class keys were made with
  std::vector<Variant> variants_;
  std::vector<std::vector<int>> variants_by_class_;  // variant ids per class
  std::vector<TopologyGroup> groups_;
  absl::flat_hash_map<std::string, int> group_ids_;
  absl::flat_hash_map<std::string, DomainTable> domains_;
  std::vector<Claim> claims_;
  absl::flat_hash_set<std::string> selector_keys_;  // label keys any selector reads
  absl::flat_hash_set<std::string> registered_keys_;
  absl::flat_hash_map<std::string, std::vector<int>> group_index_;
  std::vector<int> unindexed_groups_;
  std::vector<std::pair<const Pod*, int>> placed_variant_;  // for the lower bound

  // Session support (empty in Solve). Nodes that are gone: not a destination.
  std::vector<char> removed_;
  // Per group: does it exist in the question's input (an anti-affinity group only owned by pods
  // that are gone is skipped as an inverse rule). Empty: every group.
  std::vector<char> group_active_;
  // Nodes whose removal would change the domain tables or a spread group's eligible domains.
  std::vector<char> node_shapes_domains_;
  // What each node's bound pods add to topology counts (recorded when record_contributions_).
  struct Contribution {
    int group;
    int domain;
    bool owner;
  };
  bool record_contributions_ = false;
  std::vector<std::vector<Contribution>> node_contributions_;
  // Undo log of topology count changes (when logging_).
  bool logging_ = false;
  bool price_guard_ = true;  // TryClaim's price guard; off only for Place's last resort
  std::vector<std::pair<Contribution, int>> count_log_;
  // Per-node undo log of placements: node, usage and host-port count before.
  std::vector<std::tuple<size_t, Amounts, size_t>> node_log_;
  void Bump(int gid, int domain, bool owner, int delta);
};

// ---- construction ---------------------------------------------------------------------------

absl::Status SolverImpl::BuildResources() {
  for (const Pod* p : class_pods_) {
    if (p == nullptr) return absl::InvalidArgumentError("null pod in input");
  }
  for (const auto& pool : in_.pools) {
    for (const auto& it : pool.instance_types) {
      if (it == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("null instance type in pool ", pool.name));
      }
      res_.InternAll(it->capacity());
      res_.InternAll(it->Allocatable());
    }
    if (pool.remaining_limits) res_.InternAll(*pool.remaining_limits);
  }
  for (const auto& n : in_.nodes) res_.InternAll(n.allocatable);
  for (const auto& r : pod_requests_) res_.InternAll(r);
  for (const auto& ds : in_.daemon_sets) {
    if (ds.pod != nullptr) res_.InternAll(apis::core::PodRequests(*ds.pod));
  }
  res_.Intern("nodes");  // limits only
  return absl::OkStatus();
}

absl::Status SolverImpl::BuildTypes() {
  for (const auto& pool : in_.pools) {
    for (const auto& it : pool.instance_types) {
      if (type_index_.contains(it.get())) continue;
      TypeInfo ti;
      ti.type = it;
      ti.allocatable = res_.ToAmounts(it->Allocatable());
      ti.capacity = res_.ToAmounts(it->capacity());
      for (const auto& o : it->offerings()) {
        auto id = pairs_.Intern(o);
        if (!id.ok()) return id.status();
        if (static_cast<size_t>(*id) >= ti.pair_price.size()) {
          ti.pair_price.resize(*id + 1, kInfPrice);
        }
        if (o.available) {
          ti.available.set(*id);
          ti.pair_price[*id] = std::min(ti.pair_price[*id], o.price);
        }
      }
      type_index_.emplace(it.get(), static_cast<int>(types_.size()));
      types_.push_back(std::move(ti));
    }
  }
  for (auto& ti : types_) ti.pair_price.resize(pairs_.zones.size(), kInfPrice);
  return absl::OkStatus();
}

absl::Status SolverImpl::BuildPools() {
  absl::flat_hash_set<std::string> names;
  std::vector<const PoolTemplate*> order;
  for (const auto& p : in_.pools) {
    if (!names.insert(p.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate pool ", p.name));
    }
    order.push_back(&p);
  }
  std::sort(order.begin(), order.end(), [](const PoolTemplate* a, const PoolTemplate* b) {
    if (a->weight != b->weight) return a->weight > b->weight;
    return a->name > b->name;
  });
  const size_t nt = types_.size();
  for (const PoolTemplate* t : order) {
    PoolInfo pi;
    pi.t = t;
    pi.types = TypeSet(nt);
    pi.overhead.assign(nt, Amounts(res_.size(), 0));
    pi.effective.assign(nt, Amounts(res_.size(), 0));
    for (const auto& it : t->instance_types) pi.types.Set(type_index_.at(it.get()));
    pi.all_types = pi.types;
    if (cap_ != nullptr) {
      const Amounts cap = res_.ToAmounts(cap_->Allocatable());
      pi.types.ForEach([&](size_t i) {
        if (types_[i].allocatable[0] > cap[0] || types_[i].allocatable[1] > cap[1]) {
          pi.types.Reset(i);
        }
      });
    }
    for (const auto& taint : t->taints) {
      if (taint.effect == TaintEffect::kPreferNoSchedule) pi.has_prefer_no_schedule = true;
    }
    // DaemonSet overhead per type: DaemonSets whose pod tolerates the pool's taints (treating
    // PreferNoSchedule as tolerated) and whose strict requirements fit the pool and the type.
    std::vector<std::pair<Amounts, Requirements>> daemons;
    for (const auto& ds : in_.daemon_sets) {
      if (ds.pod == nullptr) continue;
      const auto& spec = ds.pod->spec;
      if (!scheduling::Tolerates(spec.tolerations, t->taints, scheduling::PreferNoSchedule::kIgnore)
               .ok()) {
        continue;
      }
      std::vector<apis::core::NodeSelectorTerm> terms;
      if (spec.affinity && spec.affinity->node_affinity && spec.affinity->node_affinity->required) {
        terms = spec.affinity->node_affinity->required->terms;
      }
      auto reqs = Requirements::ForPod(spec.node_selector, terms);
      if (!reqs.ok()) continue;
      if (!t->requirements.Compatible(*reqs, AllowUndefined::kWellKnownLabels).ok()) continue;
      daemons.emplace_back(res_.ToAmounts(apis::core::PodRequests(*ds.pod)), std::move(*reqs));
      for (const auto& c : spec.containers) {
        for (const auto& port : c.ports) {
          if (port.host_port > 0) {
            pi.ds_ports.push_back(
                {port.host_ip, port.host_port, port.protocol.value_or(apis::core::Protocol::kTCP)});
          }
        }
      }
    }
    pi.types.ForEach([&](size_t i) {
      const TypeInfo& ti = types_[i];
      for (const auto& [req, reqs] : daemons) {
        if (cloudprovider::RequirementsIntersect(ti.type->requirements(), reqs))
          AddTo(pi.overhead[i], req);
      }
      pi.effective[i] = ti.allocatable;
      SubFloor(pi.effective[i], pi.overhead[i]);
      // A type whose allocatable cannot even hold the DaemonSets is useless for this pool.
      for (size_t r = 0; r < ti.allocatable.size(); ++r) {
        if (pi.overhead[i][r] > ti.allocatable[r]) {
          pi.types.Reset(i);
          break;
        }
      }
    });
    if (t->remaining_limits) {
      pi.remaining = Amounts(res_.size(), std::numeric_limits<int64_t>::max());
      for (const auto& [name, q] : *t->remaining_limits) {
        if (name == "nodes") {
          pi.remaining_nodes = q.Value();
        } else {
          (*pi.remaining)[res_.Intern(name)] = q.MilliValue();
        }
      }
    }
    pools_.push_back(std::move(pi));
  }
  return absl::OkStatus();
}

absl::Status SolverImpl::BuildNodes() {
  for (const auto& n : in_.nodes) {
    NodeState s;
    s.node = &n;
    s.labels = n.labels;
    if (!s.labels.contains(v1::kLabelHostname)) s.labels[std::string(v1::kLabelHostname)] = n.name;
    s.label_reqs = Requirements::FromLabels(s.labels);
    s.allocatable = res_.ToAmounts(n.allocatable);
    s.used = Amounts(res_.size(), 0);
    for (const auto& t : n.taints) {
      if (!n.initialized) {
        if (scheduling::IsKnownEphemeralTaint(t)) continue;
        if (std::find(n.startup_taint_keys.begin(), n.startup_taint_keys.end(), t.key) !=
            n.startup_taint_keys.end()) {
          continue;
        }
      }
      s.effective_taints.push_back(t);
    }
    node_by_name_[n.name] = static_cast<int>(nodes_.size());
    nodes_.push_back(std::move(s));
  }
  absl::flat_hash_map<int, absl::flat_hash_set<std::string>> daemons_on_node;
  for (const Pod* p : in_.bound_pods) {
    if (p == nullptr) continue;
    auto it = node_by_name_.find(p->spec.node_name);
    if (it == node_by_name_.end()) continue;
    if (apis::core::IsTerminal(*p)) continue;
    NodeState& s = nodes_[it->second];
    AddTo(s.used, res_.ToAmounts(apis::core::PodRequests(*p)));
    for (const auto& c : p->spec.containers) {
      for (const auto& port : c.ports) {
        if (port.host_port > 0) {
          s.ports.push_back(
              {port.host_ip, port.host_port, port.protocol.value_or(apis::core::Protocol::kTCP)});
        }
      }
    }
    for (const auto& ref : p->metadata.owner_references) {
      if (ref.kind == "DaemonSet") {
        daemons_on_node[it->second].insert(absl::StrCat(p->metadata.namespace_, "/", ref.name));
      }
    }
  }
  node_shapes_domains_.assign(nodes_.size(), 0);
  // DaemonSet pods that will land on a node but are not there yet still take room.
  for (size_t i = 0; i < nodes_.size(); ++i) {
    NodeState& s = nodes_[i];
    for (const auto& ds : in_.daemon_sets) {
      if (ds.pod == nullptr || daemons_on_node[i].contains(ds.name)) continue;
      const auto& spec = ds.pod->spec;
      if (!scheduling::Tolerates(spec.tolerations, s.effective_taints,
                                 scheduling::PreferNoSchedule::kIgnore)
               .ok()) {
        continue;
      }
      std::vector<apis::core::NodeSelectorTerm> terms;
      if (spec.affinity && spec.affinity->node_affinity && spec.affinity->node_affinity->required) {
        terms = spec.affinity->node_affinity->required->terms;
      }
      auto reqs = Requirements::ForPod(spec.node_selector, terms);
      if (!reqs.ok() || !s.label_reqs.Compatible(*reqs, AllowUndefined::kNone).ok()) continue;
      AddTo(s.used, res_.ToAmounts(apis::core::PodRequests(*ds.pod)));
      for (const auto& c : spec.containers) {
        for (const auto& port : c.ports) {
          if (port.host_port > 0) {
            s.ports.push_back(
                {port.host_ip, port.host_port, port.protocol.value_or(apis::core::Protocol::kTCP)});
          }
        }
      }
    }
  }
  node_room_.resize(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) UpdateRoom(i);
  return absl::OkStatus();
}

NamespaceSet SolverImpl::ResolveNamespaces(const std::string& own,
                                           const apis::core::PodAffinityTerm& t) {
  NamespaceSet s;
  for (const auto& n : t.namespaces) s.names.insert(n);
  if (t.namespace_selector) {
    if (t.namespace_selector->match_labels.empty() &&
        t.namespace_selector->match_expressions.empty()) {
      s.all = true;
    } else {
      for (const auto& [name, labels] : in_.namespace_labels) {
        if (scheduling::Matches(*t.namespace_selector, labels)) s.names.insert(name);
      }
    }
  }
  if (!s.all && s.names.empty() && !t.namespace_selector) s.names.insert(own);
  return s;
}

std::string SelectorKey(const LabelSelector& s) {
  std::string out;
  for (const auto& [k, v] : s.match_labels) absl::StrAppend(&out, k, "=", v, ";");
  for (const auto& e : s.match_expressions) {
    absl::StrAppend(&out, e.key, "~", static_cast<int>(e.op), "[", absl::StrJoin(e.values, ","),
                    "];");
  }
  return out;
}

int SolverImpl::InternGroup(TopologyGroup g, const std::string& identity) {
  auto it = group_ids_.find(identity);
  if (it != group_ids_.end()) return it->second;
  for (const auto& [k, v] : g.selector.match_labels) selector_keys_.insert(k);
  for (const auto& e : g.selector.match_expressions) selector_keys_.insert(e.key);
  g.is_hostname = g.key == v1::kLabelHostname;
  int id = static_cast<int>(groups_.size());
  groups_.push_back(std::move(g));
  group_ids_.emplace(identity, id);
  RegisterDomains(groups_.back().key);
  return id;
}

// Interns every value `key` can take on a node: offering zones and capacity types, instance type
// and pool requirement values, and existing nodes' labels. Claims pick their domains from these.
void SolverImpl::RegisterDomains(const std::string& key) {
  if (!registered_keys_.insert(key).second) return;
  DomainTable& table = domains_[key];
  if (key == v1::kLabelHostname) return;
  if (key == v1::kLabelTopologyZone) {
    for (const auto& z : pairs_.zones) table.Intern(z);
  } else if (key == v1::kCapacityTypeLabelKey) {
    for (const auto& ct : pairs_.capacity_types) table.Intern(ct);
  } else {
    for (const auto& ti : types_) {
      const Requirement* r = ti.type->requirements().Find(key);
      if (r != nullptr && !r->complement()) {
        for (const auto& v : r->values()) table.Intern(v);
      }
    }
    for (const auto& pool : pools_) {
      const Requirement* r = pool.t->requirements.Find(key);
      if (r != nullptr && !r->complement()) {
        for (const auto& v : r->values()) table.Intern(v);
      }
    }
  }
  table.static_size = table.names.size();
  for (size_t ni = 0; ni < nodes_.size(); ++ni) {
    auto it = nodes_[ni].labels.find(key);
    if (it == nodes_[ni].labels.end()) continue;
    if (static_cast<size_t>(table.Intern(it->second)) >= table.static_size) {
      node_shapes_domains_[ni] = 1;
    }
  }
  table.registered_size = table.names.size();
}

int SolverImpl::GroupFor(GroupKind kind, const std::string& ns,
                         const apis::core::PodAffinityTerm& term, const Pod& owner) {
  TopologyGroup g;
  g.kind = kind;
  g.key = std::string(scheduling::NormalizeLabelKey(term.topology_key));
  if (term.label_selector) g.selector = *term.label_selector;
  for (const auto& k : term.match_label_keys) {
    auto it = owner.metadata.labels.find(k);
    if (it != owner.metadata.labels.end()) {
      g.selector.match_expressions.push_back(
          {k, apis::core::LabelSelectorOperator::kIn, {it->second}});
    }
  }
  for (const auto& k : term.mismatch_label_keys) {
    auto it = owner.metadata.labels.find(k);
    if (it != owner.metadata.labels.end()) {
      g.selector.match_expressions.push_back(
          {k, apis::core::LabelSelectorOperator::kNotIn, {it->second}});
    }
  }
  // An absent selector selects nothing: make it unmatchable.
  if (!term.label_selector) {
    g.selector.match_expressions.push_back(
        {"dovetail.internal/none", apis::core::LabelSelectorOperator::kExists, {}});
  }
  g.namespaces = ResolveNamespaces(ns, term);
  std::string identity = absl::StrCat(static_cast<int>(kind), "|", g.key, "|",
                                      SelectorKey(g.selector), "|", g.namespaces.Key());
  return InternGroup(std::move(g), identity);
}

int SolverImpl::SpreadGroupFor(const apis::core::TopologySpreadConstraint& c, const Pod& owner,
                               const PodClass& cls) {
  TopologyGroup g;
  g.kind = GroupKind::kSpread;
  g.key = std::string(scheduling::NormalizeLabelKey(c.topology_key));
  if (c.label_selector) {
    g.selector = *c.label_selector;
  } else {
    g.selector.match_expressions.push_back(
        {"dovetail.internal/none", apis::core::LabelSelectorOperator::kExists, {}});
  }
  for (const auto& k : c.match_label_keys) {
    auto it = owner.metadata.labels.find(k);
    if (it != owner.metadata.labels.end()) {
      g.selector.match_expressions.push_back(
          {k, apis::core::LabelSelectorOperator::kIn, {it->second}});
    }
  }
  g.namespaces.names.insert(owner.metadata.namespace_);
  g.max_skew = std::max(1, c.max_skew);
  g.min_domains = c.min_domains.value_or(0);
  std::string filter_key;
  if (c.node_affinity_policy.value_or(apis::core::NodeInclusionPolicy::kHonor) ==
      apis::core::NodeInclusionPolicy::kHonor) {
    std::vector<apis::core::NodeSelectorTerm> none;
    const size_t n = std::max<size_t>(1, cls.required_terms.size());
    for (size_t t = 0; t < n; ++t) {
      auto reqs = cls.required_terms.empty()
                      ? Requirements::ForPod(owner.spec.node_selector, none)
                      : Requirements::ForPod(owner.spec.node_selector,
                                             absl::MakeConstSpan(&cls.required_terms[t], 1));
      if (!reqs.ok()) continue;
      if (reqs->empty()) {  // an unconstrained alternative: every node counts
        g.node_filters.clear();
        filter_key.clear();
        break;
      }
      absl::StrAppend(&filter_key, reqs->String(), "|or|");
      g.node_filters.push_back(std::move(*reqs));
    }
  }
  if (c.node_taints_policy.value_or(apis::core::NodeInclusionPolicy::kIgnore) ==
      apis::core::NodeInclusionPolicy::kHonor) {
    g.taint_filter = owner.spec.tolerations;
    for (const auto& t : owner.spec.tolerations) {
      absl::StrAppend(&filter_key, "|tol:", scheduling::TolerationToString(t));
    }
  }
  std::string identity =
      absl::StrCat("s|", g.key, "|", SelectorKey(g.selector), "|", g.namespaces.Key(), "|",
                   g.max_skew, "|", g.min_domains, "|", filter_key);
  auto it = group_ids_.find(identity);
  if (it != group_ids_.end()) return it->second;
  int id = InternGroup(std::move(g), identity);
  ComputeEligibleDomains(groups_[id], cls);
  return id;
}

// The domains a spread constraint's global minimum is taken over: every value the key can take
// on a node some pool could launch (pool requirements ∩ instance types ∩ offerings), plus the
// values of existing nodes, restricted by the node filter.
void SolverImpl::ComputeEligibleDomains(TopologyGroup& g, const PodClass& cls) {
  if (g.is_hostname) return;
  DomainTable& table = domains_[g.key];
  // Returns the domain admitted, -1 for none.
  auto admit = [&](const std::string& value) {
    if (!g.node_filters.empty()) {
      bool any = false;
      for (const auto& f : g.node_filters) {
        const Requirement* r = f.Find(g.key);
        if (r == nullptr || r->Has(value)) any = true;
      }
      if (!any) return -1;
    }
    const int d = table.Intern(value);
    g.eligible.insert(d);
    return d;
  };
  for (const auto& pool : pools_) {
    if (g.taint_filter && !scheduling::Tolerates(*g.taint_filter, pool.t->taints,
                                                 scheduling::PreferNoSchedule::kIgnore)
                               .ok()) {
      continue;
    }
    if (!g.FilterAdmits(pool.t->requirements, AllowUndefined::kWellKnownLabels)) continue;
    const Requirement* pool_req = pool.t->requirements.Find(g.key);
    absl::flat_hash_set<std::string> values;
    const bool zone = g.key == v1::kLabelTopologyZone;
    const bool ct = g.key == v1::kCapacityTypeLabelKey;
    pool.all_types.ForEach([&](size_t i) {
      const TypeInfo& ti = types_[i];
      if (zone || ct) {
        for (size_t p = 0; p < pairs_.zones.size(); ++p) {
          if (ti.available.test(p))
            values.insert(zone ? pairs_.zones[p] : pairs_.capacity_types[p]);
        }
        return;
      }
      const Requirement* r = ti.type->requirements().Find(g.key);
      if (r != nullptr && !r->complement()) {
        for (const auto& v : r->values()) values.insert(v);
      }
    });
    if (pool_req != nullptr && !pool_req->complement()) {
      for (const auto& v : pool_req->values()) values.insert(v);
    }
    for (const auto& v : values) {
      if (pool_req == nullptr || pool_req->Has(v)) admit(v);
    }
  }
  // A domain only existing nodes make eligible: removing them would change the minimum.
  const absl::flat_hash_set<int> from_pools = g.eligible;
  for (size_t ni = 0; ni < nodes_.size(); ++ni) {
    const NodeState& n = nodes_[ni];
    if (!NodePassesFilter(g, n)) continue;
    auto it = n.labels.find(g.key);
    if (it == n.labels.end()) continue;
    const int d = admit(it->second);
    if (d >= 0 && !from_pools.contains(d)) node_shapes_domains_[ni] = 1;
  }
  (void)cls;
}

bool SolverImpl::NodePassesFilter(const TopologyGroup& g, const NodeState& n) const {
  if (!g.FilterAdmits(n.label_reqs, AllowUndefined::kNone)) return false;
  if (g.taint_filter && !scheduling::Tolerates(*g.taint_filter, n.effective_taints,
                                               scheduling::PreferNoSchedule::kIgnore)
                             .ok()) {
    return false;
  }
  return true;
}

std::string SolverImpl::DomainOfNode(const TopologyGroup& g, const NodeState& n) const {
  auto it = n.labels.find(g.key);
  return it == n.labels.end() ? std::string() : it->second;
}

std::string SolverImpl::ClassKey(const Pod& p, const ResourceList& requests) const {
  const auto& s = p.spec;
  std::string key;
  key.reserve(256);
  absl::StrAppend(&key, p.metadata.namespace_, "\x1f");
  for (const auto& [k, v] : p.metadata.labels) {
    if (class_selector_keys_.contains(k)) absl::StrAppend(&key, k, "=", v, "\x1e");
  }
  absl::StrAppend(&key, "\x1f");
  for (const auto& [k, v] : requests) absl::StrAppend(&key, k, "=", v.MilliValue(), "\x1e");
  absl::StrAppend(&key, "\x1f");
  for (const auto& [k, v] : s.node_selector) absl::StrAppend(&key, k, "=", v, "\x1e");
  AppendSchedulingKey(s, &key);
  absl::StrAppend(&key, "\x1f");
  for (const auto& c : s.containers) {
    for (const auto& port : c.ports) {
      if (port.host_port > 0) {
        absl::StrAppend(&key, port.host_ip, ":", port.host_port, "/",
                        static_cast<int>(port.protocol.value_or(apis::core::Protocol::kTCP)), ";");
      }
    }
  }
  auto vol = in_.volume_requirements.find(&p);
  if (vol != in_.volume_requirements.end()) {
    for (const auto& alt : vol->second) absl::StrAppend(&key, "|v:", alt.String());
  }
  return key;
}

absl::Status SolverImpl::BuildClasses() {
  // Pass 1: which label keys do selectors read (only those split pods into classes).
  for (const Pod* p : class_pods_) NoteSelectorKeys(*p, &selector_keys_);
  for (const Pod* p : in_.bound_pods) {
    if (p != nullptr) NoteSelectorKeys(*p, &selector_keys_);
  }
  class_selector_keys_ = selector_keys_;

  // Pass 2: classes.
  pod_class_.reserve(class_pods_.size());
  for (size_t pi = 0; pi < class_pods_.size(); ++pi) {
    const Pod* p = class_pods_[pi];
    const auto& s = p->spec;
    const ResourceList& requests = pod_requests_[pi];
    auto vol = in_.volume_requirements.find(p);
    auto [it, inserted] =
        class_ids_.emplace(ClassKey(*p, requests), static_cast<int>(classes_.size()));
    if (inserted) {
      PodClass c;
      c.rep = p;
      c.ns = p->metadata.namespace_;
      c.labels = p->metadata.labels;
      c.requests = res_.ToAmounts(requests);
      for (const auto& ct : s.containers) {
        for (const auto& port : ct.ports) {
          if (port.host_port > 0) {
            c.ports.push_back(
                {port.host_ip, port.host_port, port.protocol.value_or(apis::core::Protocol::kTCP)});
          }
        }
      }
      if (vol != in_.volume_requirements.end()) c.volume_alternatives = vol->second;
      if (s.affinity && s.affinity->node_affinity) {
        const auto& na = *s.affinity->node_affinity;
        if (na.required) {
          c.required_terms = na.required->terms;
          for (const auto& t : na.required->terms) {
            if (!t.match_fields.empty()) c.has_match_fields = true;
          }
        }
        std::vector<const apis::core::PreferredSchedulingTerm*> pref;
        for (const auto& t : na.preferred) pref.push_back(&t);
        std::stable_sort(pref.begin(), pref.end(),
                         [](auto* a, auto* b) { return a->weight > b->weight; });
        for (auto* t : pref) c.preferred_node_terms.push_back(&t->preference);
      }
      classes_.push_back(std::move(c));
    }
    pod_class_.push_back(it->second);
  }

  // Topology groups of every class (required and preferred terms).
  for (auto& c : classes_) {
    const Pod& p = *c.rep;
    const auto& s = p.spec;
    if (s.affinity && s.affinity->pod_affinity) {
      for (const auto& t : s.affinity->pod_affinity->required) {
        c.required_affinity.push_back(GroupFor(GroupKind::kAffinity, c.ns, t, p));
      }
      std::vector<const apis::core::WeightedPodAffinityTerm*> pref;
      for (const auto& w : s.affinity->pod_affinity->preferred) pref.push_back(&w);
      std::stable_sort(pref.begin(), pref.end(),
                       [](auto* a, auto* b) { return a->weight > b->weight; });
      for (auto* w : pref)
        c.preferred_affinity.push_back(GroupFor(GroupKind::kAffinity, c.ns, w->term, p));
    }
    if (s.affinity && s.affinity->pod_anti_affinity) {
      for (const auto& t : s.affinity->pod_anti_affinity->required) {
        c.required_anti.push_back(GroupFor(GroupKind::kAntiAffinity, c.ns, t, p));
      }
      std::vector<const apis::core::WeightedPodAffinityTerm*> pref;
      for (const auto& w : s.affinity->pod_anti_affinity->preferred) pref.push_back(&w);
      std::stable_sort(pref.begin(), pref.end(),
                       [](auto* a, auto* b) { return a->weight > b->weight; });
      for (auto* w : pref) {
        c.preferred_anti.push_back(GroupFor(GroupKind::kAntiAffinity, c.ns, w->term, p));
      }
    }
    for (const auto& tsc : s.topology_spread_constraints) {
      int g = SpreadGroupFor(tsc, p, c);
      if (tsc.when_unsatisfiable == apis::core::UnsatisfiableConstraintAction::kDoNotSchedule) {
        c.spread_required.push_back(g);
      } else {
        c.spread_anyway.push_back(g);
      }
    }
    c.owner_anti_all = c.required_anti;
  }
  // Existing pods' required anti-affinity terms constrain new pods too (inverse anti-affinity).
  for (const Pod* p : in_.bound_pods) {
    if (p == nullptr || !p->spec.affinity || !p->spec.affinity->pod_anti_affinity) continue;
    for (const auto& t : p->spec.affinity->pod_anti_affinity->required) {
      GroupFor(GroupKind::kAntiAffinity, p->metadata.namespace_, t, *p);
    }
  }
  IndexGroups();
  std::vector<int> candidates;
  for (auto& c : classes_) {
    CandidateGroups(c.labels, &candidates);
    for (int g : candidates) {
      if (!groups_[g].Selects(c.ns, c.labels)) continue;
      c.selected_by.push_back(g);
      if (groups_[g].kind == GroupKind::kAntiAffinity) c.inverse.push_back(g);
    }
  }
  return absl::OkStatus();
}

void SolverImpl::IndexGroups() {
  group_index_.clear();
  unindexed_groups_.clear();
  for (size_t g = 0; g < groups_.size(); ++g) {
    const auto& labels = groups_[g].selector.match_labels;
    if (labels.empty()) {
      unindexed_groups_.push_back(static_cast<int>(g));
    } else {
      const auto& [k, v] = *labels.begin();
      group_index_[absl::StrCat(k, "\x1f", v)].push_back(static_cast<int>(g));
    }
  }
}

void SolverImpl::CandidateGroups(const StringMap& labels, std::vector<int>* out) const {
  *out = unindexed_groups_;
  std::string key;
  for (const auto& [k, v] : labels) {
    key.clear();
    absl::StrAppend(&key, k, "\x1f", v);
    auto it = group_index_.find(key);
    if (it != group_index_.end()) out->insert(out->end(), it->second.begin(), it->second.end());
  }
  std::sort(out->begin(), out->end());
}

void SolverImpl::BuildTopologyCounts() {
  if (record_contributions_) node_contributions_.assign(nodes_.size(), {});
  std::vector<int> candidates;
  for (const Pod* p : in_.bound_pods) {
    if (p == nullptr || apis::core::IsTerminal(*p) || apis::core::IsTerminating(*p)) continue;
    auto it = node_by_name_.find(p->spec.node_name);
    if (it == node_by_name_.end()) continue;
    const NodeState& n = nodes_[it->second];
    CandidateGroups(p->metadata.labels, &candidates);
    for (int gid : candidates) {
      TopologyGroup& g = groups_[gid];
      std::string d = DomainOfNode(g, n);
      if (d.empty()) continue;
      if (g.Selects(p->metadata.namespace_, p->metadata.labels) &&
          (g.kind != GroupKind::kSpread || NodePassesFilter(g, n))) {
        const int domain = domains_[g.key].Intern(d);
        g.Inc(g.counts, domain);
        ++g.total;
        if (record_contributions_) {
          node_contributions_[it->second].push_back({gid, domain, false});
        }
      }
    }
    // Owner counts for anti-affinity groups this pod owns.
    if (p->spec.affinity && p->spec.affinity->pod_anti_affinity) {
      for (const auto& t : p->spec.affinity->pod_anti_affinity->required) {
        int gid = GroupFor(GroupKind::kAntiAffinity, p->metadata.namespace_, t, *p);
        TopologyGroup& g = groups_[gid];
        std::string d = DomainOfNode(g, n);
        if (d.empty()) continue;
        const int domain = domains_[g.key].Intern(d);
        g.Inc(g.owner_counts, domain);
        if (record_contributions_) node_contributions_[it->second].push_back({gid, domain, true});
      }
    }
  }
}

void SolverImpl::Bump(int gid, int domain, bool owner, int delta) {
  TopologyGroup& g = groups_[gid];
  std::vector<int64_t>& v = owner ? g.owner_counts : g.counts;
  if (domain >= static_cast<int>(v.size())) v.resize(domain + 1, 0);
  v[domain] += delta;
  if (!owner) g.total += delta;
  if (logging_) count_log_.push_back({{gid, domain, owner}, delta});
}

// ---- variants -------------------------------------------------------------------------------

int SolverImpl::VariantFor(int cls, const RelaxState& state) {
  if (variants_by_class_.size() <= static_cast<size_t>(cls)) variants_by_class_.resize(cls + 1);
  for (int i : variants_by_class_[cls]) {
    if (variants_[i].state == state) return i;
  }
  const PodClass& c = classes_[cls];
  Variant v;
  v.cls = cls;
  v.state = state;
  const Pod& p = *c.rep;
  std::vector<apis::core::NodeSelectorTerm> terms;
  if (state.required_term < static_cast<int>(c.required_terms.size())) {
    terms.push_back(c.required_terms[state.required_term]);
  }
  const apis::core::NodeSelectorTerm* preferred = nullptr;
  if (in_.options.respect_preferences &&
      state.pref_node_dropped < static_cast<int>(c.preferred_node_terms.size())) {
    preferred = c.preferred_node_terms[state.pref_node_dropped];
  }
  auto reqs = Requirements::ForPod(p.spec.node_selector, terms, preferred);
  if (reqs.ok()) {
    v.reqs = std::move(*reqs);
    for (const auto& r : v.reqs) {
      if (absl::Status s = scheduling::ValidateRequirement(r.ToNodeSelectorRequirements().front(),
                                                           scheduling::RequirementSource::kPod);
          !s.ok() && r.key() != v1::kLabelHostname) {
        v.requirements_status = s;
        break;
      }
    }
  } else {
    v.requirements_status = reqs.status();
  }
  if (c.has_match_fields) {
    v.requirements_status =
        absl::InvalidArgumentError("node affinity with matchFields is not supported");
  }
  v.tolerations = p.spec.tolerations;
  if (state.tolerate_prefer_no_schedule) {
    v.tolerations.push_back(
        {"", apis::core::TolerationOperator::kExists, "", TaintEffect::kPreferNoSchedule});
  }
  v.owned = c.required_affinity;
  v.owned.insert(v.owned.end(), c.required_anti.begin(), c.required_anti.end());
  v.owned.insert(v.owned.end(), c.spread_required.begin(), c.spread_required.end());
  if (in_.options.respect_preferences) {
    for (size_t i = state.pref_affinity_dropped; i < c.preferred_affinity.size(); ++i) {
      v.owned.push_back(c.preferred_affinity[i]);
    }
    for (size_t i = state.pref_anti_dropped; i < c.preferred_anti.size(); ++i) {
      v.owned.push_back(c.preferred_anti[i]);
    }
    for (size_t i = state.spread_anyway_dropped; i < c.spread_anyway.size(); ++i) {
      v.owned.push_back(c.spread_anyway[i]);
    }
  }
  v.pool_fit.resize(pools_.size());
  v.node_fit.assign(nodes_.size(), -1);
  variants_.push_back(std::move(v));
  variants_by_class_[cls].push_back(static_cast<int>(variants_.size() - 1));
  return static_cast<int>(variants_.size() - 1);
}

std::optional<RelaxState> SolverImpl::NextRelaxation(const Variant& v) const {
  const PodClass& c = classes_[v.cls];
  RelaxState s = v.state;
  if (static_cast<int>(c.required_terms.size()) - s.required_term > 1) {
    ++s.required_term;
    return s;
  }
  if (!in_.options.respect_preferences) {
    if (!s.tolerate_prefer_no_schedule) {
      for (const auto& p : pools_) {
        if (p.has_prefer_no_schedule) {
          s.tolerate_prefer_no_schedule = true;
          return s;
        }
      }
    }
    return std::nullopt;
  }
  if (s.pref_affinity_dropped < static_cast<int>(c.preferred_affinity.size())) {
    ++s.pref_affinity_dropped;
    return s;
  }
  if (s.pref_anti_dropped < static_cast<int>(c.preferred_anti.size())) {
    ++s.pref_anti_dropped;
    return s;
  }
  if (s.pref_node_dropped < static_cast<int>(c.preferred_node_terms.size())) {
    ++s.pref_node_dropped;
    return s;
  }
  if (s.spread_anyway_dropped < static_cast<int>(c.spread_anyway.size())) {
    ++s.spread_anyway_dropped;
    return s;
  }
  if (!s.tolerate_prefer_no_schedule) {
    for (const auto& p : pools_) {
      if (p.has_prefer_no_schedule) {
        s.tolerate_prefer_no_schedule = true;
        return s;
      }
    }
  }
  return std::nullopt;
}

const PoolFit& SolverImpl::FitForPool(int vi, int pi) {
  PoolFit& fit = variants_[vi].pool_fit[pi];
  if (fit.computed) return fit;
  fit.computed = true;
  const Variant& v = variants_[vi];
  const PodClass& c = classes_[v.cls];
  const PoolInfo& pool = pools_[pi];
  fit.types = TypeSet(types_.size());
  if (!v.requirements_status.ok()) {
    fit.status = v.requirements_status;
    return fit;
  }
  if (absl::Status s = scheduling::Tolerates(v.tolerations, pool.t->taints); !s.ok()) {
    fit.status = s;
    return fit;
  }
  Requirements reqs = pool.t->requirements;
  if (absl::Status s = reqs.Compatible(v.reqs, AllowUndefined::kWellKnownLabels); !s.ok()) {
    fit.status = s;
    return fit;
  }
  reqs.Intersect(v.reqs);
  // Volume topology: at least one alternative must be compatible.
  if (!c.volume_alternatives.empty()) {
    bool any = false;
    for (const auto& alt : c.volume_alternatives) {
      if (reqs.Compatible(alt, AllowUndefined::kWellKnownLabels).ok()) any = true;
    }
    if (!any) {
      fit.status = absl::FailedPreconditionError(
          absl::StrCat("volume topology ", c.volume_alternatives.front().String(),
                       " is incompatible with the pool's requirements"));
      return fit;
    }
  }
  const PoolInfo::LabelFit* labels = nullptr;
  for (const auto& lf : pool.label_fits) {
    if (lf.reqs == reqs) labels = &lf;
  }
  if (labels == nullptr) {
    PoolInfo::LabelFit lf{reqs, TypeSet(types_.size()), TypeSet(types_.size()),
                          pairs_.Allowed(reqs)};
    const PairMask& allowed = lf.pairs;
    pool.types.ForEach([&](size_t i) {
      const TypeInfo& ti = types_[i];
      if (!cloudprovider::RequirementsIntersect(ti.type->requirements(), reqs)) return;
      lf.label_match.Set(i);
      if ((ti.available & allowed).any()) lf.offered.Set(i);
    });
    pools_[pi].label_fits.push_back(std::move(lf));
    labels = &pools_[pi].label_fits.back();
  }
  fit.pairs = labels->pairs;
  const bool any_label_match = labels->label_match.Any();
  const bool any_offering = labels->offered.Any();
  labels->offered.ForEach([&](size_t i) {
    if (FitsIn(c.requests, pool.effective[i])) fit.types.Set(i);
  });
  if (!fit.types.Any()) {
    if (!any_label_match) {
      // Name the minimal conflicting requirement against the pool's types.
      std::string detail;
      pool.types.ForEach([&](size_t i) {
        if (!detail.empty()) return;
        absl::Status s = types_[i].type->requirements().Intersects(reqs);
        if (!s.ok()) detail = std::string(s.message());
      });
      fit.status = absl::FailedPreconditionError(
          absl::StrCat("no instance type has the required labels", detail.empty() ? "" : " (",
                       detail, detail.empty() ? "" : ")"));
    } else if (!any_offering) {
      fit.status = absl::FailedPreconditionError(
          "no instance type has an available offering in the required zones/capacity types");
    } else {
      fit.status = absl::FailedPreconditionError(
          absl::StrCat("no instance type has enough resources for requests ",
                       absl::StrJoin(res_.ToList(c.requests), ", ",
                                     [](std::string* out, const auto& kv) {
                                       absl::StrAppend(out, kv.first, "=", kv.second.ToString());
                                     }),
                       " plus daemonset overhead"));
    }
  }
  return fit;
}

// ---- topology checks --------------------------------------------------------------------------

absl::Status SolverImpl::CheckTopologyNode(const Variant& v, const PodClass& c,
                                           const NodeState& n) const {
  for (int gid : v.owned) {
    const TopologyGroup& g = groups_[gid];
    std::string value = DomainOfNode(g, n);
    if (value.empty()) {
      return absl::FailedPreconditionError(absl::StrCat("node lacks topology key ", g.key));
    }
    const DomainTable& table = domains_.at(g.key);
    int d = table.Find(value);
    int64_t count = d < 0 ? 0 : g.Count(d);
    switch (g.kind) {
      case GroupKind::kAntiAffinity:
        if (count > 0) {
          return absl::FailedPreconditionError(
              absl::StrCat("would violate pod anti-affinity on ", g.key, "=", value));
        }
        break;
      case GroupKind::kAffinity:
        if (count == 0) {
          bool bootstrap = g.total == 0 && g.Selects(c.ns, c.labels);
          if (!bootstrap) {
            return absl::FailedPreconditionError(
                absl::StrCat("no pod matching the pod affinity in ", g.key, "=", value));
          }
        }
        break;
      case GroupKind::kSpread: {
        if (!NodePassesFilter(g, n)) break;
        int64_t self = g.Selects(c.ns, c.labels) ? 1 : 0;
        int64_t min = 0;
        if (!g.is_hostname) {
          min = std::numeric_limits<int64_t>::max();
          for (int e : g.eligible) min = std::min(min, g.Count(e));
          if (g.eligible.empty() || static_cast<int32_t>(g.eligible.size()) < g.min_domains) {
            min = 0;
          }
        }
        if (count + self - min > g.max_skew) {
          return absl::FailedPreconditionError(absl::StrCat(
              "would violate topology spread (maxSkew ", g.max_skew, ") on ", g.key, "=", value));
        }
        break;
      }
    }
  }
  for (int gid : c.inverse) {
    if (!group_active_.empty() && !group_active_[gid]) continue;
    const TopologyGroup& g = groups_[gid];
    std::string value = DomainOfNode(g, n);
    if (value.empty()) continue;
    int d = domains_.at(g.key).Find(value);
    if (d >= 0 && g.OwnerCount(d) > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("would violate the pod anti-affinity of pods on ", g.key, "=", value));
    }
  }
  return absl::OkStatus();
}

// The domains of `g.key` a claim with requirements `reqs` and offering pairs `pairs` may still
// take: its own hostname for the hostname key; otherwise the registered domains the requirement
// admits (for zone and capacity type, only those some remaining type offers).
std::vector<int> SolverImpl::ClaimDomains(const TopologyGroup& g, const Claim& claim,
                                          const Requirements& reqs, const PairMask& pairs) const {
  if (g.is_hostname) return {claim.hostname_domain};
  std::vector<int> out;
  const DomainTable& table = domains_.at(g.key);
  const Requirement* r = reqs.Find(g.key);
  const bool zone = g.key == v1::kLabelTopologyZone;
  const bool ct = g.key == v1::kCapacityTypeLabelKey;
  const PairMask offered = Offered(claim) & pairs;
  for (size_t d = 0; d < table.names.size(); ++d) {
    const std::string& name = table.names[d];
    if (r != nullptr && !r->Has(name)) continue;
    if (r == nullptr && !(zone || ct)) {
      // An undefined custom key: the claim could take any value the pool allows; only values the
      // spread group knows are candidates.
    }
    if (zone || ct) {
      bool ok = false;
      for (size_t p = 0; p < pairs_.zones.size() && !ok; ++p) {
        if (offered.test(p) && (zone ? pairs_.zones[p] : pairs_.capacity_types[p]) == name)
          ok = true;
      }
      if (!ok) continue;
    }
    if (g.kind == GroupKind::kSpread && !g.eligible.contains(static_cast<int>(d)) &&
        g.Count(static_cast<int>(d)) == 0) {
      continue;
    }
    out.push_back(static_cast<int>(d));
  }
  return out;
}

absl::Status SolverImpl::ApplyTopologyClaim(const Variant& v, const PodClass& c, Claim& claim,
                                            Requirements& reqs, PairMask& pairs,
                                            bool* permanent) const {
  *permanent = true;
  // Anti-affinity (both directions) pins the claim to one domain of the key: counts are only
  // recorded for claims whose domain is known, and an unpinned claim could land anywhere.
  auto pick = [&](const TopologyGroup& g, const std::vector<int>& allowed) {
    const bool zone = g.key == v1::kLabelTopologyZone;
    const bool ct = g.key == v1::kCapacityTypeLabelKey;
    if (!(zone || ct) || allowed.size() < 2) return allowed.front();
    const DomainTable& table = domains_.at(g.key);
    int best = allowed.front();
    double best_price = kInfPrice;
    for (int d : allowed) {
      double price = kInfPrice;
      claim.types.ForEach([&](size_t i) {
        const TypeInfo& ti = types_[i];
        for (size_t p = 0; p < pairs_.zones.size(); ++p) {
          if (!pairs.test(p) || !ti.available.test(p)) continue;
          if ((zone ? pairs_.zones[p] : pairs_.capacity_types[p]) != table.names[d]) continue;
          price = std::min(price, ti.pair_price[p]);
        }
      });
      if (price < best_price) {
        best_price = price;
        best = d;
      }
    }
    return best;
  };
  auto narrow = [&](const TopologyGroup& g, const std::vector<int>& allowed) {
    if (g.is_hostname) return;
    const DomainTable& table = domains_.at(g.key);
    std::vector<std::string> values;
    for (int d : allowed) values.push_back(table.names[d]);
    reqs.Add(Requirement::In(g.key, values));
    if (g.key == v1::kLabelTopologyZone || g.key == v1::kCapacityTypeLabelKey) {
      pairs &= pairs_.Allowed(reqs);
    }
  };
  for (int gid : v.owned) {
    const TopologyGroup& g = groups_[gid];
    std::vector<int> domains = ClaimDomains(g, claim, reqs, pairs);
    std::vector<int> allowed;
    switch (g.kind) {
      case GroupKind::kAntiAffinity:
        for (int d : domains) {
          if (g.Count(d) == 0) allowed.push_back(d);
        }
        if (allowed.empty()) {
          return absl::FailedPreconditionError(
              absl::StrCat("would violate pod anti-affinity on ", g.key));
        }
        narrow(g, {pick(g, allowed)});
        break;
      case GroupKind::kAffinity: {
        int best = -1;
        for (int d : domains) {
          if (g.Count(d) > 0 && (best < 0 || g.Count(d) > g.Count(best))) best = d;
        }
        if (best < 0) {
          bool bootstrap = g.total == 0 && g.Selects(c.ns, c.labels);
          if (!bootstrap || domains.empty()) {
            *permanent = domains.empty();
            return absl::FailedPreconditionError(
                absl::StrCat("no domain of ", g.key, " has a pod matching the pod affinity"));
          }
          best = domains.front();
        }
        narrow(g, {best});
        break;
      }
      case GroupKind::kSpread: {
        int64_t self = g.Selects(c.ns, c.labels) ? 1 : 0;
        int64_t min = 0;
        if (!g.is_hostname) {
          min = std::numeric_limits<int64_t>::max();
          for (int e : g.eligible) min = std::min(min, g.Count(e));
          if (g.eligible.empty() || static_cast<int32_t>(g.eligible.size()) < g.min_domains) {
            min = 0;
          }
        }
        int best = -1;
        for (int d : domains) {
          if (g.Count(d) + self - min > g.max_skew) continue;
          if (best < 0 || g.Count(d) < g.Count(best)) best = d;
        }
        if (best < 0) {
          // Hostname spread counts against a minimum of 0 that never moves; zonal minimums grow.
          *permanent = g.is_hostname || domains.empty();
          return absl::FailedPreconditionError(
              absl::StrCat("would violate topology spread (maxSkew ", g.max_skew, ") on ", g.key));
        }
        narrow(g, {best});
        break;
      }
    }
  }
  for (int gid : c.inverse) {
    if (!group_active_.empty() && !group_active_[gid]) continue;
    const TopologyGroup& g = groups_[gid];
    std::vector<int> domains = ClaimDomains(g, claim, reqs, pairs);
    std::vector<int> allowed;
    for (int d : domains) {
      if (g.OwnerCount(d) == 0) allowed.push_back(d);
    }
    if (allowed.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("would violate the pod anti-affinity of other pods on ", g.key));
    }
    narrow(g, {pick(g, allowed)});
  }
  return absl::OkStatus();
}

// ---- placement --------------------------------------------------------------------------------

absl::Status SolverImpl::TryNode(int vi, size_t ni) {
  Variant& v = variants_[vi];
  const PodClass& c = classes_[v.cls];
  NodeState& n = nodes_[ni];
  if (v.node_fit[ni] < 0) {
    v.node_fit[ni] = 0;
    if (!v.requirements_status.ok()) return v.requirements_status;
    if (!scheduling::Tolerates(v.tolerations, n.effective_taints).ok()) {
      return absl::FailedPreconditionError("taints");
    }
    if (!n.label_reqs.Compatible(v.reqs, AllowUndefined::kNone).ok()) {
      return absl::FailedPreconditionError("labels");
    }
    if (!c.volume_alternatives.empty()) {
      bool any = false;
      for (const auto& alt : c.volume_alternatives) {
        if (n.label_reqs.Compatible(alt, AllowUndefined::kNone).ok()) any = true;
      }
      if (!any) return absl::FailedPreconditionError("volume topology");
    }
    v.node_fit[ni] = 1;
  }
  if (v.node_fit[ni] == 0) return absl::FailedPreconditionError("incompatible");
  if (!Fits(n.used, c.requests, n.allocatable)) {
    return absl::ResourceExhaustedError("insufficient resources");
  }
  if (PortsConflict(c.ports, n.ports)) return absl::FailedPreconditionError("host port conflict");
  return CheckTopologyNode(v, c, n);
}

absl::Status SolverImpl::MinValuesOk(const Requirements& reqs, const TypeSet& types,
                                     bool* relaxed) const {
  for (const auto& r : reqs) {
    if (!r.min_values()) continue;
    absl::flat_hash_set<std::string> values;
    types.ForEach([&](size_t i) {
      const Requirement* tr = types_[i].type->requirements().Find(r.key());
      if (tr == nullptr || tr->complement()) return;
      for (const auto& v : tr->values()) {
        if (r.Has(v)) values.insert(v);
      }
    });
    if (static_cast<int32_t>(values.size()) < *r.min_values()) {
      if (in_.options.min_values_strict) {
        return absl::FailedPreconditionError(
            absl::StrCat("minValues requirement is not met for label ", r.key(), " (",
                         values.size(), " < ", *r.min_values(), ")"));
      }
      *relaxed = true;
    }
  }
  return absl::OkStatus();
}

void SolverImpl::SetTypes(Claim& claim, TypeSet types) const {
  const PoolInfo& pool = pools_[claim.pool];
  // Only a removed type that held a maximum can lower max_room.
  bool recompute = claim.max_room.empty();
  if (!recompute) {
    (claim.types - types).ForEach([&](size_t i) {
      if (recompute) return;
      const Amounts& room = pool.effective[i];
      for (size_t r = 0; r < room.size(); ++r) {
        if (room[r] >= claim.max_room[r]) recompute = true;
      }
    });
  }
  claim.types = std::move(types);
  claim.offered_stale = true;
  claim.price = -1;
  if (!recompute) return;
  claim.max_room.assign(res_.size(), 0);
  claim.types.ForEach([&](size_t i) {
    const Amounts& room = pool.effective[i];
    for (size_t r = 0; r < room.size(); ++r) {
      claim.max_room[r] = std::max(claim.max_room[r], room[r]);
    }
  });
}

const PairMask& SolverImpl::Offered(const Claim& claim) const {
  if (claim.offered_stale) {
    claim.offered.reset();
    claim.types.ForEach([&](size_t i) { claim.offered |= types_[i].available; });
    claim.offered_stale = false;
  }
  return claim.offered;
}

absl::Status SolverImpl::TryClaim(int vi, size_t ci, bool* permanent) {
  static const absl::Status kPricedOut = absl::AbortedError(
      "joining would raise the NodeClaim's price by more than a NodeClaim of its own");
  Variant& v = variants_[vi];
  const PodClass& c = classes_[v.cls];
  Claim& claim = claims_[ci];
  *permanent = true;
  const PoolFit& fit = FitForPool(vi, claim.pool);
  if (!fit.status.ok()) return fit.status;
  // No type of the claim has room left for the pod: final, as usage only grows and types only go.
  if (!Fits(claim.used, c.requests, claim.max_room)) {
    return absl::ResourceExhaustedError("no instance type fits");
  }
  const PoolInfo& pool = pools_[claim.pool];
  if (PortsConflict(c.ports, claim.ports))
    return absl::FailedPreconditionError("host port conflict");

  const bool joined =
      std::find(claim.variants.begin(), claim.variants.end(), vi) != claim.variants.end();
  if (!joined) {
    if (absl::Status s = claim.reqs.Compatible(v.reqs, AllowUndefined::kWellKnownLabels); !s.ok()) {
      return s;
    }
  }
  const bool narrow =
      !joined || !v.owned.empty() || !c.inverse.empty() || !c.volume_alternatives.empty();
  // Each volume topology alternative is tried in turn (none: one pass with no extra
  // requirements); the first that leaves an instance type wins.
  const size_t alternatives = std::max<size_t>(1, c.volume_alternatives.size());
  absl::Status last = absl::FailedPreconditionError("volume topology");
  bool transient_failure = false;
  for (size_t a = 0; a < alternatives; ++a) {
    Requirements reqs;
    const Requirements* use = &claim.reqs;
    PairMask pairs = claim.pairs;
    if (narrow) {
      reqs = claim.reqs;
      if (!joined) reqs.Intersect(v.reqs);
      if (!c.volume_alternatives.empty()) {
        const Requirements& alt = c.volume_alternatives[a];
        if (!reqs.Compatible(alt, AllowUndefined::kWellKnownLabels).ok()) continue;
        reqs.Intersect(alt);
      }
      pairs &= pairs_.Allowed(reqs);
      bool final_refusal = true;
      if (absl::Status s = ApplyTopologyClaim(v, c, claim, reqs, pairs, &final_refusal); !s.ok()) {
        // Topology counts change as pods land: this claim may accept the pod later.
        if (!final_refusal) transient_failure = true;
        last = s;
        continue;
      }
      use = &reqs;
    }
    // Price guard: a pod whose requirements or topology take offerings away from the claim (a
    // capacity type, a zone) must not raise the claim's price by more than a NodeClaim of its
    // own would cost; Place then opens one, or comes back here without the guard if it cannot.
    // Checked first on the claim's types before the resource and label filters (they only
    // remove types, so a refusal here stands), then on what is left.
    const bool guard = price_guard_ && pairs != claim.pairs;
    double limit = 0;
    auto priced_within = [&](size_t t) { return TypePrice(t, pairs, nullptr) <= limit; };
    if (guard) {
      if (claim.price < 0) claim.price = ClaimPrice(claim.types, claim.pairs);
      limit = claim.price + AlonePrice(vi, claim.pool) + 1e-9;
      if (!claim.types.AnyOf([&](size_t t) { return fit.types.Test(t) && priced_within(t); })) {
        last = kPricedOut;
        continue;
      }
    }
    TypeSet types = claim.types & fit.types;
    Amounts used = claim.used;
    AddTo(used, c.requests);
    const bool reqs_changed = use != &claim.reqs;
    // The claim's types already intersect its requirements: only what changed needs checking.
    Requirements delta;
    if (reqs_changed) {
      for (const auto& r : *use) {
        const Requirement* before = claim.reqs.Find(r.key());
        if (before == nullptr || !(*before == r)) delta.Add(r);
      }
    }
    bool any = types.RetainIf([&](size_t i) {
      return FitsIn(used, pool.effective[i]) && (types_[i].available & pairs).any();
    });
    // The guard again on the types with room, then the (costlier) label check, then the guard
    // on what is left.
    if (any && guard && !types.AnyOf(priced_within)) {
      last = kPricedOut;
      continue;
    }
    if (any && !delta.empty()) {
      any = types.RetainIf([&](size_t i) {
        return cloudprovider::RequirementsIntersect(types_[i].type->requirements(), delta);
      });
      if (any && guard && !types.AnyOf(priced_within)) {
        last = kPricedOut;
        continue;
      }
    }
    if (!any) {
      last = absl::ResourceExhaustedError("no instance type fits");
      continue;
    }
    bool relaxed = claim.min_values_relaxed;
    if (absl::Status s = MinValuesOk(*use, types, &relaxed); !s.ok()) {
      last = s;
      continue;
    }
    // Commit.
    if (reqs_changed) claim.reqs = std::move(reqs);
    if (claim.pairs != pairs) claim.price = -1;
    claim.pairs = pairs;
    if (!(types == claim.types)) SetTypes(claim, std::move(types));
    claim.used = std::move(used);
    claim.min_values_relaxed = relaxed;
    if (!joined) claim.variants.push_back(vi);
    claim.ports.insert(claim.ports.end(), c.ports.begin(), c.ports.end());
    return absl::OkStatus();
  }
  if (transient_failure) *permanent = false;
  return last;
}

absl::Status SolverImpl::TryNewClaim(int vi, int pi) {
  const PoolFit& fit = FitForPool(vi, pi);
  if (!fit.status.ok()) return fit.status;
  PoolInfo& pool = pools_[pi];
  if (pool.remaining_nodes && *pool.remaining_nodes <= 0) {
    return absl::ResourceExhaustedError("the nodepool's node limit is reached");
  }
  TypeSet types = fit.types;
  if (pool.remaining) {
    types.ForEach([&](size_t i) {
      const Amounts& cap = types_[i].capacity;
      for (size_t r = 0; r < cap.size(); ++r) {
        if (cap[r] > (*pool.remaining)[r]) {
          types.Reset(i);
          return;
        }
      }
    });
    if (!types.Any())
      return absl::ResourceExhaustedError("all instance types exceed the nodepool's limits");
  }
  Claim claim;
  claim.pool = pi;
  claim.hostname = absl::StrCat("hostname-placeholder-", claims_.size());
  claim.hostname_domain = domains_[std::string(v1::kLabelHostname)].Intern(claim.hostname);
  claim.reqs = pool.t->requirements;
  claim.pairs = pairs_.Allowed(claim.reqs);
  claim.types = TypeSet(types_.size());
  SetTypes(claim, std::move(types));
  claim.used = Amounts(res_.size(), 0);
  claim.ports = pool.ds_ports;
  claims_.push_back(std::move(claim));
  bool permanent = true;
  // A claim of its own is what the price guard compares with: no guard here.
  const bool guard = price_guard_;
  price_guard_ = false;
  absl::Status s = TryClaim(vi, claims_.size() - 1, &permanent);
  price_guard_ = guard;
  if (!s.ok()) {
    claims_.pop_back();
    return s;
  }
  // Limits: pessimistically the largest type the claim may still become.
  const Claim& c = claims_.back();
  if (pool.remaining) {
    Amounts max(res_.size(), 0);
    c.types.ForEach([&](size_t i) {
      for (size_t r = 0; r < max.size(); ++r) max[r] = std::max(max[r], types_[i].capacity[r]);
    });
    for (size_t r = 0; r < max.size(); ++r) {
      if ((*pool.remaining)[r] != std::numeric_limits<int64_t>::max()) {
        (*pool.remaining)[r] = SaturatingSub((*pool.remaining)[r], max[r]);
      }
    }
  }
  if (pool.remaining_nodes) --*pool.remaining_nodes;
  return absl::OkStatus();
}

void SolverImpl::RecordPlacement(const PodClass& c, const NodeState* node, const Claim* claim) {
  auto domain_of = [&](const TopologyGroup& g) -> int {
    if (node != nullptr) {
      std::string d = DomainOfNode(g, *node);
      return d.empty() ? -1 : domains_[g.key].Intern(d);
    }
    if (g.is_hostname) return claim->hostname_domain;
    const Requirement* r = claim->reqs.Find(g.key);
    if (r == nullptr || r->complement() || r->values().size() != 1) return -1;
    return domains_[g.key].Intern(r->values().front());
  };
  for (int gid : c.selected_by) {
    TopologyGroup& g = groups_[gid];
    if (g.kind == GroupKind::kSpread && node != nullptr && !NodePassesFilter(g, *node)) continue;
    if (g.kind == GroupKind::kSpread && claim != nullptr &&
        !g.FilterAdmits(claim->reqs, AllowUndefined::kWellKnownLabels)) {
      continue;
    }
    int d = domain_of(g);
    if (d < 0) continue;
    Bump(gid, d, false, 1);
  }
  for (int gid : c.required_anti) {
    int d = domain_of(groups_[gid]);
    if (d >= 0) Bump(gid, d, true, 1);
  }
}

bool SolverImpl::Place(const Pod* pod, int vi, std::vector<std::string>* reasons) {
  const int cls = variants_[vi].cls;
  // (a) existing nodes and in-flight NodeClaims.
  const Amounts& requests = classes_[cls].requests;
  for (size_t ni = 0; ni < nodes_.size(); ++ni) {
    // TryNode would refuse for resources.
    if (requests[0] > node_room_[ni][0] || requests[1] > node_room_[ni][1]) continue;
    if (!removed_.empty() && removed_[ni]) continue;
    if (TryNode(vi, ni).ok()) {
      NodeState& n = nodes_[ni];
      if (logging_) node_log_.emplace_back(ni, n.used, n.ports.size());
      AddTo(n.used, classes_[cls].requests);
      UpdateRoom(ni);
      n.ports.insert(n.ports.end(), classes_[cls].ports.begin(), classes_[cls].ports.end());
      n.placed.push_back(pod);
      RecordPlacement(classes_[cls], &n, nullptr);
      return true;
    }
  }
  // (b) NodeClaims opened in this pass; a per-variant cursor skips claims that can never accept
  // this variant again (requirements and resources only get tighter).
  {
    Variant& v = variants_[vi];
    std::vector<size_t> still_retry;
    for (size_t ci : std::vector<size_t>(v.retry_claims)) {
      bool permanent = true;
      if (TryClaim(vi, ci, &permanent).ok()) {
        claims_[ci].pods.push_back(pod);
        RecordPlacement(classes_[cls], nullptr, &claims_[ci]);
        return true;
      }
      if (!permanent) still_retry.push_back(ci);
    }
    variants_[vi].retry_claims = std::move(still_retry);
    for (size_t ci = variants_[vi].claim_cursor; ci < claims_.size(); ++ci) {
      bool permanent = true;
      absl::Status s = TryClaim(vi, ci, &permanent);
      if (s.ok()) {
        claims_[ci].pods.push_back(pod);
        RecordPlacement(classes_[cls], nullptr, &claims_[ci]);
        return true;
      }
      if (s.code() == absl::StatusCode::kAborted) variants_[vi].priced_out.push_back(ci);
      if (variants_[vi].claim_cursor == ci) {
        ++variants_[vi].claim_cursor;
        if (!permanent) variants_[vi].retry_claims.push_back(ci);
      } else if (!permanent) {
        // Rejected for a reason that may go away; keep it reachable.
        variants_[vi].retry_claims.push_back(ci);
      }
    }
    auto& rc = variants_[vi].retry_claims;
    std::sort(rc.begin(), rc.end());
    rc.erase(std::unique(rc.begin(), rc.end()), rc.end());
  }
  // (c) a new NodeClaim from the first pool that can host the pod.
  for (size_t pi = 0; pi < pools_.size(); ++pi) {
    absl::Status s = TryNewClaim(vi, static_cast<int>(pi));
    if (s.ok()) {
      claims_.back().pods.push_back(pod);
      RecordPlacement(classes_[cls], nullptr, &claims_.back());
      return true;
    }
    if (reasons != nullptr) {
      reasons->push_back(absl::StrCat("nodepool \"", pools_[pi].t->name, "\": ", s.message()));
    }
  }
  // (d) no new NodeClaim was possible (limits): the claims the price guard refused, unguarded.
  if (!variants_[vi].priced_out.empty()) {
    price_guard_ = false;
    bool placed = false;
    for (size_t ci : variants_[vi].priced_out) {
      bool permanent = true;
      if (TryClaim(vi, ci, &permanent).ok()) {
        claims_[ci].pods.push_back(pod);
        RecordPlacement(classes_[cls], nullptr, &claims_[ci]);
        placed = true;
        break;
      }
    }
    price_guard_ = true;
    if (placed) return true;
  }
  if (reasons != nullptr && pools_.empty()) reasons->push_back("no nodepools found");
  return false;
}

double SolverImpl::ClaimPrice(const TypeSet& types, const PairMask& pairs) const {
  double best = kInfPrice;
  types.ForEach([&](size_t t) { best = std::min(best, TypePrice(t, pairs, nullptr)); });
  return best;
}

double SolverImpl::AlonePrice(int vi, int pi) {
  PoolFit& fit = variants_[vi].pool_fit[pi];
  if (fit.alone_price < 0) fit.alone_price = ClaimPrice(fit.types, fit.pairs);
  return fit.alone_price;
}

double SolverImpl::TypePrice(size_t t, const PairMask& pairs, int* pair) const {
  double best = kInfPrice;
  const TypeInfo& ti = types_[t];
  for (size_t p = 0; p < ti.pair_price.size(); ++p) {
    if (!pairs.test(p) || !ti.available.test(p)) continue;
    if (ti.pair_price[p] < best) {
      best = ti.pair_price[p];
      if (pair != nullptr) *pair = static_cast<int>(p);
    }
  }
  return best;
}

void SolverImpl::SplitClaims() {
  absl::flat_hash_map<const Pod*, int> class_of;
  for (size_t i = 0; i < q_pods_.size(); ++i) class_of[q_pods_[i]] = q_class_[i];
  auto hostname_bound = [&](const PodClass& c) {
    if (!c.ports.empty()) return true;
    for (const std::vector<int>* list :
         {&c.selected_by, &c.inverse, &c.required_affinity, &c.required_anti, &c.spread_required,
          &c.preferred_affinity, &c.preferred_anti, &c.spread_anyway}) {
      for (int gid : *list) {
        if (groups_[gid].is_hostname) return true;
      }
    }
    return false;
  };
  std::vector<int8_t> class_bound(classes_.size(), -1);
  auto eligible = [&](const Claim& claim) {
    const PoolInfo& pool = pools_[claim.pool];
    if (pool.remaining || pool.remaining_nodes || claim.min_values_relaxed) return false;
    for (const auto& r : claim.reqs) {
      if (r.min_values()) return false;
    }
    for (const Pod* p : claim.pods) {
      const int cls = class_of.at(p);
      if (class_bound[cls] < 0) class_bound[cls] = hostname_bound(classes_[cls]) ? 1 : 0;
      if (class_bound[cls] == 1) return false;
    }
    return true;
  };
  // Claims that can trade pods: same pool, requirements and offering pairs.
  struct Group {
    std::vector<size_t> claims;
    double price = 0;
  };
  std::vector<Group> groups;
  std::vector<bool> regrouped(claims_.size(), false);
  for (size_t ci = 0; ci < claims_.size(); ++ci) {
    const Claim& claim = claims_[ci];
    if (claim.pods.empty() || !eligible(claim)) continue;
    double price = kInfPrice;
    claim.types.ForEach(
        [&](size_t i) { price = std::min(price, TypePrice(i, claim.pairs, nullptr)); });
    if (!std::isfinite(price)) continue;
    Group* g = nullptr;
    for (auto& candidate : groups) {
      const Claim& rep = claims_[candidate.claims.front()];
      if (rep.pool == claim.pool && rep.pairs == claim.pairs && rep.reqs == claim.reqs) {
        g = &candidate;
        break;
      }
    }
    if (g == nullptr) g = &groups.emplace_back();
    g->claims.push_back(ci);
    g->price += price;
  }
  std::vector<Claim> added;
  size_t next_name = claims_.size();
  for (const Group& g : groups) {
    const Claim& rep = claims_[g.claims.front()];
    const PoolInfo& pool = pools_[rep.pool];
    if (g.claims.size() < 2 && rep.pods.size() < 2) continue;
    std::vector<const Pod*> pods;
    std::vector<const Amounts*> requests;
    Amounts total(res_.size(), 0);
    for (size_t ci : g.claims) {
      for (const Pod* p : claims_[ci].pods) {
        pods.push_back(p);
        requests.push_back(&classes_[class_of.at(p)].requests);
        AddTo(total, *requests.back());
      }
    }
    // Types the group may use: compatible with its requirements and offerings.
    TypeSet compatible(types_.size());
    std::vector<double> price(types_.size(), kInfPrice);
    pool.types.ForEach([&](size_t t) {
      const double pr = TypePrice(t, rep.pairs, nullptr);
      if (!std::isfinite(pr)) return;
      if (!cloudprovider::RequirementsIntersect(types_[t].type->requirements(), rep.reqs)) return;
      compatible.Set(t);
      price[t] = pr;
    });
    struct Packing {
      double cost = kInfPrice;
      std::vector<std::vector<size_t>> bins;
      std::vector<Amounts> used;
    };
    // A cheaper packing wins; at the same cost (to a millionth of a cent), the one with fewer
    // nodes. A packing without bins is no packing: only a budget to stay within.
    auto better = [](const Packing& a, const Packing& b) {
      if (a.bins.empty()) return false;
      if (b.bins.empty()) return a.cost <= b.cost + 1e-8;
      if (a.cost < b.cost - 1e-8) return true;
      return a.cost <= b.cost + 1e-8 && a.bins.size() < b.bins.size();
    };
    // Packs `items`, sorted largest first, first fit onto nodes of type `t`; gives up (no bins)
    // past `max_bins` nodes.
    constexpr size_t kOpen = 16;  // first fit over the most recent bins only
    auto pack_on = [&](const std::vector<size_t>& items, size_t t, size_t max_bins) {
      const Amounts& room = pool.effective[t];
      Packing p;
      for (size_t i : items) {
        size_t b = p.bins.size() > kOpen ? p.bins.size() - kOpen : 0;
        while (b < p.bins.size() && !Fits(p.used[b], *requests[i], room)) ++b;
        if (b == p.bins.size()) {
          if (p.bins.size() + 1 > max_bins) return Packing{};
          p.bins.emplace_back();
          p.used.emplace_back(res_.size(), 0);
        }
        p.bins[b].push_back(i);
        AddTo(p.used[b], *requests[i]);
      }
      p.cost = static_cast<double>(p.bins.size()) * price[t];
      return p;
    };
    // Packs `items` (largest cpu first, then memory) for less than `budget`: every node of the one
    // type that comes cheapest, trying types in order of their price floor; and, while `depth` > 0,
    // "bulk and tail": most nodes of a type that is cheap per unit of what the pods need, with the
    // pods of its least-filled one or two nodes packed again (recursively) onto whatever suits the
    // remainder, so 223 small pods can go on one large node plus two small ones rather than on 15
    // mid-sized ones or two large ones. Returns the cost and the bins (no bins: nothing under
    // budget).
    std::function<Packing(std::vector<size_t>, double, int)> pack = [&](std::vector<size_t> items,
                                                                        double budget, int depth) {
      Packing best;
      best.cost = budget;
      if (items.empty()) {
        best.cost = 0;
        return best;
      }
      std::stable_sort(items.begin(), items.end(), [&](size_t a, size_t b) {
        const Amounts& ra = *requests[a];
        const Amounts& rb = *requests[b];
        return ra[0] != rb[0] ? ra[0] > rb[0] : ra[1] > rb[1];
      });
      Amounts need(res_.size(), 0), largest(res_.size(), 0);
      for (size_t i : items) {
        AddTo(need, *requests[i]);
        for (size_t d = 0; d < largest.size(); ++d) {
          largest[d] = std::max(largest[d], (*requests[i])[d]);
        }
      }
      struct Floor {
        double whole;  // whole nodes of the type
        double part;   // fractional nodes: what the capacity the pods need costs on it
        size_t t;
      };
      std::vector<Floor> order;
      compatible.ForEach([&](size_t t) {
        const Amounts& room = pool.effective[t];
        if (!FitsIn(largest, room)) return;
        double nodes = 0;
        for (size_t d = 0; d < room.size(); ++d) {
          if (need[d] > 0) {
            nodes = std::max(nodes, static_cast<double>(need[d]) / static_cast<double>(room[d]));
          }
        }
        order.push_back({std::max(1.0, std::ceil(nodes)) * price[t], nodes * price[t], t});
      });
      std::sort(order.begin(), order.end(), [](const Floor& a, const Floor& b) {
        return a.whole != b.whole ? a.whole < b.whole : a.t < b.t;
      });
      for (const Floor& f : order) {
        if (f.whole >= best.cost + 1e-8) break;
        Packing p = pack_on(items, f.t, static_cast<size_t>(best.cost / price[f.t]) + 1);
        if (better(p, best)) best = std::move(p);
      }
      if (depth <= 0) return best;
      constexpr int kBulkTypes = 4;
      std::sort(order.begin(), order.end(), [](const Floor& a, const Floor& b) {
        return a.part != b.part ? a.part < b.part : a.t < b.t;
      });
      int tried = 0;
      for (const Floor& f : order) {
        if (f.part >= best.cost + 1e-8 || tried == kBulkTypes) break;
        if (f.whole < 2 * price[f.t]) continue;  // all on one node: the loop above had it
        ++tried;
        const size_t t = f.t;
        Packing p = pack_on(items, t, static_cast<size_t>(best.cost / price[t]) + 2);
        if (p.bins.size() < 2) continue;  // over budget, or one node after all
        // Least filled last (fill: the largest share of the node any resource takes).
        const Amounts& room = pool.effective[t];
        std::vector<double> fill(p.bins.size(), 0);
        for (size_t b = 0; b < p.bins.size(); ++b) {
          for (size_t d = 0; d < room.size(); ++d) {
            if (room[d] > 0) {
              fill[b] = std::max(fill[b],
                                 static_cast<double>(p.used[b][d]) / static_cast<double>(room[d]));
            }
          }
        }
        std::vector<size_t> by_fill(p.bins.size());
        std::iota(by_fill.begin(), by_fill.end(), 0);
        std::stable_sort(by_fill.begin(), by_fill.end(),
                         [&](size_t a, size_t b) { return fill[a] > fill[b]; });
        for (size_t j = 1; j <= 2 && j < p.bins.size(); ++j) {
          const size_t kept = p.bins.size() - j;
          const double bulk = static_cast<double>(kept) * price[t];
          if (bulk >= best.cost) break;
          std::vector<size_t> tail;
          for (size_t k = kept; k < by_fill.size(); ++k) {
            const auto& bin = p.bins[by_fill[k]];
            tail.insert(tail.end(), bin.begin(), bin.end());
          }
          Packing rest = pack(std::move(tail), best.cost - bulk, depth - 1);
          if (rest.bins.empty()) continue;
          Packing mixed;
          mixed.cost = bulk + rest.cost;
          for (size_t k = 0; k < kept; ++k) {
            mixed.bins.push_back(p.bins[by_fill[k]]);
            mixed.used.push_back(p.used[by_fill[k]]);
          }
          for (auto& b : rest.bins) mixed.bins.push_back(std::move(b));
          for (auto& u : rest.used) mixed.used.push_back(std::move(u));
          if (better(mixed, best)) best = std::move(mixed);
        }
      }
      return best;
    };
    // Up to the group's cost: a re-packing is kept when it is cheaper, or as cheap on fewer nodes.
    const double budget = g.price + 1e-8;
    std::vector<size_t> all(pods.size());
    std::iota(all.begin(), all.end(), 0);
    constexpr int kTailDepth = 2;
    Packing together = pack(all, budget, kTailDepth);
    // Pods by shape (memory per cpu, rounded to a power of two GiB per vCPU), each shape on the
    // type that suits it best.
    std::map<int, std::vector<size_t>> shapes;
    for (size_t i = 0; i < pods.size(); ++i) {
      const double cpu = static_cast<double>((*requests[i])[0]);
      const double mem = static_cast<double>((*requests[i])[1]);
      int shape =
          cpu <= 0 ? 100
                   : static_cast<int>(std::lround(std::log2(std::max(1.0, mem / cpu) / (1 << 20))));
      shapes[shape].push_back(i);
    }
    Packing by_shape;
    if (shapes.size() > 1) {
      by_shape.cost = 0;
      for (auto& [shape, items] : shapes) {
        Packing p = pack(items, std::min(budget, together.cost) - by_shape.cost, kTailDepth);
        if (p.bins.empty()) {
          by_shape.cost = kInfPrice;
          break;
        }
        by_shape.cost += p.cost;
        for (auto& b : p.bins) by_shape.bins.push_back(std::move(b));
        for (auto& u : p.used) by_shape.used.push_back(std::move(u));
      }
    }
    Packing* best = better(by_shape, together) ? &by_shape : &together;
    if (best->bins.empty()) continue;
    if (best->cost >= g.price * (1 - 1e-6) && best->bins.size() >= g.claims.size()) continue;
    for (size_t b = 0; b < best->bins.size(); ++b) {
      Claim part;
      part.pool = rep.pool;
      part.hostname = absl::StrCat("hostname-placeholder-", next_name++);
      part.hostname_domain = domains_[std::string(v1::kLabelHostname)].Intern(part.hostname);
      part.reqs = rep.reqs;
      part.pairs = rep.pairs;
      part.used = best->used[b];
      TypeSet types = compatible;
      types.ForEach([&](size_t t) {
        if (!FitsIn(part.used, pool.effective[t])) types.Reset(t);
      });
      part.types = TypeSet(types_.size());
      SetTypes(part, std::move(types));
      part.ports = pool.ds_ports;
      for (size_t ci : g.claims) {
        for (int v : claims_[ci].variants) {
          if (std::find(part.variants.begin(), part.variants.end(), v) == part.variants.end()) {
            part.variants.push_back(v);
          }
        }
      }
      for (size_t i : best->bins[b]) part.pods.push_back(pods[i]);
      added.push_back(std::move(part));
    }
    for (size_t ci : g.claims) regrouped[ci] = true;
  }
  if (added.empty()) return;
  std::vector<Claim> out;
  out.reserve(claims_.size() + added.size());
  for (size_t ci = 0; ci < claims_.size(); ++ci) {
    if (!regrouped[ci]) out.push_back(std::move(claims_[ci]));
  }
  for (auto& c : added) out.push_back(std::move(c));
  claims_ = std::move(out);
}

Plan SolverImpl::Finalize() {
  Plan plan;
  // Ties in price are broken by instance-type name; rank the names once.
  std::vector<uint32_t> name_rank(types_.size());
  {
    std::vector<uint32_t> by_name(types_.size());
    std::iota(by_name.begin(), by_name.end(), 0);
    std::sort(by_name.begin(), by_name.end(), [&](uint32_t a, uint32_t b) {
      return types_[a].type->name() < types_[b].type->name();
    });
    for (uint32_t r = 0; r < by_name.size(); ++r) name_rank[by_name[r]] = r;
  }
  // Claims of one pool with the same instance types and offering pairs share their launch options
  // (common: every claim of a hostname anti-affinity workload looks alike).
  struct Option {
    size_t type;
    double price;
    int pair;
  };
  struct Launch {
    std::vector<Option> options;
    std::vector<InstanceTypePtr> instance_types;
    Requirement type_requirement;
    Requirement capacity_type_requirement;
    Amounts min_overhead;
  };
  using LaunchKey = std::tuple<int, TypeSet, std::array<uint64_t, kMaxPairs / 64>>;
  absl::flat_hash_map<LaunchKey, std::unique_ptr<Launch>> launches;
  auto pair_words = [](const PairMask& m) {
    std::array<uint64_t, kMaxPairs / 64> w{};
    for (size_t i = 0; i < kMaxPairs; ++i) {
      if (m.test(i)) w[i / 64] |= uint64_t{1} << (i % 64);
    }
    return w;
  };
  auto launch_for = [&](const Claim& claim) -> const Launch& {
    auto& slot = launches[LaunchKey(claim.pool, claim.types, pair_words(claim.pairs))];
    if (slot != nullptr) return *slot;
    slot = std::make_unique<Launch>();
    Launch& l = *slot;
    const PoolInfo& pool = pools_[claim.pool];
    claim.types.ForEach([&](size_t i) {
      int pair = -1;
      double price = TypePrice(i, claim.pairs, &pair);
      if (pair >= 0) l.options.push_back({i, price, pair});
    });
    std::sort(l.options.begin(), l.options.end(), [&](const Option& a, const Option& b) {
      if (a.price != b.price) return a.price < b.price;
      return name_rank[a.type] < name_rank[b.type];
    });
    if (l.options.size() > in_.options.max_instance_types) {
      l.options.resize(in_.options.max_instance_types);
    }
    std::vector<std::string> names;
    names.reserve(l.options.size());
    PairMask offered;
    for (const auto& o : l.options) {
      l.instance_types.push_back(types_[o.type].type);
      names.push_back(types_[o.type].type->name());
      offered |= types_[o.type].available;
      if (l.min_overhead.empty()) {
        l.min_overhead = pool.overhead[o.type];
      } else {
        for (size_t r = 0; r < l.min_overhead.size(); ++r) {
          l.min_overhead[r] = std::min(l.min_overhead[r], pool.overhead[o.type][r]);
        }
      }
    }
    offered &= claim.pairs;
    std::vector<std::string> cts;
    for (size_t p = 0; p < pairs_.zones.size(); ++p) {
      if (offered.test(p) &&
          std::find(cts.begin(), cts.end(), pairs_.capacity_types[p]) == cts.end()) {
        cts.push_back(pairs_.capacity_types[p]);
      }
    }
    l.type_requirement = Requirement::In(std::string(v1::kLabelInstanceType), names);
    l.capacity_type_requirement = Requirement::In(std::string(v1::kCapacityTypeLabelKey), cts);
    return l;
  };
  for (auto& claim : claims_) {
    const PoolInfo& pool = pools_[claim.pool];
    const Launch& launch = launch_for(claim);
    NewNodeClaim out;
    out.pool = pool.t->name;
    out.hostname = claim.hostname;
    out.instance_types = launch.instance_types;
    Amounts requests = claim.used;
    if (!launch.min_overhead.empty()) AddTo(requests, launch.min_overhead);
    out.requirements = claim.reqs;
    out.requirements.Add(launch.type_requirement);
    out.requirements.Add(launch.capacity_type_requirement);
    if (!launch.options.empty()) {
      const Option& best = launch.options.front();
      const TypeInfo& ti = types_[best.type];
      out.instance_type = ti.type->name();
      out.zone = pairs_.zones[best.pair];
      out.capacity_type = pairs_.capacity_types[best.pair];
      out.price = best.price;
      // Resolved labels of the node the plan is priced with.
      out.labels = ti.type->requirements().SingleValuedLabels();
      for (const auto& [k, val] : out.requirements.SingleValuedLabels()) out.labels[k] = val;
      out.labels[std::string(v1::kLabelInstanceType)] = out.instance_type;
      out.labels[std::string(v1::kLabelTopologyZone)] = out.zone;
      out.labels[std::string(v1::kCapacityTypeLabelKey)] = out.capacity_type;
      for (const auto& [k, val] : claim.reqs.Labels()) out.labels.emplace(k, val);
    }
    for (const auto& [k, val] : pool.t->labels) out.labels[k] = val;
    out.labels[std::string(v1::kNodePoolLabelKey)] = pool.t->name;
    out.labels[std::string(v1::kLabelHostname)] = claim.hostname;
    out.requests = res_.ToList(requests);
    out.taints = pool.t->taints;
    out.startup_taints = pool.t->startup_taints;
    out.pods = claim.pods;
    out.min_values_relaxed = claim.min_values_relaxed;
    plan.total_price += out.price;
    plan.node_claims.push_back(std::move(out));
  }
  for (const auto& n : nodes_) {
    if (!n.placed.empty()) plan.existing.push_back({n.node->name, n.placed});
  }
  return plan;
}

void SolverImpl::ComputeLowerBound(Plan& plan) {
  LpProblem lp;
  lp.dimensions = static_cast<int>(res_.size());
  auto to_double = [](const Amounts& a) { return std::vector<double>(a.begin(), a.end()); };
  // Demands: pods that were placed, by class. A bound must hold for every plan the constraints
  // allow, so each class is taken at its most relaxed: preferences dropped, PreferNoSchedule
  // tolerated, and any of its required node-affinity terms (they are ORed).
  absl::flat_hash_map<int, double> count_by_class;
  for (const auto& [pod, vi] : placed_variant_) count_by_class[variants_[vi].cls] += 1;
  std::vector<std::pair<int, double>> demands(count_by_class.begin(), count_by_class.end());
  std::sort(demands.begin(), demands.end());
  const size_t nd = demands.size();
  std::vector<std::vector<int>> lp_variants(nd);
  for (size_t di = 0; di < nd; ++di) {
    const PodClass& c = classes_[demands[di].first];
    const int terms = std::max<int>(1, static_cast<int>(c.required_terms.size()));
    for (int k = 0; k < terms; ++k) {
      RelaxState relaxed;
      relaxed.required_term = k;
      relaxed.pref_affinity_dropped = static_cast<int>(c.preferred_affinity.size());
      relaxed.pref_anti_dropped = static_cast<int>(c.preferred_anti.size());
      relaxed.pref_node_dropped = static_cast<int>(c.preferred_node_terms.size());
      relaxed.spread_anyway_dropped = static_cast<int>(c.spread_anyway.size());
      relaxed.tolerate_prefer_no_schedule = true;
      lp_variants[di].push_back(VariantFor(demands[di].first, relaxed));
    }
  }

  // Which offerings each demand may use on each pool, and which (pool, type) it fits.
  std::vector<std::vector<PairMask>> allowed(nd, std::vector<PairMask>(pools_.size()));
  // (pool, type) -> demands that fit it.
  absl::flat_hash_map<std::pair<int, int>, std::vector<int>> fitting;
  for (size_t di = 0; di < nd; ++di) {
    for (size_t pi = 0; pi < pools_.size(); ++pi) {
      TypeSet types(types_.size());
      for (int vi : lp_variants[di]) {
        const PoolFit& fit = FitForPool(vi, static_cast<int>(pi));
        if (!fit.status.ok()) continue;
        Requirements reqs = pools_[pi].t->requirements;
        reqs.Intersect(variants_[vi].reqs);
        allowed[di][pi] |= pairs_.Allowed(reqs);
        types |= fit.types;
      }
      types.ForEach([&](size_t t) {
        fitting[{static_cast<int>(pi), static_cast<int>(t)}].push_back(static_cast<int>(di));
      });
    }
  }
  // Columns: for each (pool, type), the offerings some demand may use, dropping an offering when
  // a cheaper (or equal) kept one is usable by every demand that could use it. Every real node is
  // then matched by a column at most as expensive that its pods may all use, which keeps the LP a
  // valid bound, and in the usual case only the cheapest offering of each type remains.
  std::vector<std::vector<int>> demand_columns(nd);
  std::vector<std::pair<std::pair<int, int>, std::vector<int>>> fit_list(fitting.begin(),
                                                                         fitting.end());
  std::sort(fit_list.begin(), fit_list.end());
  for (const auto& [key, ds] : fit_list) {
    const auto [pi, t] = key;
    const TypeInfo& ti = types_[t];
    struct Candidate {
      int pair;
      double price;
      std::vector<int> users;
    };
    std::vector<Candidate> candidates;
    for (size_t p = 0; p < pairs_.zones.size(); ++p) {
      if (!ti.available.test(p)) continue;
      Candidate c{static_cast<int>(p), ti.pair_price[p], {}};
      for (int d : ds) {
        if (allowed[d][pi].test(p)) c.users.push_back(d);
      }
      if (!c.users.empty()) candidates.push_back(std::move(c));
    }
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      return a.price != b.price ? a.price < b.price : a.pair < b.pair;
    });
    std::vector<const Candidate*> kept;
    for (const auto& c : candidates) {
      bool dominated = false;
      for (const Candidate* k : kept) {
        if (std::includes(k->users.begin(), k->users.end(), c.users.begin(), c.users.end())) {
          dominated = true;
          break;
        }
      }
      if (dominated) continue;
      kept.push_back(&c);
      LpColumn col;
      col.price = c.price;
      col.capacity = to_double(pools_[pi].effective[t]);
      const int column = static_cast<int>(lp.columns.size());
      lp.columns.push_back(std::move(col));
      for (int d : c.users) demand_columns[d].push_back(column);
    }
  }
  // Existing nodes' free room (usage before this pass; Run restores it for the bound).
  std::vector<int> node_column(nodes_.size(), -1);
  std::map<int, std::vector<LpDistinctGroup>> distinct;  // by topology group
  for (size_t di = 0; di < nd; ++di) {
    const auto [cls, count] = demands[di];
    const PodClass& c = classes_[cls];
    LpDemand d;
    d.count = count;
    d.request = to_double(c.requests);
    d.columns = std::move(demand_columns[di]);
    for (size_t ni = 0; ni < nodes_.size(); ++ni) {
      bool fits = false;
      for (int vi : lp_variants[di]) {
        if (variants_[vi].node_fit[ni] < 0) (void)TryNode(vi, ni);  // resolves the static fit
        if (variants_[vi].node_fit[ni] == 1) fits = true;
      }
      if (!fits) continue;
      if (node_column[ni] < 0) {
        Amounts free = nodes_[ni].allocatable;
        SubFloor(free, nodes_[ni].used);
        LpColumn col;
        col.price = 0;
        col.capacity = to_double(free);
        col.max_count = 1;
        node_column[ni] = static_cast<int>(lp.columns.size());
        lp.columns.push_back(std::move(col));
      }
      d.columns.push_back(node_column[ni]);
    }
    if (d.columns.empty()) continue;
    // A class no existing node can host needs at least one new node that can host it.
    bool any_existing = false;
    for (int col : d.columns) {
      if (lp.columns[col].max_count == 1 && lp.columns[col].price == 0) any_existing = true;
    }
    if (!any_existing) lp.distinct_groups.push_back({1, d.columns});
    // Hostname anti-affinity against itself: every such pod needs its own node.
    for (int gid : c.required_anti) {
      const TopologyGroup& g = groups_[gid];
      if (g.is_hostname && g.Selects(c.ns, c.labels)) {
        std::vector<int> cols = d.columns;
        std::sort(cols.begin(), cols.end());
        distinct[gid].push_back({count, std::move(cols)});
      }
    }
    lp.demands.push_back(std::move(d));
  }
  // Pods of one self-anti-affinity group need pairwise distinct nodes, whatever their class. For
  // each class k of the group, the nodes that can host it must number at least the pods of every
  // class of the group that can only use such nodes (its columns are a subset of k's).
  for (const auto& [gid, members] : distinct) {
    for (const auto& k : members) {
      double total = 0;
      for (const auto& m : members) {
        if (std::includes(k.columns.begin(), k.columns.end(), m.columns.begin(), m.columns.end())) {
          total += m.count;
        }
      }
      lp.distinct_groups.push_back({total, k.columns});
    }
  }
  auto result = SolveCostLowerBound(lp);
  if (result.ok()) {
    plan.lower_bound = result->bound;
  } else {
    plan.lower_bound_error = std::string(result.status().message());
  }
}

absl::Status SolverImpl::Build() {
  if (absl::Status s = BuildResources(); !s.ok()) return s;
  if (absl::Status s = BuildTypes(); !s.ok()) return s;
  if (absl::Status s = BuildPools(); !s.ok()) return s;
  if (absl::Status s = BuildNodes(); !s.ok()) return s;
  if (absl::Status s = BuildClasses(); !s.ok()) return s;
  BuildTopologyCounts();
  return absl::OkStatus();
}

absl::StatusOr<Plan> SolverImpl::Run() {
  if (absl::Status s = Build(); !s.ok()) return s;
  q_pods_ = in_.pods;
  q_class_ = pod_class_;
  return PlaceAll();
}

Plan SolverImpl::PlaceAll() {
  // Existing-node usage before this pass, for the lower bound's free-room columns.
  std::vector<Amounts> used_before;
  if (in_.options.lower_bound) {
    for (const auto& n : nodes_) used_before.push_back(n.used);
  }

  // Largest pods first: cpu desc, memory desc, then creation time and UID for determinism.
  std::vector<size_t> order(q_pods_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Amounts& ra = classes_[q_class_[a]].requests;
    const Amounts& rb = classes_[q_class_[b]].requests;
    if (ra[0] != rb[0]) return ra[0] > rb[0];
    if (ra[1] != rb[1]) return ra[1] > rb[1];
    const Pod& pa = *q_pods_[a];
    const Pod& pb = *q_pods_[b];
    auto ta = pa.metadata.creation_timestamp.value_or(absl::InfinitePast());
    auto tb = pb.metadata.creation_timestamp.value_or(absl::InfinitePast());
    if (ta != tb) return ta < tb;
    return pa.metadata.uid < pb.metadata.uid;
  });

  std::vector<int> pod_variant(q_pods_.size(), -1);
  std::vector<size_t> queue = order;
  std::vector<std::vector<std::string>> last_reasons(q_pods_.size());
  for (int round = 0; !queue.empty(); ++round) {
    std::vector<size_t> failed;
    for (size_t idx : queue) {
      const Pod* pod = q_pods_[idx];
      int vi = pod_variant[idx] >= 0 ? pod_variant[idx] : VariantFor(q_class_[idx], RelaxState{});
      std::vector<std::string> reasons;
      bool placed = false;
      while (true) {
        reasons.clear();
        if (Place(pod, vi, &reasons)) {
          placed = true;
          break;
        }
        std::optional<RelaxState> next = NextRelaxation(variants_[vi]);
        if (!next) break;
        vi = VariantFor(q_class_[idx], *next);
      }
      pod_variant[idx] = vi;
      if (placed) {
        placed_variant_.emplace_back(pod, VariantFor(q_class_[idx], RelaxState{}));
      } else {
        last_reasons[idx] = std::move(reasons);
        failed.push_back(idx);
      }
    }
    if (failed.size() == queue.size() || round > 3) {
      queue = std::move(failed);
      break;
    }
    // Pods that failed may fit now that others landed (pod affinity); retry them from scratch.
    for (size_t idx : failed) pod_variant[idx] = -1;
    queue = std::move(failed);
  }

  // Restore pre-pass usage for the bound's free-room columns.
  std::vector<Amounts> used_after;
  if (in_.options.lower_bound) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      used_after.push_back(nodes_[i].used);
      nodes_[i].used = used_before[i];
    }
  }
  if (in_.options.improve) SplitClaims();
  Plan plan = Finalize();
  for (size_t idx : queue) {
    std::string reason = absl::StrJoin(last_reasons[idx], "; ");
    if (reason.empty()) reason = "no nodepool could host the pod";
    plan.unschedulable.push_back({q_pods_[idx], std::move(reason)});
  }
  std::sort(plan.unschedulable.begin(), plan.unschedulable.end(),
            [](const Unschedulable& a, const Unschedulable& b) {
              return PodKey(*a.pod) < PodKey(*b.pod);
            });
  if (in_.options.lower_bound) {
    const auto start = std::chrono::steady_clock::now();
    ComputeLowerBound(plan);
    plan.lower_bound_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (size_t i = 0; i < nodes_.size(); ++i) nodes_[i].used = used_after[i];
  }
  return plan;
}

// ---- prepared solver (Session) ----------------------------------------------------------------

class PreparedSolverImpl final : public internal::PreparedSolver {
 public:
  explicit PreparedSolverImpl(const Input& base) : base_(base) {}

  // False: no question can take the shortcut.
  bool Init();

  std::optional<absl::StatusOr<Plan>> Simulate(std::span<const size_t> removed_nodes,
                                               std::span<const Pod* const> moved_pods) override;

 private:
  // The class of a moved pod: by pointer, else by content; -1 when no prepared class matches.
  int ClassOf(const Pod& p) const;
  // False when the question needs the full solve. Sets impl_->group_active_.
  bool Admissible(std::span<const size_t> removed_nodes);

  const Input& base_;
  std::vector<const Pod*> class_pods_;  // base.pods, then the bound pods
  std::vector<ResourceList> requests_;  // aligned with class_pods_
  std::unique_ptr<SolverImpl> impl_;
  absl::flat_hash_map<const Pod*, int> class_of_;
  absl::flat_hash_map<std::string, int> node_index_;
  // Per node: removing it changes the domain tables, a spread group's eligible domains or the
  // resource dimensions.
  std::vector<char> node_sensitive_;
  // Selector keys no pending pod reads: the nodes whose bound pods read them (the key must
  // survive a question for the classes to stay the same), whether a bound pod on no known node
  // reads it, and per class the ones its pods read.
  std::vector<std::vector<int>> key_nodes_;
  std::vector<char> key_always_;
  std::vector<std::vector<int>> class_keys_;
  // Anti-affinity groups: owned by a pending pod's class, by how many bound pods (required terms),
  // per node the groups its bound pods own, per class the groups it owns.
  std::vector<char> group_base_owned_;
  std::vector<int> group_bound_owners_;
  std::vector<std::vector<int>> node_owned_groups_;
  std::vector<std::vector<int>> class_owned_groups_;
  // Classes whose inverse anti-affinity rules could apply in another order in the reduced input.
  std::vector<char> class_order_sensitive_;
  // Scratch per question.
  std::vector<const Pod*> q_pods_;
  std::vector<int> q_class_;
  std::vector<int> owners_left_;
};

bool PreparedSolverImpl::Init() {
  const Options& o = base_.options;
  if (o.improve || o.lower_bound) return false;
  for (size_t i = 0; i < base_.nodes.size(); ++i) {
    if (!node_index_.emplace(base_.nodes[i].name, static_cast<int>(i)).second) return false;
  }
  class_pods_ = base_.pods;
  for (const Pod* p : base_.bound_pods) {
    if (p != nullptr) class_pods_.push_back(p);
  }
  requests_.reserve(class_pods_.size());
  for (const Pod* p : class_pods_) requests_.push_back(apis::core::PodRequests(*p));

  // Resource dimensions only bound pods bring: a node carrying one shapes the dimensions.
  absl::flat_hash_set<std::string> dims = {"cpu", "memory", "pods", "ephemeral-storage", "nodes"};
  auto add_dims = [&](const ResourceList& l) {
    for (const auto& [name, _] : l) dims.insert(name);
  };
  for (const auto& pool : base_.pools) {
    for (const auto& it : pool.instance_types) {
      if (it == nullptr) return false;
      add_dims(it->capacity());
      add_dims(it->Allocatable());
    }
    if (pool.remaining_limits) add_dims(*pool.remaining_limits);
  }
  for (size_t i = 0; i < base_.pods.size(); ++i) add_dims(requests_[i]);
  for (const auto& ds : base_.daemon_sets) {
    if (ds.pod != nullptr) add_dims(apis::core::PodRequests(*ds.pod));
  }
  node_sensitive_.assign(base_.nodes.size(), 0);
  absl::flat_hash_set<std::string> bound_only;
  for (size_t i = base_.pods.size(); i < requests_.size(); ++i) {
    for (const auto& [name, _] : requests_[i]) {
      if (!dims.contains(name)) bound_only.insert(name);
    }
  }
  for (const std::string& name : bound_only) {
    bool carried = false;
    for (size_t n = 0; n < base_.nodes.size(); ++n) {
      if (base_.nodes[n].allocatable.contains(name)) {
        node_sensitive_[n] = 1;
        carried = true;
      }
    }
    if (!carried) return false;
  }

  impl_ = std::make_unique<SolverImpl>(base_, class_pods_, requests_, nullptr);
  impl_->record_contributions_ = true;
  if (!impl_->Build().ok()) return false;
  SolverImpl& s = *impl_;
  for (size_t n = 0; n < s.nodes_.size(); ++n) {
    if (s.node_shapes_domains_[n]) node_sensitive_[n] = 1;
  }
  s.domains_[std::string(v1::kLabelHostname)];  // exists before any question (stable tables)
  for (const auto& [key, table] : s.domains_) {
    if (key != v1::kLabelHostname && table.names.size() != table.registered_size) return false;
  }
  for (size_t i = 0; i < class_pods_.size(); ++i)
    class_of_.emplace(class_pods_[i], s.pod_class_[i]);

  // Selector keys.
  absl::flat_hash_set<std::string> base_keys;
  for (const Pod* p : base_.pods) NoteSelectorKeys(*p, &base_keys);
  absl::flat_hash_map<std::string, int> extra;
  auto extra_keys = [&](const Pod& p) {
    absl::flat_hash_set<std::string> keys;
    NoteSelectorKeys(p, &keys);
    std::vector<int> out;
    for (const auto& k : keys) {
      if (base_keys.contains(k)) continue;
      auto [it, inserted] = extra.emplace(k, static_cast<int>(extra.size()));
      if (inserted) {
        key_nodes_.emplace_back();
        key_always_.push_back(0);
      }
      out.push_back(it->second);
    }
    return out;
  };
  for (const Pod* p : base_.bound_pods) {
    if (p == nullptr) continue;
    auto node = node_index_.find(p->spec.node_name);
    for (int k : extra_keys(*p)) {
      if (node == node_index_.end()) {
        key_always_[k] = 1;
      } else if (key_nodes_[k].empty() || key_nodes_[k].back() != node->second) {
        key_nodes_[k].push_back(node->second);
      }
    }
  }
  class_keys_.resize(s.classes_.size());
  for (size_t c = 0; c < s.classes_.size(); ++c) class_keys_[c] = extra_keys(*s.classes_[c].rep);

  // Anti-affinity groups.
  const size_t ng = s.groups_.size();
  group_base_owned_.assign(ng, 0);
  group_bound_owners_.assign(ng, 0);
  node_owned_groups_.assign(base_.nodes.size(), {});
  class_owned_groups_.resize(s.classes_.size());
  class_order_sensitive_.assign(s.classes_.size(), 0);
  for (size_t c = 0; c < s.classes_.size(); ++c) {
    const PodClass& cls = s.classes_[c];
    class_owned_groups_[c] = cls.required_anti;
    class_owned_groups_[c].insert(class_owned_groups_[c].end(), cls.preferred_anti.begin(),
                                  cls.preferred_anti.end());
    bool other_key = false;
    for (int g : cls.inverse) other_key |= !s.groups_[g].is_hostname;
    class_order_sensitive_[c] = cls.inverse.size() >= 2 && other_key;
  }
  for (size_t i = 0; i < base_.pods.size(); ++i) {
    const int c = s.pod_class_[i];
    if (class_order_sensitive_[c]) return false;
    for (int g : class_owned_groups_[c]) group_base_owned_[g] = 1;
  }
  for (const Pod* p : base_.bound_pods) {
    if (p == nullptr || !p->spec.affinity || !p->spec.affinity->pod_anti_affinity) continue;
    auto node = node_index_.find(p->spec.node_name);
    for (const auto& t : p->spec.affinity->pod_anti_affinity->required) {
      const int g = s.GroupFor(GroupKind::kAntiAffinity, p->metadata.namespace_, t, *p);
      ++group_bound_owners_[g];
      if (node != node_index_.end()) node_owned_groups_[node->second].push_back(g);
    }
  }
  if (s.groups_.size() != ng) return false;  // every group exists after Build
  s.removed_.assign(s.nodes_.size(), 0);
  s.group_active_.assign(ng, 1);
  return true;
}

int PreparedSolverImpl::ClassOf(const Pod& p) const {
  auto it = class_of_.find(&p);
  if (it != class_of_.end()) return it->second;
  auto c = impl_->class_ids_.find(impl_->ClassKey(p, apis::core::PodRequests(p)));
  return c == impl_->class_ids_.end() ? -1 : c->second;
}

bool PreparedSolverImpl::Admissible(std::span<const size_t> removed_nodes) {
  SolverImpl& s = *impl_;
  for (size_t n : removed_nodes) {
    if (node_sensitive_[n]) return false;
  }
  const size_t nb = base_.pods.size();
  for (size_t i = nb; i < q_class_.size(); ++i) {
    if (class_order_sensitive_[q_class_[i]]) return false;
  }
  // Every selector key must still be read by some pod of the reduced input.
  for (size_t k = 0; k < key_nodes_.size(); ++k) {
    if (key_always_[k]) continue;
    bool read = false;
    for (int n : key_nodes_[k]) {
      if (!s.removed_[n]) {
        read = true;
        break;
      }
    }
    for (size_t i = nb; i < q_class_.size() && !read; ++i) {
      for (int ck : class_keys_[q_class_[i]]) read |= ck == static_cast<int>(k);
    }
    if (!read) return false;
  }
  // Anti-affinity groups only pods that are gone own do not exist in the reduced input.
  owners_left_ = group_bound_owners_;
  for (size_t n : removed_nodes) {
    if (s.removed_[n] != 1) continue;  // counted once even when listed twice
    s.removed_[n] = 2;
    for (int g : node_owned_groups_[n]) --owners_left_[g];
  }
  for (size_t n : removed_nodes) s.removed_[n] = 1;
  for (size_t g = 0; g < s.groups_.size(); ++g) {
    if (s.groups_[g].kind != GroupKind::kAntiAffinity) continue;
    s.group_active_[g] = group_base_owned_[g] || owners_left_[g] > 0;
  }
  for (size_t i = nb; i < q_class_.size(); ++i) {
    for (int g : class_owned_groups_[q_class_[i]]) s.group_active_[g] = 1;
  }
  return true;
}

std::optional<absl::StatusOr<Plan>> PreparedSolverImpl::Simulate(
    std::span<const size_t> removed_nodes, std::span<const Pod* const> moved_pods) {
  SolverImpl& s = *impl_;
  q_pods_.assign(base_.pods.begin(), base_.pods.end());
  q_pods_.insert(q_pods_.end(), moved_pods.begin(), moved_pods.end());
  q_class_.assign(s.pod_class_.begin(), s.pod_class_.begin() + base_.pods.size());
  for (const Pod* p : moved_pods) {
    const int c = ClassOf(*p);
    if (c < 0) return std::nullopt;
    q_class_.push_back(c);
  }
  for (size_t n : removed_nodes) s.removed_[n] = 1;
  if (!Admissible(removed_nodes)) {
    for (size_t n : removed_nodes) s.removed_[n] = 0;
    return std::nullopt;
  }

  // Prepare: fresh claims and cursors; record what placement changes.
  s.claims_.clear();
  s.placed_variant_.clear();
  for (auto& v : s.variants_) {
    v.claim_cursor = 0;
    v.retry_claims.clear();
    v.priced_out.clear();
  }
  std::vector<std::pair<std::optional<Amounts>, std::optional<int64_t>>> limits;
  limits.reserve(s.pools_.size());
  for (const auto& p : s.pools_) limits.emplace_back(p.remaining, p.remaining_nodes);
  std::vector<std::pair<DomainTable*, size_t>> tables;
  tables.reserve(s.domains_.size());
  for (auto& [key, table] : s.domains_) tables.emplace_back(&table, table.names.size());
  s.logging_ = true;
  for (size_t n : removed_nodes) {
    if (s.removed_[n] != 1) continue;
    s.removed_[n] = 2;
    for (const auto& c : s.node_contributions_[n]) s.Bump(c.group, c.domain, c.owner, -1);
  }
  for (size_t n : removed_nodes) s.removed_[n] = 1;

  s.q_pods_ = q_pods_;
  s.q_class_ = q_class_;
  Plan plan = s.PlaceAll();

  // Undo.
  s.logging_ = false;
  for (auto it = s.count_log_.rbegin(); it != s.count_log_.rend(); ++it) {
    s.Bump(it->first.group, it->first.domain, it->first.owner, -it->second);
  }
  s.count_log_.clear();
  for (auto it = s.node_log_.rbegin(); it != s.node_log_.rend(); ++it) {
    NodeState& n = s.nodes_[std::get<0>(*it)];
    n.used = std::move(std::get<1>(*it));
    n.ports.resize(std::get<2>(*it));
    n.placed.clear();
    s.UpdateRoom(std::get<0>(*it));
  }
  s.node_log_.clear();
  for (auto& [table, size] : tables) {
    for (size_t i = size; i < table->names.size(); ++i) table->ids.erase(table->names[i]);
    table->names.resize(size);
  }
  for (size_t p = 0; p < s.pools_.size(); ++p) {
    s.pools_[p].remaining = std::move(limits[p].first);
    s.pools_[p].remaining_nodes = limits[p].second;
  }
  s.claims_.clear();
  for (size_t n : removed_nodes) s.removed_[n] = 0;
  std::fill(s.group_active_.begin(), s.group_active_.end(), 1);
  return absl::StatusOr<Plan>(std::move(plan));
}

}  // namespace

// What re-packing with smaller NodeClaims could save, roughly: for every NodeClaim with more than
// one pod, its requests priced at its own instance type's rate per unit of the dominant resource,
// minus the same requests at the cheapest rate of any type of the pool in the same zone and
// capacity type. Re-packing cannot fix the rounding up to whole instance types, nor a zone or
// capacity type that constraints impose, only the choice of a dear type: that is what this
// measures.
double RepackPotential(const Input& input, const Plan& plan) {
  // pool/zone/capacity type/resource -> cheapest price per milli-unit of allocatable.
  absl::flat_hash_map<std::string, double> min_rate;
  auto key = [](const std::string& pool, const std::string& zone, const std::string& ct,
                const std::string& resource) {
    return absl::StrCat(pool, "\x1f", zone, "\x1f", ct, "\x1f", resource);
  };
  for (const auto& pool : input.pools) {
    for (const auto& it : pool.instance_types) {
      for (const auto& o : it->offerings()) {
        if (!o.available) continue;
        for (const auto& [name, q] : it->Allocatable()) {
          if (q.MilliValue() <= 0) continue;
          const double rate = o.price / static_cast<double>(q.MilliValue());
          auto [r, inserted] =
              min_rate.emplace(key(pool.name, o.zone, o.capacity_type, name), rate);
          if (!inserted) r->second = std::min(r->second, rate);
        }
      }
    }
  }
  double potential = 0;
  for (const auto& c : plan.node_claims) {
    if (c.pods.size() < 2 || c.instance_types.empty()) continue;
    const ResourceList& alloc = c.instance_types.front()->Allocatable();
    double at_type = 0, at_best = 0;
    for (const auto& [name, q] : c.requests) {
      auto best = min_rate.find(key(c.pool, c.zone, c.capacity_type, name));
      auto own = alloc.find(name);
      if (best == min_rate.end() || own == alloc.end() || own->second.MilliValue() <= 0) continue;
      const double amount = static_cast<double>(q.MilliValue());
      at_type = std::max(at_type, amount * c.price / static_cast<double>(own->second.MilliValue()));
      at_best = std::max(at_best, amount * best->second);
    }
    potential += std::max(0.0, at_type - at_best);
  }
  return potential;
}

absl::StatusOr<Plan> Solve(const Input& input) {
  std::vector<ResourceList> pod_requests;
  pod_requests.reserve(input.pods.size());
  for (const Pod* p : input.pods) {
    if (p == nullptr) return absl::InvalidArgumentError("null pod in input");
    pod_requests.push_back(apis::core::PodRequests(*p));
  }
  SolverImpl base(input, input.pods, pod_requests, nullptr);
  auto plan = base.Run();
  if (!plan.ok() || !input.options.improve || plan->node_claims.size() < 2) return plan;
  // Re-packing costs several packings; skip it when it could save less than 1 %.
  if (RepackPotential(input, *plan) <= 0.01 * plan->total_price) return plan;
  // Greedy packing lets a NodeClaim grow to the largest type before it is priced, which is not
  // always the cheapest way to buy the capacity. Re-pack with new NodeClaims capped at the sizes
  // the cheapest types of the first plan have, and keep the cheapest plan that places as many pods.
  auto cpu_mem = [](const cloudprovider::InstanceType& t) {
    const ResourceList& a = t.Allocatable();
    auto cpu = a.find("cpu");
    auto mem = a.find("memory");
    return std::make_pair(cpu == a.end() ? 0 : cpu->second.MilliValue(),
                          mem == a.end() ? 0 : mem->second.MilliValue());
  };
  std::vector<const cloudprovider::InstanceType*> caps;
  {
    absl::flat_hash_map<std::string, const cloudprovider::InstanceType*> by_name;
    for (const auto& pool : input.pools) {
      for (const auto& it : pool.instance_types) by_name[it->name()] = it.get();
    }
    // The types the plan chose, by how much money they carry, plus the cheapest type per unit of
    // the plan's dominant resource among the options of its largest NodeClaims.
    absl::flat_hash_map<std::string, double> spend;
    for (const auto& c : plan->node_claims) spend[c.instance_type] += c.price;
    std::vector<std::pair<double, std::string>> ranked;
    for (const auto& [name, money] : spend) ranked.emplace_back(money, name);
    std::sort(ranked.rbegin(), ranked.rend());
    for (const auto& [money, name] : ranked) {
      if (caps.size() >= 3) break;
      auto it = by_name.find(name);
      if (it != by_name.end()) caps.push_back(it->second);
    }
    // Types that are cheap per vCPU among the first claim's options (sized at most its type).
    const auto& first = plan->node_claims.front();
    const cloudprovider::InstanceType* best = nullptr;
    double best_ratio = std::numeric_limits<double>::infinity();
    for (const auto& it : first.instance_types) {
      const Offering* o = nullptr;
      double price = std::numeric_limits<double>::infinity();
      for (const auto& off : it->offerings()) {
        if (off.available && off.price < price) {
          price = off.price;
          o = &off;
        }
      }
      auto cpu = it->Allocatable().find("cpu");
      if (o == nullptr || cpu == it->Allocatable().end() || cpu->second.MilliValue() <= 0) continue;
      double ratio = price / static_cast<double>(cpu->second.MilliValue());
      if (ratio < best_ratio) {
        best_ratio = ratio;
        best = it.get();
      }
    }
    if (best != nullptr && std::find(caps.begin(), caps.end(), best) == caps.end()) {
      caps.push_back(best);
    }
    // The types that buy the pods' aggregate cpu and memory, in the proportion the pods ask for
    // them, at the lowest price, among those that hold the largest pod: NodeClaims capped there
    // fill up in that proportion.
    double demand_cpu = 0, demand_mem = 0, max_cpu = 0, max_mem = 0;
    for (const auto& r : pod_requests) {
      auto cpu = r.find("cpu");
      auto mem = r.find("memory");
      const double c = cpu == r.end() ? 0 : static_cast<double>(cpu->second.MilliValue());
      const double m = mem == r.end() ? 0 : static_cast<double>(mem->second.MilliValue());
      demand_cpu += c;
      demand_mem += m;
      max_cpu = std::max(max_cpu, c);
      max_mem = std::max(max_mem, m);
    }
    std::vector<std::pair<double, const cloudprovider::InstanceType*>> shaped;
    for (const auto& pool : input.pools) {
      for (const auto& it : pool.instance_types) {
        double price = std::numeric_limits<double>::infinity();
        for (const auto& off : it->offerings()) {
          if (off.available) price = std::min(price, off.price);
        }
        const auto [cpu, mem] = cpu_mem(*it);
        if (!std::isfinite(price) || cpu < max_cpu || mem < max_mem) continue;
        double share = std::numeric_limits<double>::infinity();
        if (demand_cpu > 0) share = std::min(share, static_cast<double>(cpu) / demand_cpu);
        if (demand_mem > 0) share = std::min(share, static_cast<double>(mem) / demand_mem);
        if (!std::isfinite(share) || share <= 0) continue;
        shaped.emplace_back(price / share, it.get());
      }
    }
    std::sort(shaped.begin(), shaped.end());
    for (size_t i = 0; i < shaped.size() && i < 2; ++i) {
      if (std::find(caps.begin(), caps.end(), shaped[i].second) == caps.end()) {
        caps.push_back(shaped[i].second);
      }
    }
  }
  // The bound stays the first plan's: capped runs see fewer instance types, so an LP over them
  // would not bound the real problem. (A plan placing more pods only costs more, so the first
  // plan's bound still holds for it.)
  Input capped_input = input;
  capped_input.options.lower_bound = false;
  const std::optional<double> bound = plan->lower_bound;
  const std::string bound_error = plan->lower_bound_error;
  const double bound_seconds = plan->lower_bound_seconds;
  for (const auto* cap : caps) {
    // A cap that admits every type the plan launches admits every intermediate state of every
    // NodeClaim too (pods are only added), so it would repeat the packing (up to zone choices).
    const auto [cap_cpu, cap_mem] = cpu_mem(*cap);
    bool excludes = false;
    for (const auto& c : plan->node_claims) {
      if (c.instance_types.empty()) continue;
      const auto [cpu, mem] = cpu_mem(*c.instance_types.front());
      if (cpu > cap_cpu || mem > cap_mem) excludes = true;
    }
    if (!excludes) continue;
    SolverImpl capped(capped_input, capped_input.pods, pod_requests, cap);
    auto alt = capped.Run();
    if (!alt.ok()) continue;
    // Only a plan that places every pod the current one places may replace it (it must not
    // trade one pod for another, and the bound of the first plan then still holds).
    absl::flat_hash_set<const Pod*> left_out;
    for (const auto& u : plan->unschedulable) left_out.insert(u.pod);
    bool superset = true;
    for (const auto& u : alt->unschedulable) {
      if (!left_out.contains(u.pod)) superset = false;
    }
    if (superset && alt->total_price < plan->total_price - 1e-9) plan = std::move(alt);
  }
  plan->lower_bound = bound;
  plan->lower_bound_error = bound_error;
  plan->lower_bound_seconds = bound_seconds;
  return plan;
}

std::unique_ptr<internal::PreparedSolver> internal::PreparedSolver::Create(const Input& base) {
  auto p = std::make_unique<PreparedSolverImpl>(base);
  if (!p->Init()) return nullptr;
  return p;
}

}  // namespace dovetail::solver
