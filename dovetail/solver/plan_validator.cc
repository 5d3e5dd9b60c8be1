#include "dovetail/solver/plan_validator.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dovetail/apis/core/pod_requests.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/saturating.h"
#include "dovetail/scheduling/label_selector.h"
#include "dovetail/scheduling/requirements.h"
#include "dovetail/scheduling/taints.h"

namespace dovetail::solver {
namespace {

using apis::core::LabelSelector;
using apis::core::LabelSelectorOperator;
using apis::core::NodeInclusionPolicy;
using apis::core::NodeSelectorTerm;
using apis::core::PodAffinityTerm;
using apis::core::Protocol;
using apis::core::Taint;
using apis::core::TopologySpreadConstraint;
using apis::core::UnsatisfiableConstraintAction;
using cloudprovider::InstanceType;
using cloudprovider::Offering;
using scheduling::AllowUndefined;
using scheduling::Requirement;
using scheduling::Requirements;
namespace v1 = apis::v1;

constexpr double kPriceEpsilon = 1e-9;

// Resource amounts in milli-units by resource name.
using ResourceAmounts = std::map<std::string, int64_t, std::less<>>;

void Accumulate(ResourceAmounts& into, const ResourceList& list) {
  for (const auto& [name, q] : list) into[name] = SaturatingAdd(into[name], q.MilliValue());
}
int64_t AmountOf(const ResourceList& list, const std::string& name) {
  auto it = list.find(name);
  return it == list.end() ? 0 : it->second.MilliValue();
}
std::string FormatAmount(const std::string& name, int64_t milli) {
  const bool binary = name == "memory" || name == "ephemeral-storage";
  return Quantity::FromMilli(milli, binary ? QuantityFormat::kBinarySI : QuantityFormat::kDecimalSI)
      .ToString();
}

std::string PodName(const Pod& p) {
  return absl::StrCat(p.metadata.namespace_, "/", p.metadata.name);
}
std::string PodSubject(const Pod& p) { return absl::StrCat("pod ", PodName(p)); }

const std::string* Lookup(const apis::core::StringMap& labels, std::string_view key) {
  auto it = labels.find(key);
  return it == labels.end() ? nullptr : &it->second;
}

// A NodeSelectorRequirement evaluated against a node's labels, as Kubernetes does: a missing label
// only satisfies NotIn and DoesNotExist.
bool LabelsSatisfy(const Requirement& r, const apis::core::StringMap& labels) {
  const std::string* v = Lookup(labels, r.key());
  if (v == nullptr) {
    auto op = r.Operator();
    return op == apis::core::SelectorOperator::kNotIn ||
           op == apis::core::SelectorOperator::kDoesNotExist;
  }
  return r.Has(*v);
}

// The first requirement the labels do not satisfy, or nullptr.
const Requirement* FirstUnsatisfied(const Requirements& reqs, const apis::core::StringMap& labels) {
  for (const Requirement& r : reqs) {
    if (!LabelsSatisfy(r, labels)) return &r;
  }
  return nullptr;
}

std::string DescribeLabel(const apis::core::StringMap& labels, const std::string& key) {
  const std::string* v = Lookup(labels, key);
  return v == nullptr ? absl::StrCat(key, " (absent)") : absl::StrCat(key, "=", *v);
}

// Pod keys are matched against nodes after Karpenter's key normalisation (the nodes Dovetail
// builds carry the GA keys only).
NodeSelectorTerm NormalizeTerm(NodeSelectorTerm t) {
  for (auto& e : t.match_expressions) e.key = std::string(scheduling::NormalizeLabelKey(e.key));
  return t;
}

// ---- host ports -------------------------------------------------------------------------------

struct PortUse {
  std::string ip;
  int32_t port = 0;
  Protocol protocol = Protocol::kTCP;
  std::string owner;  // "pod ns/name" or "daemonset ns/name"
  bool from_plan = false;
};

bool Wildcard(const std::string& ip) { return ip.empty() || ip == "0.0.0.0" || ip == "::"; }

bool PortsConflict(const PortUse& a, const PortUse& b) {
  if (a.port != b.port || a.protocol != b.protocol) return false;
  return Wildcard(a.ip) || Wildcard(b.ip) || a.ip == b.ip;
}

void AppendPorts(const apis::core::PodSpec& spec, const std::string& owner, bool from_plan,
                 std::vector<PortUse>* out) {
  for (const auto& c : spec.containers) {
    for (const auto& p : c.ports) {
      if (p.host_port <= 0) continue;
      out->push_back(
          {p.host_ip, p.host_port, p.protocol.value_or(Protocol::kTCP), owner, from_plan});
    }
  }
}

std::string ProtocolName(Protocol p) {
  switch (p) {
    case Protocol::kTCP:
      return "TCP";
    case Protocol::kUDP:
      return "UDP";
    case Protocol::kSCTP:
      return "SCTP";
  }
  return "?";
}

// ---- resolved pod constraints -----------------------------------------------------------------

struct ValidatorNamespaceSet {
  bool all = false;
  absl::flat_hash_set<std::string> names;
  bool Contains(const std::string& ns) const { return all || names.contains(ns); }
};

// A pod (anti-)affinity term with its selector and namespaces resolved (kube-scheduler's
// AffinityTerm).
struct Term {
  std::string key;
  std::optional<LabelSelector> selector;  // nullopt: selects nothing
  ValidatorNamespaceSet namespaces;
  bool Matches(const Pod& other) const {
    return selector.has_value() && namespaces.Contains(other.metadata.namespace_) &&
           scheduling::Matches(*selector, other.metadata.labels);
  }
};

struct Spread {
  std::string key;
  std::optional<LabelSelector> selector;  // nullopt: selects nothing
  int32_t max_skew = 1;
  std::optional<int32_t> min_domains;
  bool honor_affinity = true;
  bool honor_taints = false;
  bool Matches(const Pod& owner, const Pod& other) const {
    return selector.has_value() && other.metadata.namespace_ == owner.metadata.namespace_ &&
           scheduling::Matches(*selector, other.metadata.labels);
  }
};

void AddLabelKeys(const Pod& owner, const std::vector<std::string>& keys, LabelSelectorOperator op,
                  LabelSelector* selector) {
  for (const auto& k : keys) {
    const std::string* v = Lookup(owner.metadata.labels, k);
    if (v != nullptr) selector->match_expressions.push_back({k, op, {*v}});
  }
}

Term ResolveTerm(const Pod& owner, const PodAffinityTerm& t,
                 const absl::flat_hash_map<std::string, apis::core::StringMap>& ns_labels) {
  Term out;
  out.key = std::string(scheduling::NormalizeLabelKey(t.topology_key));
  if (t.label_selector) {
    out.selector = *t.label_selector;
    AddLabelKeys(owner, t.match_label_keys, LabelSelectorOperator::kIn, &*out.selector);
    AddLabelKeys(owner, t.mismatch_label_keys, LabelSelectorOperator::kNotIn, &*out.selector);
  }
  for (const auto& n : t.namespaces) out.namespaces.names.insert(n);
  if (t.namespace_selector) {
    if (t.namespace_selector->match_labels.empty() &&
        t.namespace_selector->match_expressions.empty()) {
      out.namespaces.all = true;
    } else {
      for (const auto& [name, labels] : ns_labels) {
        if (scheduling::Matches(*t.namespace_selector, labels)) out.namespaces.names.insert(name);
      }
    }
  } else if (t.namespaces.empty()) {
    out.namespaces.names.insert(owner.metadata.namespace_);
  }
  return out;
}

// ---- the materialised cluster -----------------------------------------------------------------

struct PodInfo {
  const Pod* pod = nullptr;
  bool from_plan = false;  // placed by the plan (otherwise already bound)
  bool counted = true;     // counts for topology (not terminal, not terminating)
  int node = -1;
  ResourceAmounts requests;
  std::vector<Term> affinity;
  std::vector<Term> anti;
  std::vector<Spread> spread;                    // DoNotSchedule only
  std::vector<NodeSelectorTerm> required_terms;  // normalised keys
  bool has_required_affinity = false;
  apis::core::StringMap node_selector;  // normalised keys
  bool bound = false;                   // replay state
};

// One way a NodeClaim may be launched: an option and an admissible available offering.
struct LaunchVariant {
  const InstanceType* type = nullptr;
  const Offering* offering = nullptr;
  apis::core::StringMap labels;
};

struct NodeInfo {
  std::string name;
  std::string subject;  // "node x" / "nodeclaim x"
  int claim = -1;       // index into plan.node_claims, -1 for an existing node
  const PoolTemplate* pool = nullptr;
  const InstanceType* type = nullptr;  // claims: the chosen type
  apis::core::StringMap labels;
  std::vector<Taint> taints;  // taints that matter for scheduling
  ResourceList allocatable;
  std::vector<LaunchVariant> variants;  // claims: every launch variant, chosen one excluded
  std::vector<int> pods;                // indices into pods_
  absl::flat_hash_set<std::string> daemons_present;  // existing nodes: DaemonSets already bound
};

class Validator {
 public:
  Validator(const Input& in, const Plan& plan) : in_(in), plan_(plan) {}
  std::vector<Violation> Run();

