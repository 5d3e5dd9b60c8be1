#include "dovetail/solver/internal/session_shortcut.h"

#include <algorithm>
#include <memory>
#include <span>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "dovetail/apis/core/pod_requests.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/solver/internal/class_key.h"
#include "dovetail/solver/internal/solver_impl.h"

namespace dovetail::solver::internal {

class SessionShortcutImpl final : public SessionShortcut {
 public:
  explicit SessionShortcutImpl(const Input& base) : base_(base) {}

  // False: no question can take the shortcut.
  bool Init();

  std::optional<absl::StatusOr<Plan>> Simulate(std::span<const size_t> removed_nodes,
                                               std::span<const Pod* const> moved_pods) override;

 private:
  // The class of a moved pod: by pointer, else by content; -1 when no prepared class matches.
  int ClassOf(const Pod& p) const;
  // False when the question needs the full solve. Sets impl_->group_active_.
  bool Admissible(std::span<const size_t> removed_nodes);
  // Init's steps. Resource dimensions only bound pods bring: a node carrying one shapes the
  // dimensions (node_sensitive_); false when no node carries one.
  bool MarkBoundOnlyDimensions();
  // Selector keys no pending pod reads: key_nodes_, key_always_, class_keys_.
  void IndexSelectorKeys();
  // Anti-affinity groups' owners (group_base_owned_, group_bound_owners_, node_owned_groups_,
  // class_owned_groups_, class_order_sensitive_); false when a pending pod's class is order
  // sensitive or a bound pod's term is a group Build did not make.
  bool IndexAntiAffinityGroups();

