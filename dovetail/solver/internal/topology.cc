// SolverImpl's topology: groups and domains, counts, and the checks of a node or NodeClaim.
#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/scheduling/label_selector.h"
#include "dovetail/scheduling/taints.h"
#include "dovetail/solver/internal/solver_impl.h"

namespace dovetail::solver::internal {

namespace {

std::string SelectorKey(const LabelSelector& s) {
  std::string out;
  for (const auto& [k, v] : s.match_labels) absl::StrAppend(&out, k, "=", v, ";");
  for (const auto& e : s.match_expressions) {
    absl::StrAppend(&out, e.key, "~", static_cast<int>(e.op), "[", absl::StrJoin(e.values, ","),
                    "];");
  }
  return out;
}

}  // namespace

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
  g.key = std::string(apis::v1::NormalizeLabelKey(term.topology_key));
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
  g.key = std::string(apis::v1::NormalizeLabelKey(c.topology_key));
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
        const int64_t min = g.SpreadMinimum();
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
    values.reserve(allowed.size());
    for (int d : allowed) values.push_back(table.names[d]);
    reqs.Add(Requirement::In(g.key, values));
    if (g.key == v1::kLabelTopologyZone || g.key == v1::kCapacityTypeLabelKey) {
      pairs &= pairs_.Allowed(reqs);
    }
  };
  // Narrows to the cheapest of `domains` where `count` is zero; false when there is none.
  auto narrow_to_empty = [&](const TopologyGroup& g, const std::vector<int>& domains, auto count) {
    std::vector<int> allowed;
    for (int d : domains) {
      if (count(d) == 0) allowed.push_back(d);
    }
    if (allowed.empty()) return false;
    narrow(g, {pick(g, allowed)});
    return true;
  };
  for (int gid : v.owned) {
    const TopologyGroup& g = groups_[gid];
    std::vector<int> domains = ClaimDomains(g, claim, reqs, pairs);
    switch (g.kind) {
      case GroupKind::kAntiAffinity:
        if (!narrow_to_empty(g, domains, [&](int d) { return g.Count(d); })) {
          return absl::FailedPreconditionError(
              absl::StrCat("would violate pod anti-affinity on ", g.key));
        }
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
        const int64_t min = g.SpreadMinimum();
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
    if (!narrow_to_empty(g, domains, [&](int d) { return g.OwnerCount(d); })) {
      return absl::FailedPreconditionError(
          absl::StrCat("would violate the pod anti-affinity of other pods on ", g.key));
    }
  }
  return absl::OkStatus();
}

}  // namespace dovetail::solver::internal
