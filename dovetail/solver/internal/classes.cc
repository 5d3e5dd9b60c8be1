// SolverImpl's pod classes, their relaxation variants and what each variant may use of a pool.
#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/scheduling/taints.h"
#include "dovetail/solver/internal/class_key.h"
#include "dovetail/solver/internal/solver_impl.h"
#include "dovetail/solver/type_set.h"

namespace dovetail::solver::internal {
namespace {

// Pointers to the preferred `terms`, heaviest first; equal weights keep their order.
template <typename Term>
std::vector<const Term*> HeaviestFirst(const std::vector<Term>& terms) {
  std::vector<const Term*> out;
  out.reserve(terms.size());
  for (const Term& t : terms) out.push_back(&t);
  std::stable_sort(out.begin(), out.end(),
                   [](const Term* a, const Term* b) { return a->weight > b->weight; });
  return out;
}

}  // namespace

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
      AppendHostPorts(s, c.ports);
      if (vol != in_.volume_requirements.end()) c.volume_alternatives = vol->second;
      if (s.affinity && s.affinity->node_affinity) {
        const auto& na = *s.affinity->node_affinity;
        if (na.required) {
          c.required_terms = na.required->terms;
          for (const auto& t : na.required->terms) {
            if (!t.match_fields.empty()) c.has_match_fields = true;
          }
        }
        for (const auto* t : HeaviestFirst(na.preferred)) {
          c.preferred_node_terms.push_back(&t->preference);
        }
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
      for (const auto* w : HeaviestFirst(s.affinity->pod_affinity->preferred)) {
        c.preferred_affinity.push_back(GroupFor(GroupKind::kAffinity, c.ns, w->term, p));
      }
    }
    if (s.affinity && s.affinity->pod_anti_affinity) {
      for (const auto& t : s.affinity->pod_anti_affinity->required) {
        c.required_anti.push_back(GroupFor(GroupKind::kAntiAffinity, c.ns, t, p));
      }
      for (const auto* w : HeaviestFirst(s.affinity->pod_anti_affinity->preferred)) {
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
  // The last relaxation: tolerating PreferNoSchedule taints, when some pool has one.
  auto tolerate_prefer_no_schedule = [&]() -> std::optional<RelaxState> {
    if (s.tolerate_prefer_no_schedule) return std::nullopt;
    for (const auto& p : pools_) {
      if (p.has_prefer_no_schedule) {
        s.tolerate_prefer_no_schedule = true;
        return s;
      }
    }
    return std::nullopt;
  };
  if (static_cast<int>(c.required_terms.size()) - s.required_term > 1) {
    ++s.required_term;
    return s;
  }
  if (!in_.options.respect_preferences) return tolerate_prefer_no_schedule();
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
  return tolerate_prefer_no_schedule();
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

}  // namespace dovetail::solver::internal