 private:
  void Report(ViolationKind kind, std::string subject, std::string message) {
    out_.push_back({kind, std::move(subject), std::move(message)});
  }

  void CheckAccounting();
  void BuildExistingNodes();
  void BuildClaims();
  void CheckClaim(size_t ci, NodeInfo& node);
  void PlacePods();
  PodInfo Resolve(const Pod* pod, bool from_plan) const;
  void CheckNodes();
  void CheckVariants();
  void CheckAntiAffinity();
  void CheckDomainsPinned();
  void Replay();
  void CheckLimitsAndPrice();

  bool NodeAffinityMatches(const PodInfo& p, const apis::core::StringMap& labels,
                           const std::string& node_name) const;
  bool DaemonRuns(size_t ds, const apis::core::StringMap& labels,
                  const std::vector<Taint>& taints) const;
  std::vector<const DaemonSetPod*> DaemonsOn(const NodeInfo& n,
                                             const apis::core::StringMap& labels) const;
  // Checks requests and host ports of `n`'s pods on a node with `labels` and `allocatable`;
  // `what` describes the launch variant ("" for the node as planned).
  void CheckFit(const NodeInfo& n, const apis::core::StringMap& labels,
                const ResourceList& allocatable, const std::string& what);
  std::set<std::string> PossibleValues(const NodeInfo& n, const std::string& key) const;

  // Replay checks: OK or the reason the pod cannot bind yet.
  bool AffinityReady(const PodInfo& p, bool allow_bootstrap, std::string* why) const;
  bool SpreadReady(int pi, std::string* why);

  struct SpreadDomains {
    bool computed = false;
    std::vector<int> nodes;                      // eligible nodes that have the key
    absl::flat_hash_set<std::string> potential;  // domains a NodePool could still launch into
    bool fresh_node = false;                     // hostname key: a new node is always possible
  };
  SpreadDomains& DomainsFor(int pi, size_t ci);
  bool PodCompatibleWithLaunch(const PodInfo& p, const Requirements& launch) const;

