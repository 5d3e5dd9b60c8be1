// NodeClaim status conditions with upstream's semantics (apis/core/condition_set.h): the
// dependents Launched, Registered and Initialized, and the root Ready.
// Used by the lifecycle controller; pure functions over plain data, thread-compatible.
#pragma once

#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "dovetail/apis/core/condition_set.h"
#include "dovetail/apis/core/meta.h"

namespace dovetail::controllers::nodeclaim {

inline constexpr std::string_view kConditionLaunched = "Launched";
inline constexpr std::string_view kConditionRegistered = "Registered";
inline constexpr std::string_view kConditionInitialized = "Initialized";
inline constexpr std::string_view kConditionReady = apis::core::kConditionTypeReady;
// Disruption conditions (not dependents of Ready; docs/nodeclaim-lifecycle.md and
// docs/disruption.md).
// Consolidatable=True once consolidateAfter has passed since the last pod event (or since
// initialization); removed when consolidateAfter is Never or the claim is not initialized.
inline constexpr std::string_view kConditionConsolidatable = "Consolidatable";
// Drifted=True with the drift reason below (or the provider's reason from IsDrifted).
inline constexpr std::string_view kConditionDrifted = "Drifted";
// DisruptionReason=True(reason = Empty | Underutilized | Drifted | ...) while a disruption command
// holds the claim (set with the karpenter.sh/disrupted taint, cleared on rollback).
inline constexpr std::string_view kConditionDisruptionReason = "DisruptionReason";

// Drift reasons.
inline constexpr std::string_view kReasonNodePoolDrifted = "NodePoolDrifted";
inline constexpr std::string_view kReasonRequirementsDrifted = "RequirementsDrifted";
inline constexpr std::string_view kReasonInstanceTypeNotFound = "InstanceTypeNotFound";

// Reasons (upstream's).
inline constexpr std::string_view kReasonAwaitingReconciliation =
    apis::core::kReasonAwaitingReconciliation;
inline constexpr std::string_view kReasonLaunchFailed = "LaunchFailed";
inline constexpr std::string_view kReasonNodeNotFound = "NodeNotFound";
inline constexpr std::string_view kReasonMultipleNodesFound = "MultipleNodesFound";
inline constexpr std::string_view kReasonNodeNotReady = "NodeNotReady";
inline constexpr std::string_view kReasonStartupTaintsExist = "StartupTaintsExist";
inline constexpr std::string_view kReasonKnownEphemeralTaintsExist = "KnownEphemeralTaintsExist";
inline constexpr std::string_view kReasonResourceNotRegistered = "ResourceNotRegistered";
inline constexpr std::string_view kReasonUnhealthyDependents =
    apis::core::kReasonUnhealthyDependents;
inline constexpr std::string_view kReasonReconcilingDependents =
    apis::core::kReasonReconcilingDependents;

// The dependents of Ready, in upstream's order.
inline constexpr std::string_view kLifecycleDependents[] = {
    kConditionLaunched, kConditionRegistered, kConditionInitialized};

// A view over a NodeClaim's conditions that keeps Ready in step with the lifecycle dependents.
class Conditions : public apis::core::ConditionSet {
 public:
  // `conditions` must outlive this object; `generation` is metadata.generation.
  Conditions(std::vector<apis::core::Condition>& conditions, int64_t generation, absl::Time now)
      : ConditionSet(conditions, generation, now, kLifecycleDependents) {}
};

}  // namespace dovetail::controllers::nodeclaim
