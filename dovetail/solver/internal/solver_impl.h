// SolverImpl: one packing of a question (solver.h's Input) onto existing nodes and new NodeClaims.
// Build interns resources, offerings and types, prepares pools, nodes, pod classes and topology
// groups; PlaceAll places the pods largest first, relaxing preferences pod by pod as upstream
// does, optionally re-packs (improve) and turns the NodeClaims into a Plan; LowerBound builds
// and bounds the cost of placing given pods instead.
// Its member functions are defined by concern: model.cc (Build*), classes.cc (classes, variants,
// relaxation), topology.cc (groups, counts, checks), placement.cc (Try*, Place, PlaceAll),
// pricing.cc (prices and the Plan), repack.cc (SplitClaims), bound.cc (the LP lower bound).
// SessionShortcutImpl (session_shortcut.cc) reuses one built SolverImpl across questions.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "dovetail/solver/internal/names.h"
#include "dovetail/solver/internal/offerings.h"
#include "dovetail/solver/internal/placement_target.h"
#include "dovetail/solver/internal/pod_class.h"
#include "dovetail/solver/internal/resources.h"
#include "dovetail/solver/internal/topology_group.h"
#include "dovetail/solver/lower_bound.h"
#include "dovetail/solver/solver.h"
#include "dovetail/solver/type_set.h"

namespace dovetail::solver::internal {

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
  // Builds, then solves the LP bound for the `placed` pods (of in_.pods).
  absl::StatusOr<double> LowerBound(std::span<const Pod* const> placed);

 private:
  friend class SessionShortcutImpl;

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
  // TryClaim's success: `claim` takes variant `vi` (already among its variants when `joined`)
  // with the narrowed offerings and types, the new usage and minValues outcome, and its host
  // ports.
  void Commit(int vi, bool joined, const PairMask& pairs, TypeSet types, Amounts used,
              bool min_values_relaxed, Claim& claim) const;
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
  // Whether a pod of class `c` sees which node it is on (host ports, a hostname-level topology
  // term): such pods are not re-packed.
  bool HostnameBound(const PodClass& c) const;
  // A new claim of `rep`'s pool, requirements and offerings for `pods` using `used`, with the
  // `compatible` types that hold them and the variants of the `group` claims it replaces.
  Claim RepackedClaim(const Claim& rep, const std::vector<size_t>& group, const Amounts& used,
                      const TypeSet& compatible, std::vector<const Pod*> pods, size_t name);
  Plan Finalize();
  // How a claim launches: its instance types by price (ties by name rank), at most
  // max_instance_types; the requirements they add; the smallest DaemonSet overhead among them.
  struct ClaimLaunch {
    struct Option {
      size_t type;
      double price;
      int pair;  // the cheapest offering's pair
    };
    std::vector<Option> options;
    std::vector<InstanceTypePtr> instance_types;
    Requirement type_requirement;
    Requirement capacity_type_requirement;
    Amounts min_overhead;
  };
  ClaimLaunch LaunchOf(const Claim& claim, const std::vector<uint32_t>& name_rank) const;
  // The plan's NodeClaim for `claim`, priced and labelled with `launch`'s cheapest option.
  NewNodeClaim ToNodeClaim(const Claim& claim, const ClaimLaunch& launch) const;
  // The lower bound's demands: the placed pods counted by class, sorted by class; per demand, the
  // class's most relaxed variants (one per required node-affinity term) in `*lp_variants`.
  std::vector<std::pair<int, double>> BoundDemands(std::span<const Pod* const> placed,
                                                   std::vector<std::vector<int>>* lp_variants);
  // Adds to `lp` a column per launchable (pool, type, offering) some demand may use, dropping
  // offerings a cheaper kept one dominates; returns each demand's columns.
  std::vector<std::vector<int>> AddLaunchColumns(const std::vector<std::vector<int>>& lp_variants,
                                                 LpProblem* lp);

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

}  // namespace dovetail::solver::internal
