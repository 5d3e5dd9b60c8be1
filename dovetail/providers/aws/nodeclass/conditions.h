// EC2NodeClass status conditions (reference §1.5, §2.14.13): the dependents SubnetsReady,
// SecurityGroupsReady, AMIsReady, InstanceProfileReady and ValidationSucceeded, and the root
// Ready, which is True when every dependent is True for the object's current generation, False
// (reason UnhealthyDependents, message naming them) once a dependent is False for the current
// generation, and Unknown (ReconcilingDependents) otherwise — operatorpkg's ConditionSet semantics,
// as the NodeClaim conditions have them. lastTransitionTime changes only with the status.
// Pure functions over plain data; thread-compatible.
#pragma once

#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "dovetail/apis/core/meta.h"

namespace dovetail::providers::aws::nodeclass {

inline constexpr std::string_view kConditionReady = "Ready";
inline constexpr std::string_view kConditionSubnetsReady = "SubnetsReady";
inline constexpr std::string_view kConditionSecurityGroupsReady = "SecurityGroupsReady";
inline constexpr std::string_view kConditionAMIsReady = "AMIsReady";
inline constexpr std::string_view kConditionInstanceProfileReady = "InstanceProfileReady";
inline constexpr std::string_view kConditionValidationSucceeded = "ValidationSucceeded";

inline constexpr std::string_view kDependents[] = {
    kConditionAMIsReady, kConditionSubnetsReady, kConditionSecurityGroupsReady,
    kConditionInstanceProfileReady, kConditionValidationSucceeded};

// Reasons.
inline constexpr std::string_view kReasonSubnetsNotFound = "SubnetsNotFound";
inline constexpr std::string_view kReasonSecurityGroupsNotFound = "SecurityGroupsNotFound";
inline constexpr std::string_view kReasonAMINotFound = "AMINotFound";
inline constexpr std::string_view kReasonInvalidAMISelector = "InvalidAMISelector";
inline constexpr std::string_view kReasonInstanceProfileNotFound = "InstanceProfileNotFound";
inline constexpr std::string_view kReasonInstanceProfileCreationFailed =
    "InstanceProfileCreationFailed";
inline constexpr std::string_view kReasonRoleNotFound = "RoleNotFound";
inline constexpr std::string_view kReasonResolutionFailed = "ResolutionFailed";  // API errors
inline constexpr std::string_view kReasonTagValidationFailed = "TagValidationFailed";
// Dovetail's: an AL2023 class while the cluster's service CIDR is unknown (bootstrap.h).
inline constexpr std::string_view kReasonClusterCIDRUnknown = "ClusterCIDRUnknown";
inline constexpr std::string_view kReasonDependenciesNotReady = "DependenciesNotReady";
inline constexpr std::string_view kReasonAwaitingReconciliation = "AwaitingReconciliation";
inline constexpr std::string_view kReasonUnhealthyDependents = "UnhealthyDependents";
inline constexpr std::string_view kReasonReconcilingDependents = "ReconcilingDependents";

// A view over an EC2NodeClass's conditions that keeps Ready in step with the dependents.
class NodeClassConditions {
 public:
  // `conditions` must outlive this object; `generation` is metadata.generation.
  NodeClassConditions(std::vector<apis::core::Condition>& conditions, int64_t generation,
                      absl::Time now)
      : conditions_(conditions), generation_(generation), now_(now) {}

  const apis::core::Condition* Get(std::string_view type) const;
  bool IsTrue(std::string_view type) const;  // True for the current generation

  // Setting a dependent recomputes Ready. True conditions take the type as the reason.
  void SetTrue(std::string_view type);
  void SetFalse(std::string_view type, std::string_view reason, std::string_view message);
  void SetUnknown(std::string_view type, std::string_view reason, std::string_view message);

 private:
  void SetOne(std::string_view type, apis::core::ConditionStatus status, std::string_view reason,
              std::string_view message);
  void RecomputeRoot();

  std::vector<apis::core::Condition>& conditions_;
  const int64_t generation_;
  const absl::Time now_;
};

}  // namespace dovetail::providers::aws::nodeclass
