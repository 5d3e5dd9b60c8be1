#include "bench/scheduling/plan_check.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "dovetail/apis/core/pod_requests.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/scheduling/label_selector.h"

namespace dovetail::bench {
namespace {

using apis::core::Pod;
namespace v1 = apis::v1;

std::string Key(const Pod& p) { return absl::StrCat(p.metadata.namespace_, "/", p.metadata.name); }

bool Selects(const std::optional<apis::core::LabelSelector>& s, const Pod& owner,
             const Pod& other) {
  return s.has_value() && owner.metadata.namespace_ == other.metadata.namespace_ &&
         scheduling::Matches(*s, other.metadata.labels);
}

// A topology rule identified by its selector, as a string key for grouping.
std::string SelectorId(const apis::core::LabelSelector& s) {
  std::string out;
  for (const auto& [k, v] : s.match_labels) absl::StrAppend(&out, k, "=", v, ";");
  return out;
}

}  // namespace

absl::Status CheckPlan(const std::vector<const Pod*>& pods, const solver::Plan& plan,
                       const std::vector<std::string>& zones) {
  // Where each pod went: claim index, -1 for existing nodes / unschedulable.
  absl::flat_hash_map<const Pod*, int> seen;
  auto note = [&](const Pod* p, int claim) -> absl::Status {
    if (!seen.emplace(p, claim).second) {
      return absl::FailedPreconditionError(absl::StrCat("pod ", Key(*p), " appears twice"));
    }
    return absl::OkStatus();
  };
  for (size_t c = 0; c < plan.node_claims.size(); ++c) {
    for (const Pod* p : plan.node_claims[c].pods) {
      if (absl::Status s = note(p, static_cast<int>(c)); !s.ok()) return s;
    }
  }
  for (const auto& e : plan.existing) {
    for (const Pod* p : e.pods) {
      if (absl::Status s = note(p, -1); !s.ok()) return s;
    }
  }
  for (const auto& u : plan.unschedulable) {
    if (absl::Status s = note(u.pod, -1); !s.ok()) return s;
  }
  for (const Pod* p : pods) {
    if (!seen.contains(p)) {
      return absl::FailedPreconditionError(absl::StrCat("pod ", Key(*p), " is missing"));
    }
  }
  if (seen.size() != pods.size()) {
    return absl::FailedPreconditionError("the plan holds pods that were not in the input");
  }

  // Resources and hostname rules, per NodeClaim.
  for (const auto& claim : plan.node_claims) {
    if (claim.instance_types.empty() ||
        claim.instance_types.front()->name() != claim.instance_type) {
      return absl::FailedPreconditionError(
          absl::StrCat("NodeClaim ", claim.hostname, " is not priced with its cheapest option"));
    }
    ResourceList used;
    for (const Pod* p : claim.pods) {
      for (const auto& [r, q] : apis::core::PodRequests(*p)) used[r] += q;  // includes pods: 1
    }
    const ResourceList& alloc = claim.instance_types.front()->Allocatable();
    for (const auto& [r, q] : used) {
      auto it = alloc.find(r);
      if (it == alloc.end() || it->second < q) {
        return absl::FailedPreconditionError(absl::StrCat(
            "NodeClaim ", claim.hostname, " (", claim.instance_type, ") is over-committed on ", r,
            ": ", q.ToString(), " > ", it == alloc.end() ? "0" : it->second.ToString()));
      }
    }
    for (const Pod* p : claim.pods) {
      const auto& spec = p->spec;
      if (spec.affinity && spec.affinity->pod_anti_affinity) {
        for (const auto& t : spec.affinity->pod_anti_affinity->required) {
          if (t.topology_key != v1::kLabelHostname) continue;
          for (const Pod* q : claim.pods) {
            if (q != p && (Selects(t.label_selector, *p, *q))) {
              return absl::FailedPreconditionError(absl::StrCat("pods ", Key(*p), " and ", Key(*q),
                                                                " share NodeClaim ", claim.hostname,
                                                                " despite hostname anti-affinity"));
            }
          }
        }
      }
      for (const auto& c : spec.topology_spread_constraints) {
        if (c.topology_key != v1::kLabelHostname ||
            c.when_unsatisfiable != apis::core::UnsatisfiableConstraintAction::kDoNotSchedule) {
          continue;
        }
        int64_t n = 0;
        for (const Pod* q : claim.pods) n += Selects(c.label_selector, *p, *q) ? 1 : 0;
        if (n > c.max_skew) {
          return absl::FailedPreconditionError(absl::StrCat(
              "NodeClaim ", claim.hostname, " holds ", n, " pods of the hostname spread of ",
              Key(*p), " (maxSkew ", c.max_skew, ")"));
        }
      }
    }
  }

  // Zonal rules over the whole plan.
  absl::flat_hash_map<std::string, std::map<std::string, int64_t>> spread_counts;
  absl::flat_hash_map<std::string, int32_t> spread_skew;
  absl::flat_hash_map<std::string, std::string> affinity_zone;
  for (const Pod* p : pods) {
    const int c = seen.at(p);
    if (c < 0) continue;
    const std::string& zone = plan.node_claims[c].zone;
    const auto& spec = p->spec;
    for (const auto& tsc : spec.topology_spread_constraints) {
      if (tsc.topology_key != v1::kLabelTopologyZone || !tsc.label_selector ||
          tsc.when_unsatisfiable != apis::core::UnsatisfiableConstraintAction::kDoNotSchedule) {
        continue;
      }
      std::string id = SelectorId(*tsc.label_selector);
      spread_skew[id] = tsc.max_skew;
      auto& counts = spread_counts[id];
      for (const auto& z : zones) counts.emplace(z, 0);
      if (scheduling::Matches(*tsc.label_selector, p->metadata.labels)) ++counts[zone];
    }
    if (spec.affinity && spec.affinity->pod_affinity) {
      for (const auto& t : spec.affinity->pod_affinity->required) {
        if (t.topology_key != v1::kLabelTopologyZone || !Selects(t.label_selector, *p, *p))
          continue;
        auto [it, inserted] = affinity_zone.emplace(SelectorId(*t.label_selector), zone);
        if (!inserted && it->second != zone) {
          return absl::FailedPreconditionError(absl::StrCat("pods of the self-affinity group ",
                                                            it->first, " are in zones ", it->second,
                                                            " and ", zone));
        }
      }
    }
  }
  for (const auto& [id, counts] : spread_counts) {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
    for (const auto& [z, n] : counts) {
      lo = std::min(lo, n);
      hi = std::max(hi, n);
    }
    if (hi - lo > spread_skew[id]) {
      return absl::FailedPreconditionError(
          absl::StrCat("zone spread of ", id, " has skew ", hi - lo, " > ", spread_skew[id]));
    }
  }
  return absl::OkStatus();
}

}  // namespace dovetail::bench
