// NodeClaim status conditions with upstream's semantics (operatorpkg's ConditionSet as Karpenter
// uses it for NodeClaims): the dependents Launched, Registered and Initialized, and the root
// Ready, which is True when every dependent is True for the object's current generation, False
// (reason UnhealthyDependents) once a dependent is False for the current generation, and Unknown
// (reason ReconcilingDependents) otherwise. A condition's lastTransitionTime changes only when its
// status changes; observedGeneration is the object's generation at the last write.
// Used by the lifecycle controller; pure functions over plain data, thread-compatible.
#pragma once

#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "dovetail/apis/core/meta.h"

namespace dovetail::controllers::nodeclaim {

inline constexpr std::string_view kConditionLaunched = "Launched";
inline constexpr std::string_view kConditionRegistered = "Registered";
inline constexpr std::string_view kConditionInitialized = "Initialized";
inline constexpr std::string_view kConditionReady = "Ready";
// Disruption conditions (not dependents of Ready; reference §2.6, §2.8, §2.9).
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
inline constexpr std::string_view kReasonAwaitingReconciliation = "AwaitingReconciliation";
inline constexpr std::string_view kReasonLaunchFailed = "LaunchFailed";
inline constexpr std::string_view kReasonNodeNotFound = "NodeNotFound";
inline constexpr std::string_view kReasonMultipleNodesFound = "MultipleNodesFound";
inline constexpr std::string_view kReasonNodeNotReady = "NodeNotReady";
inline constexpr std::string_view kReasonStartupTaintsExist = "StartupTaintsExist";
inline constexpr std::string_view kReasonKnownEphemeralTaintsExist = "KnownEphemeralTaintsExist";
inline constexpr std::string_view kReasonResourceNotRegistered = "ResourceNotRegistered";
inline constexpr std::string_view kReasonUnhealthyDependents = "UnhealthyDependents";
inline constexpr std::string_view kReasonReconcilingDependents = "ReconcilingDependents";

// The dependents of Ready, in upstream's order.
inline constexpr std::string_view kLifecycleDependents[] = {
    kConditionLaunched, kConditionRegistered, kConditionInitialized};

// A view over a NodeClaim's conditions that keeps Ready in step with the dependents.
class Conditions {
 public:
  // `conditions` must outlive this object; `generation` is metadata.generation.
  Conditions(std::vector<apis::core::Condition>& conditions, int64_t generation, absl::Time now)
      : conditions_(conditions), generation_(generation), now_(now) {}

  // Adds every missing dependent and the root as Unknown/AwaitingReconciliation.
  // Returns whether anything changed.
  bool Initialize();

  const apis::core::Condition* Get(std::string_view type) const;
  bool IsTrue(std::string_view type) const;

  // Sets a condition (True: the reason is the type itself, as upstream). Returns whether anything
  // changed (status, reason, message or observed generation). Setting a dependent recomputes Ready.
  bool SetTrue(std::string_view type);
  bool SetFalse(std::string_view type, std::string_view reason, std::string_view message);
  bool SetUnknown(std::string_view type, std::string_view reason, std::string_view message);
  bool Set(std::string_view type, apis::core::ConditionStatus status, std::string_view reason,
           std::string_view message);

 private:
  bool SetOne(std::string_view type, apis::core::ConditionStatus status, std::string_view reason,
              std::string_view message);
  bool RecomputeRoot();

  std::vector<apis::core::Condition>& conditions_;
  const int64_t generation_;
  const absl::Time now_;
};

}  // namespace dovetail::controllers::nodeclaim
