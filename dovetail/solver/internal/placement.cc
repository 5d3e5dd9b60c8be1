// SolverImpl's placement: a pod onto an existing node, a NodeClaim being built or a new one.
#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/saturating.h"
#include "dovetail/scheduling/taints.h"
#include "dovetail/solver/internal/class_key.h"
#include "dovetail/solver/internal/solver_impl.h"
#include "dovetail/solver/type_set.h"

namespace dovetail::solver::internal {

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

namespace {

// The requirements of `after` that are new or differ from `before`'s.
Requirements Changed(const Requirements& before, const Requirements& after) {
  Requirements delta;
  for (const auto& r : after) {
    const Requirement* b = before.Find(r.key());
    if (b == nullptr || !(*b == r)) delta.Add(r);
  }
  return delta;
}

}  // namespace

void SolverImpl::Commit(int vi, bool joined, const PairMask& pairs, TypeSet types, Amounts used,
                        bool min_values_relaxed, Claim& claim) const {
  if (claim.pairs != pairs) claim.price = -1;
  claim.pairs = pairs;
  if (!(types == claim.types)) SetTypes(claim, std::move(types));
  claim.used = std::move(used);
  claim.min_values_relaxed = min_values_relaxed;
  if (!joined) claim.variants.push_back(vi);
  const PodClass& c = classes_[variants_[vi].cls];
  claim.ports.insert(claim.ports.end(), c.ports.begin(), c.ports.end());
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
    const Requirements delta = reqs_changed ? Changed(claim.reqs, *use) : Requirements();
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
    if (reqs_changed) claim.reqs = std::move(reqs);
    Commit(vi, joined, pairs, std::move(types), std::move(used), relaxed, claim);
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
      if (!placed) {
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
  return plan;
}

}  // namespace dovetail::solver::internal
