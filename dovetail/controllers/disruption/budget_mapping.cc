// Per-pass disruption budgets per NodePool (docs/disruption.md, "Budgets").
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "dovetail/controllers/disruption/budgets.h"
#include "dovetail/controllers/disruption/disruption.h"

namespace dovetail::controllers::disruption {

int64_t BudgetMapping::Remaining(std::string_view pool) const {
  auto it = remaining.find(std::string(pool));
  return it == remaining.end() ? 0 : it->second;
}

void BudgetMapping::Take(std::string_view pool) {
  auto it = remaining.find(std::string(pool));
  if (it == remaining.end() || it->second <= 0) return;
  if (it->second != kUnlimited) --it->second;
}

BudgetMapping BuildBudgetMapping(const ClusterView& view, apis::v1::DisruptionReason reason) {
  absl::flat_hash_map<std::string, int64_t> total;
  absl::flat_hash_map<std::string, int64_t> disrupting;
  for (const state::StateNode& sn : view.snapshot.nodes) {
    if (!sn.Managed() || !sn.Initialized()) continue;
    const std::string pool = sn.NodePool();
    if (pool.empty()) continue;
    ++total[pool];
    const bool not_ready =
        sn.node == nullptr || sn.node->ready != apis::core::ConditionStatus::kTrue;
    if (not_ready || sn.Deleting() || sn.marked_for_deletion || view.queued.contains(sn.Key())) {
      ++disrupting[pool];
    }
  }
  BudgetMapping out;
  for (const auto& [pool, nodes] : total) {
    auto it = view.node_pools.find(pool);
    if (it == view.node_pools.end()) continue;  // a pool that is gone disrupts nothing
    std::string error;
    const int64_t busy = disrupting.contains(pool) ? disrupting.at(pool) : 0;
    out.remaining[pool] = RemainingDisruptions(it->second, reason, nodes, busy, view.now, &error);
    out.consuming[pool] = busy;
    if (!error.empty()) out.errors.push_back(absl::StrCat("nodepool/", pool, ": ", error));
  }
  std::sort(out.errors.begin(), out.errors.end());
  return out;
}

}  // namespace dovetail::controllers::disruption
