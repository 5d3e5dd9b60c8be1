#include "dovetail/providers/aws/nodeclass/conditions.h"

#include <string>

#include "absl/strings/str_join.h"

namespace dovetail::providers::aws::nodeclass {

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

const core::Condition* NodeClassConditions::Get(std::string_view type) const {
  for (const core::Condition& c : conditions_) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool NodeClassConditions::IsTrue(std::string_view type) const {
  const core::Condition* c = Get(type);
  return c != nullptr && c->status == core::ConditionStatus::kTrue &&
         c->observed_generation == generation_;
}

void NodeClassConditions::SetTrue(std::string_view type) {
  SetOne(type, core::ConditionStatus::kTrue, type, "");
  RecomputeRoot();
}

void NodeClassConditions::SetFalse(std::string_view type, std::string_view reason,
                                   std::string_view message) {
  SetOne(type, core::ConditionStatus::kFalse, reason, message);
  RecomputeRoot();
}

void NodeClassConditions::SetUnknown(std::string_view type, std::string_view reason,
                                     std::string_view message) {
  SetOne(type, core::ConditionStatus::kUnknown, reason, message);
  RecomputeRoot();
}

void NodeClassConditions::SetOne(std::string_view type, core::ConditionStatus status,
                                 std::string_view reason, std::string_view message) {
  for (core::Condition& c : conditions_) {
    if (c.type != type) continue;
    if (c.status != status || !c.last_transition_time.has_value()) c.last_transition_time = now_;
    c.status = status;
    c.reason = std::string(reason);
    c.message = std::string(message);
    c.observed_generation = generation_;
    return;
  }
  conditions_.push_back({.type = std::string(type),
                         .status = status,
                         .reason = std::string(reason),
                         .message = std::string(message),
                         .observed_generation = generation_,
                         .last_transition_time = now_});
}

void NodeClassConditions::RecomputeRoot() {
  std::vector<std::string> unhealthy;
  bool any_false = false;
  for (std::string_view type : kDependents) {
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
  if (unhealthy.empty()) {
    SetOne(kConditionReady, core::ConditionStatus::kTrue, kConditionReady, "");
    return;
  }
  const std::string message = absl::StrJoin(unhealthy, ", ");
  if (any_false) {
    SetOne(kConditionReady, core::ConditionStatus::kFalse, kReasonUnhealthyDependents, message);
  } else {
    SetOne(kConditionReady, core::ConditionStatus::kUnknown, kReasonReconcilingDependents, message);
  }
}

}  // namespace dovetail::providers::aws::nodeclass
