#include "dovetail/apis/core/condition_set.h"

#include <string>

#include "absl/strings/str_join.h"

namespace dovetail::apis::core {

namespace {

std::string_view StatusName(ConditionStatus status) {
  switch (status) {
    case ConditionStatus::kTrue:
      return "True";
    case ConditionStatus::kFalse:
      return "False";
    case ConditionStatus::kUnknown:
      break;
  }
  return "Unknown";
}

}  // namespace

bool ConditionSet::Initialize() {
  bool changed = false;
  for (std::string_view type : dependents_) {
    if (Get(type) == nullptr) {
      changed |= SetOne(type, ConditionStatus::kUnknown, kReasonAwaitingReconciliation,
                        "object is awaiting reconciliation");
    }
  }
  if (Get(kConditionTypeReady) == nullptr) {
    changed |= SetOne(kConditionTypeReady, ConditionStatus::kUnknown, kReasonAwaitingReconciliation,
                      "object is awaiting reconciliation");
  }
  if (changed) RecomputeRoot();
  return changed;
}

const Condition* ConditionSet::Get(std::string_view type) const {
  for (const Condition& c : conditions_) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool ConditionSet::IsTrue(std::string_view type) const {
  const Condition* c = Get(type);
  return c != nullptr && c->status == ConditionStatus::kTrue;
}

bool ConditionSet::IsTrueForGeneration(std::string_view type) const {
  const Condition* c = Get(type);
  return c != nullptr && c->status == ConditionStatus::kTrue &&
         c->observed_generation == generation_;
}

bool ConditionSet::SetTrue(std::string_view type) {
  return Set(type, ConditionStatus::kTrue, type, "");
}
bool ConditionSet::SetFalse(std::string_view type, std::string_view reason,
                            std::string_view message) {
  return Set(type, ConditionStatus::kFalse, reason, message);
}
bool ConditionSet::SetUnknown(std::string_view type, std::string_view reason,
                              std::string_view message) {
  return Set(type, ConditionStatus::kUnknown, reason, message);
}

bool ConditionSet::Set(std::string_view type, ConditionStatus status, std::string_view reason,
                       std::string_view message) {
  bool changed = SetOne(type, status, reason, message);
  if (type != kConditionTypeReady) changed |= RecomputeRoot();
  return changed;
}

bool ConditionSet::SetOne(std::string_view type, ConditionStatus status, std::string_view reason,
                          std::string_view message) {
  for (Condition& c : conditions_) {
    if (c.type != type) continue;
    if (c.status == status && c.reason == reason && c.message == message &&
        c.observed_generation == generation_) {
      return false;
    }
    if (c.status != status || !c.last_transition_time.has_value()) c.last_transition_time = now_;
    c.status = status;
    c.reason = std::string(reason);
    c.message = std::string(message);
    c.observed_generation = generation_;
    return true;
  }
  conditions_.push_back({.type = std::string(type),
                         .status = status,
                         .reason = std::string(reason),
                         .message = std::string(message),
                         .observed_generation = generation_,
                         .last_transition_time = now_});
  return true;
}

bool ConditionSet::RecomputeRoot() {
  std::vector<std::string> unhealthy;
  bool any_false = false;
  for (std::string_view type : dependents_) {
    const Condition* c = Get(type);
    if (c == nullptr) {
      unhealthy.push_back(std::string(type) + "=Unknown");
      continue;
    }
    if (c->status == ConditionStatus::kTrue && c->observed_generation == generation_) {
      continue;
    }
    unhealthy.push_back(std::string(type) + "=" + std::string(StatusName(c->status)));
    any_false |= c->status == ConditionStatus::kFalse && c->observed_generation == generation_;
  }
  if (unhealthy.empty())
    return SetOne(kConditionTypeReady, ConditionStatus::kTrue, kConditionTypeReady, "");
  const std::string message = absl::StrJoin(unhealthy, ", ");
  if (any_false) {
    return SetOne(kConditionTypeReady, ConditionStatus::kFalse, kReasonUnhealthyDependents,
                  message);
  }
  return SetOne(kConditionTypeReady, ConditionStatus::kUnknown, kReasonReconcilingDependents,
                message);
}

}  // namespace dovetail::apis::core
