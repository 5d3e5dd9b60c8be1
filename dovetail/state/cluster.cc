#include "dovetail/state/cluster.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/state/pod_predicates.h"

namespace dovetail::state {

namespace v1 = apis::v1;

namespace {

std::string NodeKeyOf(const kube::NodeInfo& node) {
  return node.provider_id.empty() ? node.meta.name : node.provider_id;
}

std::string ClaimKeyOf(const v1::NodeClaim& claim) {
  return claim.status.provider_id.empty() ? UnlaunchedNodeClaimKey(claim.metadata.name)
                                          : claim.status.provider_id;
}

void AddAmounts(absl::flat_hash_map<const std::string*, __int128>& sums,
                const std::vector<kube::ResourceAmount>& amounts, int64_t sign) {
  for (const kube::ResourceAmount& a : amounts) {
    auto it = sums.try_emplace(a.name, 0).first;
    it->second += static_cast<__int128>(sign) * a.milli;
    if (it->second == 0) sums.erase(it);
  }
}

ResourceList SumsToList(const absl::flat_hash_map<const std::string*, __int128>& sums) {
  constexpr __int128 kMax = std::numeric_limits<int64_t>::max();
  std::vector<kube::ResourceAmount> amounts;
  amounts.reserve(sums.size());
  for (const auto& [name, milli] : sums) {
    amounts.push_back({name, static_cast<int64_t>(std::clamp(milli, -kMax, kMax))});
  }
  return ToResourceList(amounts);
}

}  // namespace

// ---- events --------------------------------------------------------------------------------

void Cluster::UpdateNode(NodePtr node) {
  if (node == nullptr) return;
  const std::string key = NodeKeyOf(*node);
  absl::MutexLock lock(&mu_);
  auto old = node_keys_.find(node->meta.name);
  if (old != node_keys_.end() && old->second != key) {
    // The node gained (or changed) its provider id.
    const std::string& name = node->meta.name;
    MoveMarks(old->second, key, [&name](Entry& e) {
      if (e.node != nullptr && e.node->meta.name == name) e.node = nullptr;
    });
  }
  entries_[key].node = std::move(node);
  node_keys_[entries_[key].node->meta.name] = key;
}

void Cluster::DeleteNode(const kube::NodeInfo& node) {
  absl::MutexLock lock(&mu_);
  auto it = node_keys_.find(node.meta.name);
  if (it == node_keys_.end()) return;
  const std::string key = it->second;
  node_keys_.erase(it);
  auto entry = entries_.find(key);
  if (entry != entries_.end() && entry->second.node != nullptr &&
      entry->second.node->meta.name == node.meta.name) {
    entry->second.node = nullptr;
  }
  EraseIfEmpty(key);
}

void Cluster::UpdateNodeClaim(NodeClaimPtr node_claim) {
  if (node_claim == nullptr) return;
  const std::string key = ClaimKeyOf(*node_claim);
  const std::string name = node_claim->metadata.name;
  absl::MutexLock lock(&mu_);
  auto old = claim_keys_.find(name);
  if (old != claim_keys_.end() && old->second != key) {
    // Launched: the claim moves from its provisional key to its provider id.
    MoveMarks(old->second, key, [&name](Entry& e) {
      if (e.node_claim != nullptr && e.node_claim->metadata.name == name) e.node_claim = nullptr;
    });
  }
  entries_[key].node_claim = std::move(node_claim);
  claim_keys_[name] = key;
}

void Cluster::DeleteNodeClaim(const v1::NodeClaim& node_claim) {
  absl::MutexLock lock(&mu_);
  auto it = claim_keys_.find(node_claim.metadata.name);
  if (it == claim_keys_.end()) return;
  const std::string key = it->second;
  claim_keys_.erase(it);
  auto entry = entries_.find(key);
  if (entry != entries_.end() && entry->second.node_claim != nullptr &&
      entry->second.node_claim->metadata.name == node_claim.metadata.name) {
    entry->second.node_claim = nullptr;
  }
  EraseIfEmpty(key);
}

void Cluster::MoveMarks(const std::string& old_key, const std::string& new_key,
                        absl::FunctionRef<void(Entry&)> detach) {
  auto it = entries_.find(old_key);
  if (it == entries_.end()) return;
  detach(it->second);
  if (it->second.node != nullptr || it->second.node_claim != nullptr) return;
  Entry& moved = entries_[new_key];  // may rehash: `it` is not used below
  const Entry& old = entries_.find(old_key)->second;
  moved.marked_for_deletion |= old.marked_for_deletion;
  if (old.nominated_until &&
      (!moved.nominated_until || *moved.nominated_until < *old.nominated_until)) {
    moved.nominated_until = old.nominated_until;
  }
  entries_.erase(old_key);
}

void Cluster::EraseIfEmpty(const std::string& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  if (it->second.node == nullptr && it->second.node_claim == nullptr) entries_.erase(it);
}

void Cluster::UpdatePod(PodPtr pod) {
  if (pod == nullptr) return;
  const std::string pod_key = pod->meta.Key();
  absl::MutexLock lock(&mu_);
  Unbind(pod_key);
  if (pod->node_name.empty() || IsTerminal(*pod)) return;
  Binding& binding = bindings_[pod->node_name];
  AddAmounts(binding.requests, pod->requests, +1);
  if (OwnedBy(*pod, "DaemonSet")) AddAmounts(binding.daemon_set_requests, pod->requests, +1);
  pod_nodes_[pod_key] = pod->node_name;
  binding.pods[pod_key] = std::move(pod);
}

void Cluster::DeletePod(const kube::PodInfo& pod) {
  pod_scheduling_times_.Forget(pod.meta.Key());
  absl::MutexLock lock(&mu_);
  Unbind(pod.meta.Key());
}

void Cluster::Unbind(const std::string& pod_key) {
  auto node = pod_nodes_.find(pod_key);
  if (node == pod_nodes_.end()) return;
  auto binding = bindings_.find(node->second);
  pod_nodes_.erase(node);
  if (binding == bindings_.end()) return;
  auto pod = binding->second.pods.find(pod_key);
  if (pod != binding->second.pods.end()) {
    AddAmounts(binding->second.requests, pod->second->requests, -1);
    if (OwnedBy(*pod->second, "DaemonSet")) {
      AddAmounts(binding->second.daemon_set_requests, pod->second->requests, -1);
    }
    binding->second.pods.erase(pod);
  }
  if (binding->second.pods.empty()) bindings_.erase(binding);
}

// ---- marks ---------------------------------------------------------------------------------

void Cluster::Nominate(std::string_view key, absl::Duration duration) {
  const absl::Time until = clock_.Now() + duration;
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(AsAbsl(key));
  if (it == entries_.end()) return;
  std::optional<absl::Time>& current = it->second.nominated_until;
  if (!current.has_value() || *current < until) current = until;
}

void Cluster::MarkForDeletion(const std::vector<std::string>& keys) {
  absl::MutexLock lock(&mu_);
  for (const std::string& key : keys) {
    auto it = entries_.find(key);
    if (it != entries_.end()) it->second.marked_for_deletion = true;
  }
}

void Cluster::UnmarkForDeletion(const std::vector<std::string>& keys) {
  absl::MutexLock lock(&mu_);
  for (const std::string& key : keys) {
    auto it = entries_.find(key);
    if (it != entries_.end()) it->second.marked_for_deletion = false;
  }
}

// ---- reads ---------------------------------------------------------------------------------

StateNode Cluster::ToStateNode(const Entry& entry) const {
  StateNode out;
  out.node = entry.node;
  out.node_claim = entry.node_claim;
  out.marked_for_deletion = entry.marked_for_deletion;
  out.nominated_until = entry.nominated_until;
  return out;
}

std::optional<StateNode> Cluster::Get(std::string_view key) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = entries_.find(AsAbsl(key));
  if (it == entries_.end()) return std::nullopt;
  return ToStateNode(it->second);
}

