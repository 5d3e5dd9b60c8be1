#include "dovetail/controllers/nodeclaim/conditions.h"

#include <string>

#include "absl/strings/str_join.h"

namespace dovetail::controllers::nodeclaim {

namespace core = apis::core;

namespace {

std::string_view StatusName(core::ConditionStatus status) {
  switch (status) {
    case core::ConditionStatus::kTrue:
      return "True";
    case core::ConditionStatus::kFalse:
      return "False";
    case core::ConditionStatus::kUnknown:
      break;
  }
  return "Unknown";
}

}  // namespace

bool Conditions::Initialize() {
  bool changed = false;
  for (std::string_view type : kLifecycleDependents) {
    if (Get(type) == nullptr) {
      changed |= SetOne(type, core::ConditionStatus::kUnknown, kReasonAwaitingReconciliation,
                        "object is awaiting reconciliation");
    }
  }
  if (Get(kConditionReady) == nullptr) {
    changed |= SetOne(kConditionReady, core::ConditionStatus::kUnknown,
                      kReasonAwaitingReconciliation, "object is awaiting reconciliation");
  }
  if (changed) RecomputeRoot();
  return changed;
}

const core::Condition* Conditions::Get(std::string_view type) const {
  for (const core::Condition& c : conditions_) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool Conditions::IsTrue(std::string_view type) const {
  const core::Condition* c = Get(type);
  return c != nullptr && c->status == core::ConditionStatus::kTrue;
}

bool Conditions::SetTrue(std::string_view type) {
  return Set(type, core::ConditionStatus::kTrue, type, "");
}
bool Conditions::SetFalse(std::string_view type, std::string_view reason,
                          std::string_view message) {
  return Set(type, core::ConditionStatus::kFalse, reason, message);
}
bool Conditions::SetUnknown(std::string_view type, std::string_view reason,
                            std::string_view message) {
  return Set(type, core::ConditionStatus::kUnknown, reason, message);
}

bool Conditions::Set(std::string_view type, core::ConditionStatus status, std::string_view reason,
                     std::string_view message) {
  bool changed = SetOne(type, status, reason, message);
  if (type != kConditionReady) changed |= RecomputeRoot();
  return changed;
}

bool Conditions::SetOne(std::string_view type, core::ConditionStatus status,
                        std::string_view reason, std::string_view message) {
  for (core::Condition& c : conditions_) {
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

bool Conditions::RecomputeRoot() {
  std::vector<std::string> unhealthy;
  bool any_false = false;
  for (std::string_view type : kLifecycleDependents) {
    const core::Condition* c = Get(type);
    if (c == nullptr) {
      unhealthy.push_back(std::string(type) + "=Unknown");
      continue;
    }
    if (c->status == core::ConditionStatus::kTrue && c->observed_generation == generation_) {
      continue;
    }
    unhealthy.push_back(std::string(type) + "=" + std::string(StatusName(c->status)));
    any_false |=
        c->status == core::ConditionStatus::kFalse && c->observed_generation == generation_;
  }
  if (unhealthy.empty())
    return SetOne(kConditionReady, core::ConditionStatus::kTrue, kConditionReady, "");
  const std::string message = absl::StrJoin(unhealthy, ", ");
  if (any_false) {
    return SetOne(kConditionReady, core::ConditionStatus::kFalse, kReasonUnhealthyDependents,
                  message);
  }
  return SetOne(kConditionReady, core::ConditionStatus::kUnknown, kReasonReconcilingDependents,
                message);
}

}  // namespace dovetail::controllers::nodeclaim
