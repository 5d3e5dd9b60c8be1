// The plan validator's internals (plan_validator.h states what it checks): the materialised
// cluster (nodes with their pods, each pod's resolved constraints), the helpers the checks share,
// and the Validator that runs the checks in order. Its member functions are defined by stage:
// claims.cc (accounting, existing nodes, NodeClaims), nodes.cc (pods on nodes, launch variants,
// anti-affinity, pinned domains), replay.cc (binding order: affinity and spread; limits and
// price); helpers.cc the free functions. Internal to dovetail/solver; thread-compatible.
#pragma once

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
#include "dovetail/solver/plan_validator.h"

namespace dovetail::solver::plan_validator {

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

// ---- host ports -------------------------------------------------------------------------------

struct PortUse {
  std::string ip;
  int32_t port = 0;
  Protocol protocol = Protocol::kTCP;
  std::string owner;  // "pod ns/name" or "daemonset ns/name"
  bool from_plan = false;
};

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

void Accumulate(ResourceAmounts& into, const ResourceList& list);

int64_t AmountOf(const ResourceList& list, const std::string& name);

std::string FormatAmount(const std::string& name, int64_t milli);

std::string PodName(const Pod& p);

std::string PodSubject(const Pod& p);

const std::string* Lookup(const apis::core::StringMap& labels, std::string_view key);

// A NodeSelectorRequirement evaluated against a node's labels, as Kubernetes does: a missing label
// only satisfies NotIn and DoesNotExist.
bool LabelsSatisfy(const Requirement& r, const apis::core::StringMap& labels);

// The first requirement the labels do not satisfy, or nullptr.
const Requirement* FirstUnsatisfied(const Requirements& reqs, const apis::core::StringMap& labels);

std::string DescribeLabel(const apis::core::StringMap& labels, const std::string& key);

// Pod keys are matched against nodes after Karpenter's key normalisation (the nodes Dovetail
// builds carry the GA keys only).
NodeSelectorTerm NormalizeTerm(NodeSelectorTerm t);

bool Wildcard(const std::string& ip);

bool PortsConflict(const PortUse& a, const PortUse& b);

void AppendPorts(const apis::core::PodSpec& spec, const std::string& owner, bool from_plan,
                 std::vector<PortUse>* out);

std::string ProtocolName(Protocol p);

void AddLabelKeys(const Pod& owner, const std::vector<std::string>& keys, LabelSelectorOperator op,
                  LabelSelector* selector);

Term ResolveTerm(const Pod& owner, const PodAffinityTerm& t,
                 const absl::flat_hash_map<std::string, apis::core::StringMap>& ns_labels);

// The labels a node launched as (type, offering) for claim `c` carries.
apis::core::StringMap LaunchLabels(const apis::core::StringMap& base, const NewNodeClaim& c,
                                   const PoolTemplate* pool, const InstanceType& type,
                                   const Offering& offering);

bool HasKeyForLaunch(const Requirements& r, const std::string& key);

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
  // CheckClaim's steps. The pool's taints are on the claim (and on `node`).
  void CheckClaimTaints(const NewNodeClaim& c, NodeInfo& node);
  // The claim's instance type options: the chosen one, those that may really be launched, the
  // cheapest admissible offering among them.
  struct ClaimOptions {
    const InstanceType* chosen = nullptr;
    std::vector<const InstanceType*> usable;
    double cheapest = std::numeric_limits<double>::infinity();  // effective, with `overhead`
    double overhead = 0;                                        // the pool's node_overhead_per_hour
    std::string cheapest_desc;
  };
  ClaimOptions CheckOptions(const NewNodeClaim& c, const PoolTemplate* pool,
                            const std::string& subj);
  // The chosen offering (null when there is none), its admission and price.
  const Offering* CheckChosenOffering(const NewNodeClaim& c, const ClaimOptions& options,
                                      const std::string& subj);
  // The node's labels as planned and every other launch variant's; checks them against the
  // claim's labels and requirements and the pool's requirements.
  void SetClaimLabels(const NewNodeClaim& c, const ClaimOptions& options, const Offering* offering,
                      NodeInfo& node);
  // The options jointly offer enough distinct values for every minValues.
  void CheckMinValues(const NewNodeClaim& c, const PoolTemplate* pool, const std::string& subj);
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

}  // namespace dovetail::solver::plan_validator