  const Input& in_;
  const Plan& plan_;
  std::vector<Violation> out_;
  absl::flat_hash_map<std::string, const PoolTemplate*> pools_;
  std::vector<NodeInfo> nodes_;
  absl::flat_hash_map<std::string, int> node_by_name_;
  std::vector<PodInfo> pods_;
  std::vector<PodInfo> daemons_;  // per input DaemonSet (empty PodInfo when its pod is null)
  std::vector<int> claim_node_;   // per NodeClaim: its index in nodes_
  absl::flat_hash_set<const Pod*> input_pods_;
  absl::flat_hash_set<const Pod*> placed_once_;
  std::map<std::pair<int, size_t>, SpreadDomains> spread_domains_;
};

std::vector<Violation> Validator::Run() {
  for (const auto& p : in_.pools) pools_.emplace(p.name, &p);
  for (const auto& ds : in_.daemon_sets) {
    daemons_.push_back(ds.pod != nullptr ? Resolve(ds.pod, false) : PodInfo{});
  }
  CheckAccounting();
  BuildExistingNodes();
  BuildClaims();
  PlacePods();
  CheckNodes();
  CheckVariants();
  CheckAntiAffinity();
  CheckDomainsPinned();
  Replay();
  CheckLimitsAndPrice();
  return std::move(out_);
}

void Validator::CheckAccounting() {
  for (const Pod* p : in_.pods) {
    if (p != nullptr) input_pods_.insert(p);
  }
  absl::flat_hash_map<const Pod*, int> seen;
  auto note = [&](const Pod* p, const std::string& where) {
    if (p == nullptr) {
      Report(ViolationKind::kUnknownPod, "plan", absl::StrCat("null pod ", where));
      return;
    }
    if (!input_pods_.contains(p)) {
      Report(ViolationKind::kUnknownPod, PodSubject(*p),
             absl::StrCat("is not one of the input pods but appears ", where));
      return;
    }
    if (++seen[p] == 2) {
      Report(ViolationKind::kPodDuplicated, PodSubject(*p),
             absl::StrCat("appears more than once (again ", where, ")"));
    }
  };
  for (const auto& c : plan_.node_claims) {
    for (const Pod* p : c.pods) note(p, absl::StrCat("on nodeclaim ", c.hostname));
  }
  for (const auto& e : plan_.existing) {
    for (const Pod* p : e.pods) note(p, absl::StrCat("on node ", e.node));
  }
  for (const auto& u : plan_.unschedulable) {
    note(u.pod, "as unschedulable");
    if (u.pod != nullptr && u.reason.empty()) {
      Report(ViolationKind::kMissingReason, PodSubject(*u.pod),
             "is unschedulable without a reason");
    }
  }
  for (const Pod* p : in_.pods) {
    if (p != nullptr && !seen.contains(p)) {
      Report(ViolationKind::kPodMissing, PodSubject(*p),
             "is neither placed nor reported unschedulable");
    }
  }
}

void Validator::BuildExistingNodes() {
  for (const auto& n : in_.nodes) {
    NodeInfo info;
    info.name = n.name;
    info.subject = absl::StrCat("node ", n.name);
    info.labels = n.labels;
    if (!info.labels.contains(v1::kLabelHostname)) {
      info.labels[std::string(v1::kLabelHostname)] = n.name;
    }
    for (const auto& t : n.taints) {
      // Karpenter ignores startup and known-ephemeral taints of nodes that are not initialized.
      if (!n.initialized && (scheduling::IsKnownEphemeralTaint(t) ||
                             std::find(n.startup_taint_keys.begin(), n.startup_taint_keys.end(),
                                       t.key) != n.startup_taint_keys.end())) {
        continue;
      }
      info.taints.push_back(t);
    }
    info.allocatable = n.allocatable;
    auto pool = pools_.find(n.node_pool);
    if (pool != pools_.end()) info.pool = pool->second;
    node_by_name_.emplace(n.name, static_cast<int>(nodes_.size()));
    nodes_.push_back(std::move(info));
  }
}

// The labels a node launched as (type, offering) for claim `c` carries.
apis::core::StringMap LaunchLabels(const apis::core::StringMap& base, const NewNodeClaim& c,
                                   const PoolTemplate* pool, const InstanceType& type,
                                   const Offering& offering) {
  apis::core::StringMap labels = base;
  for (const auto& [k, v] : type.requirements().SingleValuedLabels()) labels[k] = v;
  labels[std::string(v1::kLabelInstanceType)] = type.name();
  labels[std::string(v1::kLabelTopologyZone)] = offering.zone;
  labels[std::string(v1::kCapacityTypeLabelKey)] = offering.capacity_type;
  if (const Requirement* id = offering.requirements.Find(v1::kLabelTopologyZoneId);
      id != nullptr && !id->complement() && id->values().size() == 1) {
    labels[std::string(v1::kLabelTopologyZoneId)] = id->values().front();
  }
  if (pool != nullptr) {
    for (const auto& [k, v] : pool->labels) labels[k] = v;
    labels[std::string(v1::kNodePoolLabelKey)] = pool->name;
  }
  labels[std::string(v1::kLabelHostname)] = c.hostname;
  return labels;
}

void Validator::BuildClaims() {
  absl::flat_hash_set<std::string> hostnames;
  for (const auto& n : nodes_) hostnames.insert(n.labels.at(std::string(v1::kLabelHostname)));
  for (size_t ci = 0; ci < plan_.node_claims.size(); ++ci) {
    const NewNodeClaim& c = plan_.node_claims[ci];
    NodeInfo info;
    info.claim = static_cast<int>(ci);
    info.name = c.hostname;
    info.subject = absl::StrCat("nodeclaim ", c.hostname);
    if (c.hostname.empty() || !hostnames.insert(c.hostname).second) {
      Report(ViolationKind::kNodeMetadata, info.subject,
             "hostname is empty or not unique among the cluster's nodes");
    }
    auto pool = pools_.find(c.pool);
    if (pool == pools_.end()) {
      Report(ViolationKind::kUnknownPool, info.subject,
             absl::StrCat("belongs to nodepool \"", c.pool, "\", which is not in the input"));
    } else {
      info.pool = pool->second;
    }
    if (c.pods.empty()) {
      Report(ViolationKind::kEmptyNodeClaim, info.subject, "has no pods");
    }
    CheckClaim(ci, info);
    claim_node_.push_back(static_cast<int>(nodes_.size()));
    nodes_.push_back(std::move(info));
  }
}

void Validator::CheckClaim(size_t ci, NodeInfo& node) {
  const NewNodeClaim& c = plan_.node_claims[ci];
  const PoolTemplate* pool = node.pool;
  const std::string& subj = node.subject;

  // Taints: the pool's taints must be on the node; both sets count for scheduling.
  node.taints = c.taints;
  if (pool != nullptr) {
    for (const auto& t : pool->taints) {
      if (std::find(c.taints.begin(), c.taints.end(), t) == c.taints.end()) {
        Report(ViolationKind::kNodeMetadata, subj,
               absl::StrCat("lacks the nodepool's taint ", scheduling::TaintToString(t)));
        node.taints.push_back(t);
      }
    }
  }

  // Options.
  if (c.instance_types.empty()) {
    Report(ViolationKind::kInstanceType, subj, "has no instance type options");
  }
  if (c.instance_types.size() > in_.options.max_instance_types) {
    Report(ViolationKind::kInstanceType, subj,
           absl::StrCat("lists ", c.instance_types.size(),
                        " instance types, more than the maximum ", in_.options.max_instance_types));
  }
  absl::flat_hash_set<std::string> pool_types;
  if (pool != nullptr) {
    for (const auto& t : pool->instance_types) {
      if (t != nullptr) pool_types.insert(t->name());
    }
  }
  const InstanceType* chosen = nullptr;
  std::vector<const InstanceType*> usable;  // options that may really be launched
  std::vector<double> option_price;
  double cheapest = std::numeric_limits<double>::infinity();
  std::string cheapest_desc;
  for (const auto& t : c.instance_types) {
    if (t == nullptr) {
      Report(ViolationKind::kInstanceType, subj, "has a null instance type option");
      option_price.push_back(std::numeric_limits<double>::infinity());
      continue;
    }
    if (t->name() == c.instance_type) chosen = t.get();
    if (pool != nullptr && !pool_types.contains(t->name())) {
      Report(ViolationKind::kInstanceType, subj,
             absl::StrCat("option ", t->name(), " is not an instance type of nodepool ", c.pool));
    }
    if (absl::Status s = t->requirements().Intersects(c.requirements); !s.ok()) {
      Report(ViolationKind::kInstanceType, subj,
             absl::StrCat("option ", t->name(),
                          " is incompatible with the claim's requirements: ", s.message()));
      option_price.push_back(std::numeric_limits<double>::infinity());
      continue;
    }
    if (pool != nullptr) {
      if (absl::Status s = t->requirements().Intersects(pool->requirements); !s.ok()) {
        Report(ViolationKind::kInstanceType, subj,
               absl::StrCat("option ", t->name(),
                            " is incompatible with the nodepool's requirements: ", s.message()));
      }
    }
    double best = std::numeric_limits<double>::infinity();
    for (const auto& o : t->offerings()) {
      if (!o.available || !cloudprovider::RequirementsIntersect(o.requirements, c.requirements)) {
        continue;
      }
      best = std::min(best, o.price);
      if (o.price < cheapest) {
        cheapest = o.price;
        cheapest_desc = absl::StrCat(t->name(), " ", o.capacity_type, " in ", o.zone);
      }
    }
    option_price.push_back(best);
    if (std::isinf(best)) {
      Report(ViolationKind::kInstanceType, subj,
             absl::StrCat("option ", t->name(),
                          " has no available offering the claim's requirements admit"));
      continue;
    }
    usable.push_back(t.get());
  }
  for (size_t i = 1; i < option_price.size(); ++i) {
    if (std::isinf(option_price[i]) || std::isinf(option_price[i - 1])) continue;  // reported
    if (option_price[i] + kPriceEpsilon < option_price[i - 1]) {
      Report(
          ViolationKind::kOffering, subj,
          absl::StrCat("options are not ordered cheapest first (", c.instance_types[i - 1]->name(),
                       " before ", c.instance_types[i]->name(), ")"));
      break;
    }
  }
  if (chosen == nullptr) {
    Report(ViolationKind::kInstanceType, subj,
           absl::StrCat("instance type \"", c.instance_type, "\" is not one of its options"));
    // Fall back to the pool's type of that name so the rest can still be checked.
    if (pool != nullptr) {
      for (const auto& t : pool->instance_types) {
        if (t != nullptr && t->name() == c.instance_type) chosen = t.get();
      }
    }
  }
  node.type = chosen;

  // The chosen offering.
  const Offering* offering = nullptr;
  if (chosen != nullptr) {
    for (const auto& o : chosen->offerings()) {
      if (o.zone != c.zone || o.capacity_type != c.capacity_type || !o.available) continue;
      if (offering == nullptr ||
          std::abs(o.price - c.price) < std::abs(offering->price - c.price)) {
        offering = &o;
      }
    }
    if (offering == nullptr) {
      Report(ViolationKind::kOffering, subj,
             absl::StrCat(c.instance_type, " has no available ", c.capacity_type, " offering in ",
                          c.zone));
    } else {
      if (!cloudprovider::RequirementsIntersect(offering->requirements, c.requirements)) {
        Report(ViolationKind::kOffering, subj,
               absl::StrCat("offering ", c.capacity_type, " in ", c.zone,
                            " is not admitted by the claim's requirements"));
      }
      if (std::abs(offering->price - c.price) > kPriceEpsilon) {
        Report(ViolationKind::kPrice, subj,
               absl::StrCat("price ", c.price, " differs from the offering's price ",
                            offering->price));
      }
    }
  }
  if (c.price > cheapest + kPriceEpsilon) {
    Report(ViolationKind::kOffering, subj,
           absl::StrCat("is priced at ", c.price, " but a cheaper admissible offering exists: ",
                        cheapest_desc, " at ", cheapest));
  }

  // Labels of the node as planned, and of every other way it may be launched.
  apis::core::StringMap base = c.labels;
  if (chosen != nullptr) {
    for (const auto& [k, v] : chosen->requirements().SingleValuedLabels()) base.erase(k);
  }
  for (auto key : {v1::kLabelInstanceType, v1::kLabelTopologyZone, v1::kCapacityTypeLabelKey,
                   v1::kLabelTopologyZoneId}) {
    base.erase(std::string(key));
  }
  if (chosen != nullptr) {
    Offering fallback = Offering::Make(c.capacity_type, c.zone, "", c.price, true);
    node.labels = LaunchLabels(base, c, pool, *chosen, offering != nullptr ? *offering : fallback);
    node.allocatable = chosen->Allocatable();
  } else {
    node.labels = c.labels;
    node.labels[std::string(v1::kLabelHostname)] = c.hostname;
  }
  for (const auto& [k, v] : node.labels) {
    if (k == v1::kLabelTopologyZoneId) continue;  // not a label the plan must report
    const std::string* reported = Lookup(c.labels, k);
    if (reported == nullptr || *reported != v) {
      Report(ViolationKind::kNodeMetadata, subj,
             absl::StrCat("label ", k, " is ", reported == nullptr ? "absent" : *reported,
                          " but the node will carry ", v));
    }
  }
  if (const Requirement* r = FirstUnsatisfied(c.requirements, node.labels); r != nullptr) {
    Report(ViolationKind::kNodeMetadata, subj,
           absl::StrCat("node label ", DescribeLabel(node.labels, r->key()),
                        " does not satisfy the claim's requirement ", r->DebugString()));
  }
  if (pool != nullptr) {
    if (const Requirement* r = FirstUnsatisfied(pool->requirements, node.labels); r != nullptr) {
      Report(ViolationKind::kNodeMetadata, subj,
             absl::StrCat("node label ", DescribeLabel(node.labels, r->key()),
                          " does not satisfy the nodepool's requirement ", r->DebugString()));
    }
  }
  for (const InstanceType* t : usable) {
    for (const auto& o : t->offerings()) {
      if (!o.available || !cloudprovider::RequirementsIntersect(o.requirements, c.requirements)) {
        continue;
      }
      if (t == chosen && offering != nullptr && o.zone == offering->zone &&
          o.capacity_type == offering->capacity_type) {
        continue;
      }
      node.variants.push_back({t, &o, LaunchLabels(base, c, pool, *t, o)});
    }
  }

  // minValues: the options must jointly offer enough distinct values.
  auto check_min_values = [&](const Requirements& reqs, const char* whose) {
    for (const Requirement& r : reqs) {
      if (!r.min_values()) continue;
      absl::flat_hash_set<std::string> values;
      for (const auto& t : c.instance_types) {
        if (t == nullptr) continue;
        const Requirement* tr = t->requirements().Find(r.key());
        if (tr == nullptr || tr->complement()) continue;
        for (const auto& v : tr->values()) {
          if (r.Has(v)) values.insert(v);
        }
      }
      if (static_cast<int64_t>(values.size()) >= *r.min_values()) continue;
      if (in_.options.min_values_strict || !c.min_values_relaxed) {
        Report(
            ViolationKind::kMinValues, subj,
            absl::StrCat("options offer ", values.size(), " distinct values of ", r.key(),
                         ", fewer than the ", whose, " minValues ", *r.min_values(),
                         in_.options.min_values_strict ? "" : " (and it is not marked relaxed)"));
      }
    }
  };
  check_min_values(c.requirements, "claim's");
  if (pool != nullptr) check_min_values(pool->requirements, "nodepool's");
}

PodInfo Validator::Resolve(const Pod* pod, bool from_plan) const {
  PodInfo p;
  p.pod = pod;
  p.from_plan = from_plan;
  p.counted = !apis::core::IsTerminal(*pod) && !apis::core::IsTerminating(*pod);
  Accumulate(p.requests, apis::core::PodRequests(*pod));
  const auto& s = pod->spec;
  for (const auto& [k, v] : s.node_selector) {
    p.node_selector[std::string(scheduling::NormalizeLabelKey(k))] = v;
  }
  if (s.affinity) {
    if (s.affinity->node_affinity && s.affinity->node_affinity->required) {
      p.has_required_affinity = true;
      for (const auto& t : s.affinity->node_affinity->required->terms) {
        p.required_terms.push_back(NormalizeTerm(t));
      }
    }
    if (s.affinity->pod_affinity) {
      for (const auto& t : s.affinity->pod_affinity->required) {
        p.affinity.push_back(ResolveTerm(*pod, t, in_.namespace_labels));
      }
    }
    if (s.affinity->pod_anti_affinity) {
      for (const auto& t : s.affinity->pod_anti_affinity->required) {
        p.anti.push_back(ResolveTerm(*pod, t, in_.namespace_labels));
      }
    }
  }
  for (const TopologySpreadConstraint& c : s.topology_spread_constraints) {
    if (c.when_unsatisfiable != UnsatisfiableConstraintAction::kDoNotSchedule) continue;
    Spread sp;
    sp.key = std::string(scheduling::NormalizeLabelKey(c.topology_key));
    if (c.label_selector) {
      sp.selector = *c.label_selector;
      AddLabelKeys(*pod, c.match_label_keys, LabelSelectorOperator::kIn, &*sp.selector);
    }
    sp.max_skew = c.max_skew;
    sp.min_domains = c.min_domains;
    sp.honor_affinity =
        c.node_affinity_policy.value_or(NodeInclusionPolicy::kHonor) == NodeInclusionPolicy::kHonor;
    sp.honor_taints =
        c.node_taints_policy.value_or(NodeInclusionPolicy::kIgnore) == NodeInclusionPolicy::kHonor;
    p.spread.push_back(std::move(sp));
  }
  return p;
}

void Validator::PlacePods() {
  // Pods already bound to input nodes.
  for (const Pod* p : in_.bound_pods) {
    if (p == nullptr || apis::core::IsTerminal(*p)) continue;
    auto it = node_by_name_.find(p->spec.node_name);
    if (it == node_by_name_.end()) continue;
    PodInfo info = Resolve(p, false);
    info.node = it->second;
    info.bound = info.counted;
    for (const auto& ref : p->metadata.owner_references) {
      if (ref.kind == "DaemonSet") {
        nodes_[it->second].daemons_present.insert(
            absl::StrCat(p->metadata.namespace_, "/", ref.name));
      }
    }
    nodes_[it->second].pods.push_back(static_cast<int>(pods_.size()));
    pods_.push_back(std::move(info));
  }
  // Pods the plan places, each at its first appearance.
  auto place = [&](const Pod* p, int node) {
    if (p == nullptr || !input_pods_.contains(p) || !placed_once_.insert(p).second) return;
    PodInfo info = Resolve(p, true);
    info.node = node;
    nodes_[node].pods.push_back(static_cast<int>(pods_.size()));
    pods_.push_back(std::move(info));
  };
  for (const auto& e : plan_.existing) {
    auto it = node_by_name_.find(e.node);
    if (it == node_by_name_.end()) {
      Report(ViolationKind::kUnknownNode, absl::StrCat("node ", e.node),
             "receives pods but is not an input node");
      continue;
    }
    for (const Pod* p : e.pods) place(p, it->second);
  }
  for (size_t ci = 0; ci < plan_.node_claims.size(); ++ci) {
    for (const Pod* p : plan_.node_claims[ci].pods) place(p, claim_node_[ci]);
  }
}

bool Validator::NodeAffinityMatches(const PodInfo& p, const apis::core::StringMap& labels,
                                    const std::string& node_name) const {
  for (const auto& [k, v] : p.node_selector) {
    const std::string* actual = Lookup(labels, k);
    if (actual == nullptr || *actual != v) return false;
  }
  if (p.has_required_affinity &&
      !scheduling::NodeSelectorMatches(p.required_terms, labels, {{"metadata.name", node_name}})) {
    return false;
  }
  return true;
}

// A DaemonSet pod runs on a node whose NoSchedule/NoExecute taints it tolerates and whose labels
// match its nodeSelector and required node affinity (the DaemonSet controller's rule).
bool Validator::DaemonRuns(size_t ds, const apis::core::StringMap& labels,
                           const std::vector<Taint>& taints) const {
  const Pod* pod = in_.daemon_sets[ds].pod;
  if (pod == nullptr) return false;
  if (!scheduling::Tolerates(pod->spec.tolerations, taints, scheduling::PreferNoSchedule::kIgnore)
           .ok()) {
    return false;
  }
  return NodeAffinityMatches(daemons_[ds], labels, "");
}

std::vector<const DaemonSetPod*> Validator::DaemonsOn(const NodeInfo& n,
                                                      const apis::core::StringMap& labels) const {
  std::vector<const DaemonSetPod*> out;
  for (size_t i = 0; i < in_.daemon_sets.size(); ++i) {
    if (n.daemons_present.contains(in_.daemon_sets[i].name)) continue;
    if (DaemonRuns(i, labels, n.taints)) out.push_back(&in_.daemon_sets[i]);
  }
  return out;
}

void Validator::CheckFit(const NodeInfo& n, const apis::core::StringMap& labels,
                         const ResourceList& allocatable, const std::string& what) {
  bool any_plan_pod = false;
  for (int pi : n.pods) any_plan_pod |= pods_[pi].from_plan;
  if (!any_plan_pod) return;
  std::vector<const DaemonSetPod*> daemons = DaemonsOn(n, labels);

  // Resources.
  ResourceAmounts pods, ds;
  for (int pi : n.pods) {
    for (const auto& [k, v] : pods_[pi].requests) pods[k] += v;
  }
  for (const DaemonSetPod* d : daemons) Accumulate(ds, apis::core::PodRequests(*d->pod));
  std::set<std::string> names;
  for (const auto& [k, v] : pods) names.insert(k);
  for (const auto& [k, v] : ds) names.insert(k);
  for (const auto& name : names) {
    int64_t total = pods[name] + ds[name];
    int64_t cap = AmountOf(allocatable, name);
    if (total > cap) {
      Report(ViolationKind::kResources, n.subject,
             absl::StrCat(what, name, " requested ", FormatAmount(name, total), " (pods ",
                          FormatAmount(name, pods[name]), " + daemonsets ",
                          FormatAmount(name, ds[name]), ") exceeds allocatable ",
                          FormatAmount(name, cap)));
    }
  }

  // Host ports.
  std::vector<PortUse> ports;
  for (const DaemonSetPod* d : daemons) {
    AppendPorts(d->pod->spec, absl::StrCat("daemonset ", d->name), false, &ports);
  }
  for (int pi : n.pods) {
    AppendPorts(pods_[pi].pod->spec, PodSubject(*pods_[pi].pod), pods_[pi].from_plan, &ports);
  }
  for (size_t i = 0; i < ports.size(); ++i) {
    for (size_t j = i + 1; j < ports.size(); ++j) {
      if (!ports[i].from_plan && !ports[j].from_plan) continue;
      if (!PortsConflict(ports[i], ports[j])) continue;
      Report(ViolationKind::kHostPorts, n.subject,
             absl::StrCat(what, ports[i].owner, " and ", ports[j].owner, " both use host port ",
                          ports[j].port, "/", ProtocolName(ports[j].protocol)));
    }
  }
}

void Validator::CheckNodes() {
  for (const NodeInfo& n : nodes_) {
    // A claim without a known instance type was reported already; its allocatable is unknown.
    if (n.claim < 0 || n.type != nullptr) CheckFit(n, n.labels, n.allocatable, "");
    for (int pi : n.pods) {
      const PodInfo& p = pods_[pi];
      if (!p.from_plan) continue;
      const std::string subj = PodSubject(*p.pod);
      if (!NodeAffinityMatches(p, n.labels, n.name)) {
        Report(ViolationKind::kNodeAffinity, subj,
               absl::StrCat("on ", n.subject,
                            ": nodeSelector or required node affinity does not match its labels"));
      }
      if (absl::Status s = scheduling::Tolerates(p.pod->spec.tolerations, n.taints,
                                                 scheduling::PreferNoSchedule::kIgnore);
          !s.ok()) {
        Report(ViolationKind::kTaints, subj, absl::StrCat("on ", n.subject, ": ", s.message()));
      }
      auto vol = in_.volume_requirements.find(p.pod);
      if (vol != in_.volume_requirements.end() && !vol->second.empty()) {
        bool any = false;
        for (const auto& alt : vol->second) any |= FirstUnsatisfied(alt, n.labels) == nullptr;
        if (!any) {
          Report(ViolationKind::kVolumeTopology, subj,
                 absl::StrCat("on ", n.subject, ": no volume topology alternative is satisfied"));
        }
      }
    }
    if (n.claim >= 0) {
      // The claim's requests must cover its pods and fit every option it may launch as.
      const NewNodeClaim& c = plan_.node_claims[n.claim];
      ResourceAmounts pods;
      for (int pi : n.pods) {
        for (const auto& [k, v] : pods_[pi].requests) pods[k] += v;
      }
      for (const auto& [name, amount] : pods) {
        if (AmountOf(c.requests, name) < amount) {
          Report(ViolationKind::kRequests, n.subject,
                 absl::StrCat("requests ", FormatAmount(name, AmountOf(c.requests, name)), " of ",
                              name, " but its pods request ", FormatAmount(name, amount)));
        }
      }
      for (const auto& t : c.instance_types) {
        if (t == nullptr) continue;
        for (const auto& [name, q] : c.requests) {
          if (q.MilliValue() > AmountOf(t->Allocatable(), name)) {
            Report(ViolationKind::kRequests, n.subject,
                   absl::StrCat("option ", t->name(), " has ", name, " allocatable ",
                                FormatAmount(name, AmountOf(t->Allocatable(), name)),
                                ", less than the claim's requests ", q.ToString()));
          }
        }
      }
    }
  }
}

// Every launch variant other than the planned one must also satisfy the node-local constraints:
// the cloud provider may pick any option in any admissible offering.
void Validator::CheckVariants() {
  for (const NodeInfo& n : nodes_) {
    if (n.claim < 0) continue;
    std::set<std::pair<ViolationKind, std::string>> reported;
    for (const LaunchVariant& v : n.variants) {
      const std::string what =
          absl::StrCat("if launched as ", v.type->name(), " ", v.offering->capacity_type, " in ",
                       v.offering->zone, ": ");
      const size_t mark = out_.size();
      CheckFit(n, v.labels, v.type->Allocatable(), what);
      for (int pi : n.pods) {
        const PodInfo& p = pods_[pi];
        if (!NodeAffinityMatches(p, v.labels, n.name)) {
          Report(ViolationKind::kNodeAffinity, PodSubject(*p.pod),
                 absl::StrCat("on ", n.subject, " ", what,
                              "nodeSelector or required node affinity does not match"));
        }
        auto vol = in_.volume_requirements.find(p.pod);
        if (vol != in_.volume_requirements.end() && !vol->second.empty()) {
          bool any = false;
          for (const auto& alt : vol->second) any |= FirstUnsatisfied(alt, v.labels) == nullptr;
          if (!any) {
            Report(ViolationKind::kVolumeTopology, PodSubject(*p.pod),
                   absl::StrCat("on ", n.subject, " ", what,
                                "no volume topology alternative is satisfied"));
          }
        }
      }
      // Keep one report per kind and subject across variants.
      std::vector<Violation> fresh(out_.begin() + mark, out_.end());
      out_.resize(mark);
      for (auto& f : fresh) {
        if (reported.insert({f.kind, f.subject}).second) out_.push_back(std::move(f));
      }
    }
  }
}

std::set<std::string> Validator::PossibleValues(const NodeInfo& n, const std::string& key) const {
  std::set<std::string> out;
  if (const std::string* v = Lookup(n.labels, key)) out.insert(*v);
  for (const auto& var : n.variants) {
    if (const std::string* v = Lookup(var.labels, key)) out.insert(*v);
  }
  return out;
}

void Validator::CheckAntiAffinity() {
  // For each pod with required anti-affinity, every other pod its terms select must not share a
  // domain; a NodeClaim occupies every domain it may launch into.
  std::map<std::pair<int, std::string>, std::set<std::string>> values;  // stable references
  auto domains = [&](int node, const std::string& key) -> const std::set<std::string>& {
    auto k = std::make_pair(node, key);
    auto it = values.find(k);
    if (it == values.end()) it = values.emplace(k, PossibleValues(nodes_[node], key)).first;
    return it->second;
  };
  std::set<std::pair<size_t, size_t>> reported;  // each pair once, whichever pod owns the term
  for (size_t a = 0; a < pods_.size(); ++a) {
    const PodInfo& pa = pods_[a];
    if (pa.anti.empty() || !pa.counted) continue;
    for (const Term& t : pa.anti) {
      const auto& da = domains(pa.node, t.key);
      if (da.empty()) continue;
      for (size_t b = 0; b < pods_.size(); ++b) {
        const PodInfo& pb = pods_[b];
        if (a == b || !pb.counted || (!pa.from_plan && !pb.from_plan)) continue;
        if (!t.Matches(*pb.pod)) continue;
        const auto& db = domains(pb.node, t.key);
        std::vector<std::string> shared;
        std::set_intersection(da.begin(), da.end(), db.begin(), db.end(),
                              std::back_inserter(shared));
        if (shared.empty() || !reported.insert({std::min(a, b), std::max(a, b)}).second) continue;
        const PodInfo& blamed = pb.from_plan ? pb : pa;
        Report(ViolationKind::kPodAntiAffinity, PodSubject(*blamed.pod),
               absl::StrCat(PodName(*pa.pod), " on ", nodes_[pa.node].subject,
                            " has required anti-affinity on ", t.key, " against ", PodName(*pb.pod),
                            " on ", nodes_[pb.node].subject,
                            pa.node == pb.node ? " (the same node)" : "", ", sharing ", t.key,
                            " in {", absl::StrJoin(shared, ","), "}"));
      }
    }
  }
}

void Validator::CheckDomainsPinned() {
  for (const PodInfo& p : pods_) {
    if (!p.from_plan || nodes_[p.node].claim < 0) continue;
    const NodeInfo& n = nodes_[p.node];
    std::set<std::string> keys;
    for (const Term& t : p.affinity) keys.insert(t.key);
    for (const Spread& s : p.spread) keys.insert(s.key);
    for (const auto& key : keys) {
      if (key == v1::kLabelHostname) continue;
      std::set<std::string> values = PossibleValues(n, key);
      bool some_missing = Lookup(n.labels, key) == nullptr;
      for (const auto& var : n.variants) some_missing |= Lookup(var.labels, key) == nullptr;
      if (values.size() > 1 || (some_missing && !values.empty())) {
        Report(ViolationKind::kTopologyDomain, PodSubject(*p.pod),
               absl::StrCat("has a required spread or affinity constraint on ", key, " but ",
                            n.subject, " may launch with ", key, " in {",
                            absl::StrJoin(values, ","), some_missing ? ",<absent>" : "", "}"));
      }
    }
  }
}

// Required pod affinity, term by term (the API's semantics: the nodes each term allows are
// intersected; Karpenter keeps one topology group per term). A term holds when a bound pod it
// selects is in the node's domain; when no bound pod anywhere is selected by the term and the pod
// selects itself, the pod may bootstrap the term (kube-scheduler's self-affinity exception).
// kube-scheduler's implementation is stricter with several terms (it only counts pods that match
// all of them); Dovetail follows the documented semantics.
bool Validator::AffinityReady(const PodInfo& p, bool allow_bootstrap, std::string* why) const {
  const NodeInfo& n = nodes_[p.node];
  for (const Term& t : p.affinity) {
    const std::string* here = Lookup(n.labels, t.key);
    if (here == nullptr) {
      *why = absl::StrCat(n.subject, " lacks the pod affinity topology key ", t.key);
      return false;
    }
    bool in_domain = false, anywhere = false;
    for (const PodInfo& q : pods_) {
      if (!q.bound || &q == &p || !t.Matches(*q.pod)) continue;
      const std::string* v = Lookup(nodes_[q.node].labels, t.key);
      if (v == nullptr) continue;
      anywhere = true;
      if (*v == *here) {
        in_domain = true;
        break;
      }
    }
    if (in_domain) continue;
    if (!anywhere && t.Matches(*p.pod)) {
      if (allow_bootstrap) continue;
      *why = "waits to bootstrap its self-affinity";
      return false;
    }
    *why = absl::StrCat("no pod matching its required pod affinity is in ", t.key, "=", *here);
    return false;
  }
  return true;
}

bool Validator::PodCompatibleWithLaunch(const PodInfo& p, const Requirements& launch) const {
  std::vector<const NodeSelectorTerm*> terms;
  if (p.has_required_affinity) {
    for (const auto& t : p.required_terms) terms.push_back(&t);
    if (terms.empty()) return false;
  } else {
    terms.push_back(nullptr);
  }
  for (const NodeSelectorTerm* t : terms) {
    std::vector<NodeSelectorTerm> one;
    if (t != nullptr) one.push_back(*t);
    auto reqs = Requirements::ForPod(p.node_selector, one);
    if (!reqs.ok()) continue;
    if (launch.Compatible(*reqs, AllowUndefined::kWellKnownLabels).ok()) return true;
  }
  return false;
}

bool HasKeyForLaunch(const Requirements& r, const std::string& key) {
  if (key == v1::kLabelHostname || key == v1::kLabelTopologyZone ||
      key == v1::kCapacityTypeLabelKey) {
    return true;
  }
  const Requirement* req = r.Find(key);
  if (req == nullptr) return false;
  return req->complement() ? req->Operator() == apis::core::SelectorOperator::kExists ||
                                 req->Operator() == apis::core::SelectorOperator::kNotIn
                           : !req->values().empty();
}

Validator::SpreadDomains& Validator::DomainsFor(int pi, size_t ci) {
  SpreadDomains& d = spread_domains_[{pi, ci}];
  if (d.computed) return d;
  d.computed = true;
  const PodInfo& p = pods_[pi];
  const Spread& s = p.spread[ci];
  // Existing and planned nodes that count: every key of the pod's constraints present, and the
  // node inclusion policies.
  for (size_t ni = 0; ni < nodes_.size(); ++ni) {
    const NodeInfo& n = nodes_[ni];
    bool keys = true;
    for (const Spread& o : p.spread) keys = keys && Lookup(n.labels, o.key) != nullptr;
    if (!keys) continue;
    if (s.honor_affinity && !NodeAffinityMatches(p, n.labels, n.name)) continue;
    if (s.honor_taints && !scheduling::Tolerates(p.pod->spec.tolerations, n.taints,
                                                 scheduling::PreferNoSchedule::kIgnore)
                               .ok()) {
      continue;
    }
    d.nodes.push_back(static_cast<int>(ni));
  }
  // Domains a NodePool could still launch a counting node into (Karpenter's domain universe).
  for (const auto& pool : in_.pools) {
    if (s.honor_taints && !scheduling::Tolerates(p.pod->spec.tolerations, pool.taints,
                                                 scheduling::PreferNoSchedule::kIgnore)
                               .ok()) {
      continue;
    }
    for (const auto& t : pool.instance_types) {
      if (t == nullptr ||
          !cloudprovider::RequirementsIntersect(pool.requirements, t->requirements())) {
        continue;
      }
      Requirements base = pool.requirements;
      base.Intersect(t->requirements());
      for (const auto& o : t->offerings()) {
        if (!o.available || !cloudprovider::RequirementsIntersect(base, o.requirements)) continue;
        Requirements launch = base;
        launch.Intersect(o.requirements);
        bool keys = true;
        for (const Spread& other : p.spread) keys = keys && HasKeyForLaunch(launch, other.key);
        if (!keys) continue;
        std::vector<std::string> values;
        if (s.key == v1::kLabelHostname) {
          values.push_back("");
        } else if (s.key == v1::kLabelTopologyZone) {
          values.push_back(o.zone);
        } else if (s.key == v1::kCapacityTypeLabelKey) {
          values.push_back(o.capacity_type);
        } else if (const Requirement* r = launch.Find(s.key); r != nullptr && !r->complement()) {
          values.assign(r->values().begin(), r->values().end());
        }
        for (const auto& v : values) {
          if (s.key != v1::kLabelHostname && d.potential.contains(v)) continue;
          Requirements at = launch;
          if (s.key != v1::kLabelHostname) at.Add(Requirement::In(s.key, {v}));
          if (s.honor_affinity && !PodCompatibleWithLaunch(p, at)) continue;
          if (s.key == v1::kLabelHostname) {
            d.fresh_node = true;
          } else {
            d.potential.insert(v);
          }
        }
      }
    }
  }
  return d;
}

bool Validator::SpreadReady(int pi, std::string* why) {
  const PodInfo& p = pods_[pi];
  const NodeInfo& n = nodes_[p.node];
  for (size_t ci = 0; ci < p.spread.size(); ++ci) {
    const Spread& s = p.spread[ci];
    const std::string* domain = Lookup(n.labels, s.key);
    if (domain == nullptr) {
      *why = absl::StrCat(n.subject, " lacks the topology spread key ", s.key);
      return false;
    }
    SpreadDomains& d = DomainsFor(pi, ci);
    std::map<std::string, int64_t> counts;
    for (const auto& v : d.potential) counts[v];
    for (int ni : d.nodes) counts[*Lookup(nodes_[ni].labels, s.key)];
    for (int ni : d.nodes) {
      const std::string& v = *Lookup(nodes_[ni].labels, s.key);
      for (int qi : nodes_[ni].pods) {
        const PodInfo& q = pods_[qi];
        if (q.bound && qi != pi && s.Matches(*p.pod, *q.pod)) ++counts[v];
      }
    }
    int64_t min = std::numeric_limits<int64_t>::max();
    for (const auto& [v, c] : counts) min = std::min(min, c);
    if (d.fresh_node || counts.empty()) min = 0;
    const int64_t domains =
        d.fresh_node ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(counts.size());
    if (s.min_domains && domains < *s.min_domains) min = 0;
    const int64_t self = s.Matches(*p.pod, *p.pod) ? 1 : 0;
    const int64_t here = counts.contains(*domain) ? counts[*domain] : 0;
    if (here + self - min > s.max_skew) {
      *why = absl::StrCat("topology spread on ", s.key, " (maxSkew ", s.max_skew,
                          s.min_domains ? absl::StrCat(", minDomains ", *s.min_domains) : "",
                          "): ", s.key, "=", *domain, " would have ", here + self,
                          " matching pods against a global minimum of ", min, " over ",
                          d.fresh_node ? std::string("unbounded") : absl::StrCat(counts.size()),
                          " eligible domains");
      return false;
    }
  }
  return true;
}

// Pod affinity and topology spread depend on the order pods bind. The new pods are bound one by
// one, in the most favourable order this greedy finds: first every constrained pod whose
// constraints already hold, then a self-affinity bootstrap, and only when nothing else can move a
// pod without such constraints (those never wait, but they raise spread counts, so they go last).
void Validator::Replay() {
  std::vector<int> pending, free;
  absl::flat_hash_map<const Pod*, int> index;
  for (size_t i = 0; i < pods_.size(); ++i) {
    if (pods_[i].from_plan) index[pods_[i].pod] = static_cast<int>(i);
  }
  for (const Pod* p : in_.pods) {
    auto it = index.find(p);
    if (it == index.end() || !pods_[it->second].counted) continue;
    const PodInfo& info = pods_[it->second];
    (info.affinity.empty() && info.spread.empty() ? free : pending).push_back(it->second);
  }
  auto ready = [&](int pi, bool bootstrap, std::string* why) {
    return AffinityReady(pods_[pi], bootstrap, why) && SpreadReady(pi, why);
  };
  size_t next_free = 0;
  while (!pending.empty()) {
    bool progress = false;
    std::vector<int> rest;
    for (int pi : pending) {
      std::string why;
      if (ready(pi, false, &why)) {
        pods_[pi].bound = true;
        progress = true;
      } else {
        rest.push_back(pi);
      }
    }
    pending = std::move(rest);
    if (progress) continue;
    for (size_t i = 0; i < pending.size() && !progress; ++i) {
      std::string why;
      if (ready(pending[i], true, &why)) {
        pods_[pending[i]].bound = true;
        pending.erase(pending.begin() + i);
        progress = true;
      }
    }
    if (progress) continue;
    if (next_free == free.size()) break;
    pods_[free[next_free++]].bound = true;
  }
  for (int pi : pending) {
    const PodInfo& p = pods_[pi];
    std::string why;
    ViolationKind kind = ViolationKind::kPodAffinity;
    if (AffinityReady(p, true, &why)) {
      SpreadReady(pi, &why);
      kind = ViolationKind::kTopologySpread;
    }
    Report(kind, PodSubject(*p.pod),
           absl::StrCat("on ", nodes_[p.node].subject, " cannot bind in any order: ", why));
  }
}

void Validator::CheckLimitsAndPrice() {
  double sum = 0;
  for (const auto& c : plan_.node_claims) sum += c.price;
  if (std::abs(sum - plan_.total_price) > 1e-6) {
    Report(ViolationKind::kPrice, "plan",
           absl::StrCat("total price ", plan_.total_price, " differs from the sum of the claims ",
                        sum));
  }
  for (const auto& pool : in_.pools) {
    if (!pool.remaining_limits) continue;
    ResourceAmounts worst, chosen;
    int64_t count = 0;
    for (const NodeInfo& n : nodes_) {
      if (n.claim < 0) continue;
      const NewNodeClaim& c = plan_.node_claims[n.claim];
      if (c.pool != pool.name) continue;
      ++count;
      for (const auto& [name, limit] : *pool.remaining_limits) {
        if (name == "nodes") continue;
        int64_t max = 0;
        for (const auto& t : c.instance_types) {
          if (t != nullptr) max = std::max(max, AmountOf(t->capacity(), name));
        }
        worst[name] += max;
        if (n.type != nullptr) chosen[name] += AmountOf(n.type->capacity(), name);
      }
    }
    for (const auto& [name, limit] : *pool.remaining_limits) {
      if (name == "nodes") {
        if (count > limit.Value()) {
          Report(
              ViolationKind::kLimits, absl::StrCat("nodepool ", pool.name),
              absl::StrCat("launches ", count, " nodes, more than the remaining ", limit.Value()));
        }
        continue;
      }
      if (chosen[name] > limit.MilliValue()) {
        Report(ViolationKind::kLimits, absl::StrCat("nodepool ", pool.name),
               absl::StrCat("the chosen instance types have ", FormatAmount(name, chosen[name]),
                            " of ", name, ", more than the remaining limit ", limit.ToString()));
      } else if (worst[name] > limit.MilliValue()) {
        Report(ViolationKind::kLimits, absl::StrCat("nodepool ", pool.name),
               absl::StrCat("the claims' largest options have ", FormatAmount(name, worst[name]),
                            " of ", name, ", more than the remaining limit ", limit.ToString()));
      }
    }
  }
}

}  // namespace

std::string_view ViolationKindName(ViolationKind kind) {
  switch (kind) {
    case ViolationKind::kPodMissing:
      return "PodMissing";
    case ViolationKind::kPodDuplicated:
      return "PodDuplicated";
    case ViolationKind::kUnknownPod:
      return "UnknownPod";
    case ViolationKind::kUnknownNode:
      return "UnknownNode";
    case ViolationKind::kMissingReason:
      return "MissingReason";
    case ViolationKind::kUnknownPool:
      return "UnknownPool";
    case ViolationKind::kInstanceType:
      return "InstanceType";
    case ViolationKind::kOffering:
      return "Offering";
    case ViolationKind::kPrice:
      return "Price";
    case ViolationKind::kNodeMetadata:
      return "NodeMetadata";
    case ViolationKind::kMinValues:
      return "MinValues";
    case ViolationKind::kLimits:
      return "Limits";
    case ViolationKind::kEmptyNodeClaim:
      return "EmptyNodeClaim";
    case ViolationKind::kRequests:
      return "Requests";
    case ViolationKind::kResources:
      return "Resources";
    case ViolationKind::kNodeAffinity:
      return "NodeAffinity";
    case ViolationKind::kTaints:
      return "Taints";
    case ViolationKind::kVolumeTopology:
      return "VolumeTopology";
    case ViolationKind::kHostPorts:
      return "HostPorts";
    case ViolationKind::kPodAffinity:
      return "PodAffinity";
    case ViolationKind::kPodAntiAffinity:
      return "PodAntiAffinity";
    case ViolationKind::kTopologySpread:
      return "TopologySpread";
    case ViolationKind::kTopologyDomain:
      return "TopologyDomain";
  }
  return "Unknown";
}

std::string Violation::ToString() const {
  return absl::StrCat(std::string(ViolationKindName(kind)), " ", subject, ": ", message);
}

std::vector<Violation> ValidatePlan(const Input& input, const Plan& plan) {
  return Validator(input, plan).Run();
}

}  // namespace dovetail::solver