std::optional<StateNode> Cluster::GetByNodeName(std::string_view node_name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto key = node_keys_.find(AsAbsl(node_name));
  if (key != node_keys_.end()) {
    auto it = entries_.find(key->second);
    if (it != entries_.end()) return ToStateNode(it->second);
  }
  // A launched NodeClaim whose Node has not been seen yet.
  for (const auto& [k, entry] : entries_) {
    if (entry.node == nullptr && entry.node_claim != nullptr &&
        entry.node_claim->status.node_name == node_name) {
      return ToStateNode(entry);
    }
  }
  return std::nullopt;
}

std::optional<StateNode> Cluster::GetByNodeClaimName(std::string_view node_claim_name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto key = claim_keys_.find(AsAbsl(node_claim_name));
  if (key == claim_keys_.end()) return std::nullopt;
  auto it = entries_.find(key->second);
  if (it == entries_.end()) return std::nullopt;
  return ToStateNode(it->second);
}

std::vector<StateNode> Cluster::Nodes() const {
  std::vector<std::pair<std::string, StateNode>> keyed;
  {
    absl::ReaderMutexLock lock(&mu_);
    keyed.reserve(entries_.size());
    for (const auto& [key, entry] : entries_) keyed.emplace_back(key, ToStateNode(entry));
  }
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<StateNode> out;
  out.reserve(keyed.size());
  for (auto& [key, node] : keyed) out.push_back(std::move(node));
  return out;
}

