// EC2NodeClass status conditions (docs/aws-provider.md): the dependents SubnetsReady,
// SecurityGroupsReady, AMIsReady, InstanceProfileReady and ValidationSucceeded, and the root
// Ready, with operatorpkg's ConditionSet semantics (apis/core/condition_set.h).
// Pure functions over plain data; thread-compatible.
#pragma once

#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "dovetail/apis/core/condition_set.h"
#include "dovetail/apis/core/meta.h"

namespace dovetail::providers::aws::nodeclass {

inline constexpr std::string_view kConditionReady = apis::core::kConditionTypeReady;
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
inline constexpr std::string_view kReasonAwaitingReconciliation =
    apis::core::kReasonAwaitingReconciliation;
inline constexpr std::string_view kReasonUnhealthyDependents =
    apis::core::kReasonUnhealthyDependents;
inline constexpr std::string_view kReasonReconcilingDependents =
    apis::core::kReasonReconcilingDependents;

// A view over an EC2NodeClass's conditions that keeps Ready in step with the dependents.
class NodeClassConditions : public apis::core::ConditionSet {
 public:
  // `conditions` must outlive this object; `generation` is metadata.generation.
  NodeClassConditions(std::vector<apis::core::Condition>& conditions, int64_t generation,
                      absl::Time now)
      : ConditionSet(conditions, generation, now, kDependents) {}
  // True for the current generation.
  bool IsTrue(std::string_view type) const { return IsTrueForGeneration(type); }
};

}  // namespace dovetail::providers::aws::nodeclass
