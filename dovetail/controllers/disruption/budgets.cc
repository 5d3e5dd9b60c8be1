#include "dovetail/controllers/disruption/budgets.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dovetail/apis/validation/cron.h"
#include "dovetail/common/duration.h"

namespace dovetail::controllers::disruption {
namespace {

using apis::v1::Budget;
using apis::v1::DisruptionReason;

// `nodes` of one budget for `total` nodes; nullopt when unparseable.
std::optional<int64_t> BudgetNodes(const std::string& nodes, int64_t total) {
  if (!nodes.empty() && nodes.back() == '%') {
    int64_t pct = 0;
    if (!absl::SimpleAtoi(nodes.substr(0, nodes.size() - 1), &pct) || pct < 0 || pct > 100) {
      return std::nullopt;
    }
    // Rounded up, like a PodDisruptionBudget's maxUnavailable.
    return (pct * total + 99) / 100;
  }
  int64_t n = 0;
  if (!absl::SimpleAtoi(nodes, &n) || n < 0) return std::nullopt;
  return n;
}

}  // namespace

int64_t AllowedDisruptions(const apis::v1::NodePool& node_pool, DisruptionReason reason,
                           int64_t total_nodes, absl::Time now, std::string* error) {
  static const std::vector<Budget> kDefault = {Budget{{}, "10%", std::nullopt, std::nullopt}};
  const std::vector<Budget>* budgets = &kDefault;
  if (node_pool.spec.disruption && node_pool.spec.disruption->budgets) {
    budgets = &*node_pool.spec.disruption->budgets;
  }
  int64_t allowed = kUnlimited;
  for (size_t i = 0; i < budgets->size(); ++i) {
    const Budget& b = (*budgets)[i];
    if (!b.reasons.empty() &&
        std::find(b.reasons.begin(), b.reasons.end(), reason) == b.reasons.end()) {
      continue;
    }
    auto fail = [&](const std::string& why) {
      if (error != nullptr) {
        *error = absl::StrCat("NodePool ", node_pool.metadata.name, " budget ", i, ": ", why);
      }
      return int64_t{0};
    };
    if (b.schedule.has_value() != b.duration.has_value()) {
      return fail("schedule and duration must be set together");
    }
    if (b.schedule) {
      auto cron = apis::validation::ParseCronSchedule(*b.schedule);
      if (!cron.ok()) return fail(absl::StrCat("schedule: ", cron.status().message()));
      auto duration = ParseGoDuration(*b.duration);
      if (!duration.ok()) return fail(absl::StrCat("duration: ", duration.status().message()));
      if (apis::validation::NextActivation(*cron, now - *duration) > now) continue;  // inactive
    }
    auto n = BudgetNodes(b.nodes.value_or("10%"), total_nodes);
    if (!n)
      return fail(
          absl::StrCat("nodes \"", b.nodes.value_or(""), "\" is not a count or percentage"));
    allowed = std::min(allowed, *n);
  }
  return allowed;
}

int64_t RemainingDisruptions(const apis::v1::NodePool& node_pool, DisruptionReason reason,
                             int64_t total_nodes, int64_t disrupting, absl::Time now,
                             std::string* error) {
  const int64_t allowed = AllowedDisruptions(node_pool, reason, total_nodes, now, error);
  if (allowed == kUnlimited) return kUnlimited;
  return std::max<int64_t>(0, allowed - disrupting);
}

}  // namespace dovetail::controllers::disruption