size_t Cluster::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return entries_.size();
}

std::vector<PodPtr> Cluster::PodsOn(std::string_view node_name) const {
  std::vector<std::pair<std::string, PodPtr>> keyed;
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = bindings_.find(AsAbsl(node_name));
    if (it == bindings_.end()) return {};
    for (const auto& [key, pod] : it->second.pods) keyed.emplace_back(key, pod);
  }
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<PodPtr> out;
  out.reserve(keyed.size());
  for (auto& [key, pod] : keyed) out.push_back(std::move(pod));
  return out;
}

ResourceList Cluster::PodRequests(std::string_view node_name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = bindings_.find(AsAbsl(node_name));
  if (it == bindings_.end()) return {};
  return SumsToList(it->second.requests);
}

ResourceList Cluster::DaemonSetRequests(std::string_view node_name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = bindings_.find(AsAbsl(node_name));
  if (it == bindings_.end()) return {};
  return SumsToList(it->second.daemon_set_requests);
}

absl::flat_hash_map<std::string, ResourceList> Cluster::UsageByPoolLocked() const {
  absl::flat_hash_map<std::string, ResourceList> usage;
  for (const auto& [key, entry] : entries_) {
    const StateNode node = ToStateNode(entry);
    const std::string pool = node.NodePool();
    if (pool.empty()) continue;
    ResourceList& sum = usage[pool];
    const ResourceList capacity =
        node.Launched() ? node.Capacity() : node.node_claim->spec.resources.requests;
    for (const auto& [name, quantity] : capacity) {
      if (name != "nodes") sum[name] += quantity;
    }
    sum["nodes"] += Quantity::FromUnits(1);
  }
  return usage;
}

ResourceList Cluster::NodePoolUsage(std::string_view node_pool) const {
  absl::flat_hash_map<std::string, ResourceList> usage;
  {
    absl::ReaderMutexLock lock(&mu_);
    usage = UsageByPoolLocked();
  }
  auto it = usage.find(AsAbsl(node_pool));
  return it == usage.end() ? ResourceList{} : std::move(it->second);
}

Snapshot Cluster::TakeSnapshot() const {
  Snapshot snapshot;
  snapshot.taken = clock_.Now();
  std::vector<std::pair<std::string, StateNode>> keyed;
  {
    absl::ReaderMutexLock lock(&mu_);
    snapshot.node_pool_usage = UsageByPoolLocked();
    keyed.reserve(entries_.size());
    for (const auto& [key, entry] : entries_) {
      StateNode node = ToStateNode(entry);
      auto binding = bindings_.find(node.Name());
      if (binding != bindings_.end()) {
        std::vector<PodPtr>& pods = snapshot.pods_by_node[node.Name()];
        for (const auto& [pod_key, pod] : binding->second.pods) pods.push_back(pod);
      }
      keyed.emplace_back(key, std::move(node));
    }
  }
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  snapshot.nodes.reserve(keyed.size());
  for (auto& [key, node] : keyed) snapshot.nodes.push_back(std::move(node));
  for (auto& [name, pods] : snapshot.pods_by_node) {
    std::sort(pods.begin(), pods.end(), [](const PodPtr& a, const PodPtr& b) {
      return std::tie(*a->meta.namespace_, a->meta.name) <
             std::tie(*b->meta.namespace_, b->meta.name);
    });
  }
  return snapshot;
}

// ---- sync ----------------------------------------------------------------------------------

void Cluster::AddSyncCheck(std::function<bool()> synced) {
  sync_checks_.push_back(std::move(synced));
}

bool Cluster::Synced() const {
  for (const auto& check : sync_checks_) {
    if (!check()) return false;
  }
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& [name, key] : claim_keys_) {
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.node_claim == nullptr) return false;
    if (it->second.node_claim->status.provider_id.empty()) return false;
  }
  return true;
}

}  // namespace dovetail::state
