// Command validation after the delay (docs/disruption.md, "Validation").
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/controllers/disruption/disruption.h"
#include "dovetail/controllers/disruption/internal.h"

namespace dovetail::controllers::disruption {
namespace {

// The command's candidates as they are in `fresh`; FailedPrecondition when one is no longer a
// candidate of the method (or is nominated), or its pool's budget no longer allows them all.
absl::StatusOr<std::vector<Candidate>> RecheckCandidates(const Command& command,
                                                         const ClusterView& fresh,
                                                         const Options& options) {
  for (const Candidate& c : command.candidates) {
    for (const state::StateNode& sn : fresh.snapshot.nodes) {
      if (sn.Name() == c.name && sn.Nominated(fresh.now)) {
        return absl::FailedPreconditionError(
            absl::StrCat("candidate \"", c.name, "\" is nominated for a pending pod"));
      }
    }
  }
  std::vector<Explanation> explanations;
  std::vector<Candidate> current = GetCandidates(fresh, command.method, options, &explanations);
  absl::flat_hash_map<std::string, const Candidate*> by_name;
  for (const Candidate& c : current) by_name[c.name] = &c;
  std::vector<Candidate> out;
  absl::flat_hash_map<std::string, int64_t> per_pool;
  for (const Candidate& c : command.candidates) {
    auto it = by_name.find(c.name);
    if (it == by_name.end()) {
      std::string why = "it is gone";
      for (const Explanation& e : explanations) {
        if (e.node == c.name) why = e.message;
      }
      return absl::FailedPreconditionError(
          absl::StrCat("candidate \"", c.name, "\" is no longer a candidate: ", why));
    }
    out.push_back(*it->second);
    ++per_pool[c.node_pool];
  }
  const BudgetMapping budgets = BuildBudgetMapping(fresh, command.reason());
  for (const auto& [pool, n] : per_pool) {
    if (budgets.Remaining(pool) < n) {
      return absl::FailedPreconditionError(absl::StrCat("NodePool \"", pool, "\" budget allows ",
                                                        budgets.Remaining(pool),
                                                        " disruptions, the command needs ", n));
    }
  }
  return out;
}

}  // namespace

absl::Status ValidateCommand(const Command& command, const ClusterView& fresh,
                             const Simulator& fresh_simulator, const Options& options) {
  if (!IsConsolidation(command.method)) return absl::OkStatus();  // drift is not validated
  if (command.candidates.empty()) {
    return absl::FailedPreconditionError("command has no candidates");
  }
  ASSIGN_OR_RETURN(std::vector<Candidate> candidates, RecheckCandidates(command, fresh, options));
  if (command.method == Method::kEmptiness) return absl::OkStatus();

  std::string why;
  ASSIGN_OR_RETURN(
      std::optional<Command> again,
      internal::ComputeConsolidation(command.method, candidates, fresh_simulator, options, &why));
  if (!again.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat("consolidation no longer valid: ", why));
  }
  if (again->replacements.size() != command.replacements.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the simulation now gives ", again->replacements.size(),
                     " replacements instead of ", command.replacements.size()));
  }
  if (!command.replacements.empty()) {
    absl::flat_hash_set<std::string> now_allowed;
    for (const auto& type : again->replacements.front().instance_types) {
      now_allowed.insert(type->name());
    }
    for (const auto& type : command.replacements.front().instance_types) {
      if (!now_allowed.contains(type->name())) {
        return absl::FailedPreconditionError(
            absl::StrCat("replacement instance type \"", type->name(),
                         "\" is no longer an option of the simulation"));
      }
    }
  }
  // Candidates may have changed while simulating (upstream checks them again).
  ASSIGN_OR_RETURN(std::vector<Candidate> still, RecheckCandidates(command, fresh, options));
  (void)still;
  return absl::OkStatus();
}

absl::StatusOr<Command> ValidEmptinessSubset(const Command& command, const ClusterView& fresh,
                                             const Options& options) {
  std::vector<Candidate> current = GetCandidates(fresh, Method::kEmptiness, options, nullptr);
  absl::flat_hash_map<std::string, Candidate*> by_name;
  for (Candidate& c : current) by_name[c.name] = &c;
  BudgetMapping budgets = BuildBudgetMapping(fresh, apis::v1::DisruptionReason::kEmpty);
  Command out;
  out.method = Method::kEmptiness;
  for (const Candidate& c : command.candidates) {
    auto it = by_name.find(c.name);
    if (it == by_name.end() || budgets.Remaining(c.node_pool) <= 0) continue;
    budgets.Take(c.node_pool);
    out.savings_per_hour += it->second->price;
    out.pods_moved += static_cast<int>(it->second->reschedulable.size());
    out.candidates.push_back(std::move(*it->second));
  }
  if (out.candidates.empty()) {
    return absl::FailedPreconditionError("no candidate of the emptiness command is still valid");
  }
  return out;
}

}  // namespace dovetail::controllers::disruption
