// SolverImpl's build of the static model: resources, instance types, pools and existing nodes.
#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "dovetail/apis/core/pod_requests.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/scheduling/taints.h"
#include "dovetail/solver/internal/solver_impl.h"
#include "dovetail/solver/type_set.h"

namespace dovetail::solver::internal {
namespace {

// What a DaemonSet's pod strictly requires of a node: its nodeSelector and its required node
// affinity (preferences and tolerations aside). Errors: those of Requirements::ForPod.
absl::StatusOr<Requirements> DaemonRequirements(const apis::core::PodSpec& spec) {
  std::vector<apis::core::NodeSelectorTerm> terms;
  if (spec.affinity && spec.affinity->node_affinity && spec.affinity->node_affinity->required) {
    terms = spec.affinity->node_affinity->required->terms;
  }
  return Requirements::ForPod(spec.node_selector, terms);
}

}  // namespace

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
          ti.pair_node_price.resize(*id + 1, 0);
        }
        if (o.available) {
          ti.available.set(*id);
          if (o.EffectivePrice() < ti.pair_price[*id]) {
            ti.pair_price[*id] = o.EffectivePrice();
            ti.pair_node_price[*id] = o.node_price;
          }
        }
      }
      type_index_.emplace(it.get(), static_cast<int>(types_.size()));
      types_.push_back(std::move(ti));
    }
  }
  for (auto& ti : types_) {
    ti.pair_price.resize(pairs_.zones.size(), kInfPrice);
    ti.pair_node_price.resize(pairs_.zones.size(), 0);
  }
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
      auto reqs = DaemonRequirements(spec);
      if (!reqs.ok()) continue;
      if (!t->requirements.Compatible(*reqs, AllowUndefined::kWellKnownLabels).ok()) continue;
      daemons.emplace_back(res_.ToAmounts(apis::core::PodRequests(*ds.pod)), std::move(*reqs));
      AppendHostPorts(spec, pi.ds_ports);
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
    AppendHostPorts(p->spec, s.ports);
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
      auto reqs = DaemonRequirements(spec);
      if (!reqs.ok() || !s.label_reqs.Compatible(*reqs, AllowUndefined::kNone).ok()) continue;
      AddTo(s.used, res_.ToAmounts(apis::core::PodRequests(*ds.pod)));
      AppendHostPorts(spec, s.ports);
    }
  }
  node_room_.resize(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) UpdateRoom(i);
  return absl::OkStatus();
}

}  // namespace dovetail::solver::internal
