// Topology groups: one per distinct topology spread constraint or pod (anti-)affinity term of the
// question (same kind, key, selector and namespaces), with its pod counts per domain. Domains are
// the values of the group's topology key, interned per key in a DomainTable. Value types;
// thread-compatible.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_join.h"
#include "dovetail/scheduling/label_selector.h"
#include "dovetail/scheduling/taints.h"
#include "dovetail/solver/internal/names.h"
#include "dovetail/solver/solver.h"

namespace dovetail::solver::internal {

struct DomainTable {
  absl::flat_hash_map<std::string, int> ids;
  std::vector<std::string> names;
  // RegisterDomains: values before `static_size` come from the catalog and the pools, those up to
  // `registered_size` from existing nodes' labels.
  size_t static_size = 0;
  size_t registered_size = 0;
  int Intern(std::string_view v) {
    auto it = ids.find(std::string(v));
    if (it != ids.end()) return it->second;
    int id = static_cast<int>(names.size());
    names.emplace_back(v);
    ids.emplace(names.back(), id);
    return id;
  }
  int Find(std::string_view v) const {
    auto it = ids.find(std::string(v));
    return it == ids.end() ? -1 : it->second;
  }
};

struct NamespaceSet {
  bool all = false;
  absl::flat_hash_set<std::string> names;
  bool Contains(const std::string& ns) const { return all || names.contains(ns); }
  std::string Key() const {
    if (all) return "*";
    std::vector<std::string> v(names.begin(), names.end());
    std::sort(v.begin(), v.end());
    return absl::StrJoin(v, ",");
  }
};

enum class GroupKind { kSpread, kAffinity, kAntiAffinity };

struct TopologyGroup {
  GroupKind kind = GroupKind::kSpread;
  std::string key;
  LabelSelector selector;
  NamespaceSet namespaces;
  int32_t max_skew = 1;
  int32_t min_domains = 0;
  bool is_hostname = false;
  // Spread only: nodes must satisfy one of these to count (nodeAffinityPolicy Honor: the pod's
  // node selector with each of its required node-affinity terms, which are ORed). Empty: all.
  std::vector<Requirements> node_filters;
  bool FilterAdmits(const Requirements& node, AllowUndefined allow) const {
    if (node_filters.empty()) return true;
    for (const auto& f : node_filters) {
      if (node.Compatible(f, allow).ok()) return true;
    }
    return false;
  }
  // Spread only: nodes' taints must be tolerated to count (nodeTaintsPolicy Honor).
  std::optional<std::vector<Toleration>> taint_filter;
  std::vector<int64_t> counts;        // per domain id: pods matching the selector
  std::vector<int64_t> owner_counts;  // anti-affinity: per domain, pods owning this term
  absl::flat_hash_set<int> eligible;  // spread: domains that count for the global minimum
  int64_t total = 0;

  int64_t Count(int d) const { return d < static_cast<int>(counts.size()) ? counts[d] : 0; }
  int64_t OwnerCount(int d) const {
    return d < static_cast<int>(owner_counts.size()) ? owner_counts[d] : 0;
  }
  void Inc(std::vector<int64_t>& v, int d) {
    if (d >= static_cast<int>(v.size())) v.resize(d + 1, 0);
    ++v[d];
  }
  bool Selects(const std::string& ns, const StringMap& labels) const {
    return namespaces.Contains(ns) && scheduling::Matches(selector, labels);
  }
  // Spread: the count a domain's skew is measured against. The smallest count among the eligible
  // domains; 0 for hostname spread (a new node is an empty domain) and while fewer domains than
  // minDomains are eligible.
  int64_t SpreadMinimum() const {
    if (is_hostname) return 0;
    if (eligible.empty() || static_cast<int32_t>(eligible.size()) < min_domains) return 0;
    int64_t min = std::numeric_limits<int64_t>::max();
    for (int e : eligible) min = std::min(min, Count(e));
    return min;
  }
};

}  // namespace dovetail::solver::internal