  const Input& base_;
  std::vector<const Pod*> class_pods_;  // base.pods, then the bound pods
  std::vector<ResourceList> requests_;  // aligned with class_pods_
  std::unique_ptr<SolverImpl> impl_;
  absl::flat_hash_map<const Pod*, int> class_of_;
  absl::flat_hash_map<std::string, int> node_index_;
  // Per node: removing it changes the domain tables, a spread group's eligible domains or the
  // resource dimensions.
  std::vector<char> node_sensitive_;
  // Selector keys no pending pod reads: the nodes whose bound pods read them (the key must
  // survive a question for the classes to stay the same), whether a bound pod on no known node
  // reads it, and per class the ones its pods read.
  std::vector<std::vector<int>> key_nodes_;
  std::vector<char> key_always_;
  std::vector<std::vector<int>> class_keys_;
  // Anti-affinity groups: owned by a pending pod's class, by how many bound pods (required terms),
  // per node the groups its bound pods own, per class the groups it owns.
  std::vector<char> group_base_owned_;
  std::vector<int> group_bound_owners_;
  std::vector<std::vector<int>> node_owned_groups_;
  std::vector<std::vector<int>> class_owned_groups_;
  // Classes whose inverse anti-affinity rules could apply in another order in the reduced input.
  std::vector<char> class_order_sensitive_;
  // Scratch per question.
  std::vector<const Pod*> q_pods_;
  std::vector<int> q_class_;
  std::vector<int> owners_left_;
};

bool SessionShortcutImpl::Init() {
  const Options& o = base_.options;
  if (o.improve || o.lower_bound) return false;
  for (size_t i = 0; i < base_.nodes.size(); ++i) {
    if (!node_index_.emplace(base_.nodes[i].name, static_cast<int>(i)).second) return false;
  }
  class_pods_ = base_.pods;
  for (const Pod* p : base_.bound_pods) {
    if (p != nullptr) class_pods_.push_back(p);
  }
  requests_.reserve(class_pods_.size());
  for (const Pod* p : class_pods_) requests_.push_back(apis::core::PodRequests(*p));

  if (!MarkBoundOnlyDimensions()) return false;

  impl_ = std::make_unique<SolverImpl>(base_, class_pods_, requests_, nullptr);
  impl_->record_contributions_ = true;
  if (!impl_->Build().ok()) return false;
  SolverImpl& s = *impl_;
  for (size_t n = 0; n < s.nodes_.size(); ++n) {
    if (s.node_shapes_domains_[n]) node_sensitive_[n] = 1;
  }
  s.domains_[std::string(v1::kLabelHostname)];  // exists before any question (stable tables)
  for (const auto& [key, table] : s.domains_) {
    if (key != v1::kLabelHostname && table.names.size() != table.registered_size) return false;
  }
  for (size_t i = 0; i < class_pods_.size(); ++i)
    class_of_.emplace(class_pods_[i], s.pod_class_[i]);

  IndexSelectorKeys();
  if (!IndexAntiAffinityGroups()) return false;
  s.removed_.assign(s.nodes_.size(), 0);
  s.group_active_.assign(s.groups_.size(), 1);
  return true;
}

bool SessionShortcutImpl::MarkBoundOnlyDimensions() {
  absl::flat_hash_set<std::string> dims = {"cpu", "memory", "pods", "ephemeral-storage", "nodes"};
  auto add_dims = [&](const ResourceList& l) {
    for (const auto& [name, _] : l) dims.insert(name);
  };
  for (const auto& pool : base_.pools) {
    for (const auto& it : pool.instance_types) {
      if (it == nullptr) return false;
      add_dims(it->capacity());
      add_dims(it->Allocatable());
    }
    if (pool.remaining_limits) add_dims(*pool.remaining_limits);
  }
  for (size_t i = 0; i < base_.pods.size(); ++i) add_dims(requests_[i]);
  for (const auto& ds : base_.daemon_sets) {
    if (ds.pod != nullptr) add_dims(apis::core::PodRequests(*ds.pod));
  }
  node_sensitive_.assign(base_.nodes.size(), 0);
  absl::flat_hash_set<std::string> bound_only;
  for (size_t i = base_.pods.size(); i < requests_.size(); ++i) {
    for (const auto& [name, _] : requests_[i]) {
      if (!dims.contains(name)) bound_only.insert(name);
    }
  }
  for (const std::string& name : bound_only) {
    bool carried = false;
    for (size_t n = 0; n < base_.nodes.size(); ++n) {
      if (base_.nodes[n].allocatable.contains(name)) {
        node_sensitive_[n] = 1;
        carried = true;
      }
    }
    if (!carried) return false;
  }

  return true;
}

void SessionShortcutImpl::IndexSelectorKeys() {
  const SolverImpl& s = *impl_;
  absl::flat_hash_set<std::string> base_keys;
  for (const Pod* p : base_.pods) NoteSelectorKeys(*p, &base_keys);
  absl::flat_hash_map<std::string, int> extra;
  auto extra_keys = [&](const Pod& p) {
    absl::flat_hash_set<std::string> keys;
    NoteSelectorKeys(p, &keys);
    std::vector<int> out;
    for (const auto& k : keys) {
      if (base_keys.contains(k)) continue;
      auto [it, inserted] = extra.emplace(k, static_cast<int>(extra.size()));
      if (inserted) {
        key_nodes_.emplace_back();
        key_always_.push_back(0);
      }
      out.push_back(it->second);
    }
    return out;
  };
  for (const Pod* p : base_.bound_pods) {
    if (p == nullptr) continue;
    auto node = node_index_.find(p->spec.node_name);
    for (int k : extra_keys(*p)) {
      if (node == node_index_.end()) {
        key_always_[k] = 1;
      } else if (key_nodes_[k].empty() || key_nodes_[k].back() != node->second) {
        key_nodes_[k].push_back(node->second);
      }
    }
  }
  class_keys_.resize(s.classes_.size());
  for (size_t c = 0; c < s.classes_.size(); ++c) class_keys_[c] = extra_keys(*s.classes_[c].rep);
}

bool SessionShortcutImpl::IndexAntiAffinityGroups() {
  SolverImpl& s = *impl_;
  const size_t ng = s.groups_.size();
  group_base_owned_.assign(ng, 0);
  group_bound_owners_.assign(ng, 0);
  node_owned_groups_.assign(base_.nodes.size(), {});
  class_owned_groups_.resize(s.classes_.size());
  class_order_sensitive_.assign(s.classes_.size(), 0);
  for (size_t c = 0; c < s.classes_.size(); ++c) {
    const PodClass& cls = s.classes_[c];
    class_owned_groups_[c] = cls.required_anti;
    class_owned_groups_[c].insert(class_owned_groups_[c].end(), cls.preferred_anti.begin(),
                                  cls.preferred_anti.end());
    bool other_key = false;
    for (int g : cls.inverse) other_key |= !s.groups_[g].is_hostname;
    class_order_sensitive_[c] = cls.inverse.size() >= 2 && other_key;
  }
  for (size_t i = 0; i < base_.pods.size(); ++i) {
    const int c = s.pod_class_[i];
    if (class_order_sensitive_[c]) return false;
    for (int g : class_owned_groups_[c]) group_base_owned_[g] = 1;
  }
  for (const Pod* p : base_.bound_pods) {
    if (p == nullptr || !p->spec.affinity || !p->spec.affinity->pod_anti_affinity) continue;
    auto node = node_index_.find(p->spec.node_name);
    for (const auto& t : p->spec.affinity->pod_anti_affinity->required) {
      const int g = s.GroupFor(GroupKind::kAntiAffinity, p->metadata.namespace_, t, *p);
      ++group_bound_owners_[g];
      if (node != node_index_.end()) node_owned_groups_[node->second].push_back(g);
    }
  }
  if (s.groups_.size() != ng) return false;  // every group exists after Build
  return true;
}

int SessionShortcutImpl::ClassOf(const Pod& p) const {
  auto it = class_of_.find(&p);
  if (it != class_of_.end()) return it->second;
  auto c = impl_->class_ids_.find(impl_->ClassKey(p, apis::core::PodRequests(p)));
  return c == impl_->class_ids_.end() ? -1 : c->second;
}

bool SessionShortcutImpl::Admissible(std::span<const size_t> removed_nodes) {
  SolverImpl& s = *impl_;
  for (size_t n : removed_nodes) {
    if (node_sensitive_[n]) return false;
  }
  const size_t nb = base_.pods.size();
  for (size_t i = nb; i < q_class_.size(); ++i) {
    if (class_order_sensitive_[q_class_[i]]) return false;
  }
  // Every selector key must still be read by some pod of the reduced input.
  for (size_t k = 0; k < key_nodes_.size(); ++k) {
    if (key_always_[k]) continue;
    bool read = false;
    for (int n : key_nodes_[k]) {
      if (!s.removed_[n]) {
        read = true;
        break;
      }
    }
    for (size_t i = nb; i < q_class_.size() && !read; ++i) {
      for (int ck : class_keys_[q_class_[i]]) read |= ck == static_cast<int>(k);
    }
    if (!read) return false;
  }
  // Anti-affinity groups only pods that are gone own do not exist in the reduced input.
  owners_left_ = group_bound_owners_;
  for (size_t n : removed_nodes) {
    if (s.removed_[n] != 1) continue;  // counted once even when listed twice
    s.removed_[n] = 2;
    for (int g : node_owned_groups_[n]) --owners_left_[g];
  }
  for (size_t n : removed_nodes) s.removed_[n] = 1;
  for (size_t g = 0; g < s.groups_.size(); ++g) {
    if (s.groups_[g].kind != GroupKind::kAntiAffinity) continue;
    s.group_active_[g] = group_base_owned_[g] || owners_left_[g] > 0;
  }
  for (size_t i = nb; i < q_class_.size(); ++i) {
    for (int g : class_owned_groups_[q_class_[i]]) s.group_active_[g] = 1;
  }
  return true;
}

std::optional<absl::StatusOr<Plan>> SessionShortcutImpl::Simulate(
    std::span<const size_t> removed_nodes, std::span<const Pod* const> moved_pods) {
  SolverImpl& s = *impl_;
  q_pods_.assign(base_.pods.begin(), base_.pods.end());
  q_pods_.insert(q_pods_.end(), moved_pods.begin(), moved_pods.end());
  q_class_.assign(s.pod_class_.begin(), s.pod_class_.begin() + base_.pods.size());
  for (const Pod* p : moved_pods) {
    const int c = ClassOf(*p);
    if (c < 0) return std::nullopt;
    q_class_.push_back(c);
  }
  for (size_t n : removed_nodes) s.removed_[n] = 1;
  if (!Admissible(removed_nodes)) {
    for (size_t n : removed_nodes) s.removed_[n] = 0;
    return std::nullopt;
  }

  // Prepare: fresh claims and cursors; record what placement changes.
  s.claims_.clear();
  for (auto& v : s.variants_) {
    v.claim_cursor = 0;
    v.retry_claims.clear();
    v.priced_out.clear();
  }
  std::vector<std::pair<std::optional<Amounts>, std::optional<int64_t>>> limits;
  limits.reserve(s.pools_.size());
  for (const auto& p : s.pools_) limits.emplace_back(p.remaining, p.remaining_nodes);
  std::vector<std::pair<DomainTable*, size_t>> tables;
  tables.reserve(s.domains_.size());
  for (auto& [key, table] : s.domains_) tables.emplace_back(&table, table.names.size());
  s.logging_ = true;
  for (size_t n : removed_nodes) {
    if (s.removed_[n] != 1) continue;
    s.removed_[n] = 2;
    for (const auto& c : s.node_contributions_[n]) s.Bump(c.group, c.domain, c.owner, -1);
  }
  for (size_t n : removed_nodes) s.removed_[n] = 1;

  s.q_pods_ = q_pods_;
  s.q_class_ = q_class_;
  Plan plan = s.PlaceAll();

  // Undo.
  s.logging_ = false;
  for (auto it = s.count_log_.rbegin(); it != s.count_log_.rend(); ++it) {
    s.Bump(it->first.group, it->first.domain, it->first.owner, -it->second);
  }
  s.count_log_.clear();
  for (auto it = s.node_log_.rbegin(); it != s.node_log_.rend(); ++it) {
    NodeState& n = s.nodes_[std::get<0>(*it)];
    n.used = std::move(std::get<1>(*it));
    n.ports.resize(std::get<2>(*it));
    n.placed.clear();
    s.UpdateRoom(std::get<0>(*it));
  }
  s.node_log_.clear();
  for (auto& [table, size] : tables) {
    for (size_t i = size; i < table->names.size(); ++i) table->ids.erase(table->names[i]);
    table->names.resize(size);
  }
  for (size_t p = 0; p < s.pools_.size(); ++p) {
    s.pools_[p].remaining = std::move(limits[p].first);
    s.pools_[p].remaining_nodes = limits[p].second;
  }
  s.claims_.clear();
  for (size_t n : removed_nodes) s.removed_[n] = 0;
  std::fill(s.group_active_.begin(), s.group_active_.end(), 1);
  return absl::StatusOr<Plan>(std::move(plan));
}

std::unique_ptr<SessionShortcut> SessionShortcut::Create(const Input& base) {
  auto p = std::make_unique<SessionShortcutImpl>(base);
  if (!p->Init()) return nullptr;
  return p;
}

}  // namespace dovetail::solver::internal
