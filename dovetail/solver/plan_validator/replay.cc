// Validator: the binding replay (affinity and spread), NodePool limits and the plan's price.
#include "dovetail/solver/plan_validator/validator.h"

namespace dovetail::solver::plan_validator {

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
  double sum = 0, effective = 0;
  for (const auto& c : plan_.node_claims) {
    sum += c.price;
    effective += c.effective_price;
  }
  if (std::abs(sum - plan_.total_price) > 1e-6) {
    Report(ViolationKind::kPrice, "plan",
           absl::StrCat("total price ", plan_.total_price, " differs from the sum of the claims ",
                        sum));
  }
  if (std::abs(effective - plan_.total_effective_price) > 1e-6) {
    Report(ViolationKind::kPrice, "plan",
           absl::StrCat("total effective price ", plan_.total_effective_price,
                        " differs from the sum of the claims' ", effective));
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

}  // namespace dovetail::solver::plan_validator
