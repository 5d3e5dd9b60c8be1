// Status conditions with operatorpkg's ConditionSet semantics, as Karpenter uses them for
// NodeClaims, NodePools and EC2NodeClasses: a list of dependent conditions and the root Ready,
// which is True when every dependent is True for the object's current generation, False (reason
// UnhealthyDependents, the message naming them) once a dependent is False for the current
// generation, and Unknown (reason ReconcilingDependents) otherwise. A True condition's reason is
// its type. A condition's lastTransitionTime changes only when its status changes;
// observedGeneration is the object's generation at the last write.
// Pure functions over plain data; thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "dovetail/apis/core/meta.h"

namespace dovetail::apis::core {

inline constexpr std::string_view kConditionTypeReady = "Ready";
inline constexpr std::string_view kReasonAwaitingReconciliation = "AwaitingReconciliation";
inline constexpr std::string_view kReasonUnhealthyDependents = "UnhealthyDependents";
inline constexpr std::string_view kReasonReconcilingDependents = "ReconcilingDependents";

// A view over an object's conditions that keeps Ready in step with the dependents.
class ConditionSet {
 public:
  // `conditions` and `dependents` must outlive this object; `generation` is
  // metadata.generation.
  ConditionSet(std::vector<Condition>& conditions, int64_t generation, absl::Time now,
               std::span<const std::string_view> dependents)
      : conditions_(conditions), generation_(generation), now_(now), dependents_(dependents) {}

  // Adds every missing dependent and the root as Unknown/AwaitingReconciliation.
  // Returns whether anything changed.
  bool Initialize();

  const Condition* Get(std::string_view type) const;
  // True, whatever generation it was written for.
  bool IsTrue(std::string_view type) const;
  // True for the object's current generation.
  bool IsTrueForGeneration(std::string_view type) const;

  // Sets a condition. Returns whether anything changed (status, reason, message or observed
  // generation). Setting a dependent recomputes Ready.
  bool SetTrue(std::string_view type);
  bool SetFalse(std::string_view type, std::string_view reason, std::string_view message);
  bool SetUnknown(std::string_view type, std::string_view reason, std::string_view message);
  bool Set(std::string_view type, ConditionStatus status, std::string_view reason,
           std::string_view message);

 private:
  bool SetOne(std::string_view type, ConditionStatus status, std::string_view reason,
              std::string_view message);
  bool RecomputeRoot();

  std::vector<Condition>& conditions_;
  const int64_t generation_;
  const absl::Time now_;
  const std::span<const std::string_view> dependents_;
};

}  // namespace dovetail::apis::core
