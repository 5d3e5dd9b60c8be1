// Validator: pods on their nodes, launch variants, anti-affinity and pinned domains.
#include "dovetail/apis/v1/labels.h"
#include "dovetail/solver/plan_validator/validator.h"

namespace dovetail::solver::plan_validator {

PodInfo Validator::Resolve(const Pod* pod, bool from_plan) const {
  PodInfo p;
  p.pod = pod;
  p.from_plan = from_plan;
  p.counted = !apis::core::IsTerminal(*pod) && !apis::core::IsTerminating(*pod);
  Accumulate(p.requests, apis::core::PodRequests(*pod));
  const auto& s = pod->spec;
  for (const auto& [k, v] : s.node_selector) {
    p.node_selector[std::string(apis::v1::NormalizeLabelKey(k))] = v;
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
    sp.key = std::string(apis::v1::NormalizeLabelKey(c.topology_key));
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

}  // namespace dovetail::solver::plan_validator
