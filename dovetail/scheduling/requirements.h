// Requirements: label key -> Requirement, the constraint set of a pod, NodePool, NodeClaim,
// instance type or offering. Adding a key that is already present intersects the two, and every
// key is normalised first (failure-domain.beta.kubernetes.io/zone -> topology.kubernetes.io/zone,
// ...), so the set is always the conjunction of everything added to it.
//
// Compatible/Intersects implement Karpenter's matching rules (upstream's Requirements in
// pkg/scheduling): a key that one side does not define behaves like Exists; Compatible
// additionally requires the keys of `other` to be defined here unless they are NotIn/DoesNotExist
// (or, when allowed, well-known labels). Incompatibility is reported as FailedPrecondition with a
// message fit for a pod event.
//
// The well-known / restricted key rules (labels.h) and requirement validation live here too.
// Used by the scheduler, the NodePool/NodeClaim validation and drift. Value type (keys kept sorted
// in a small vector); thread-compatible.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dovetail/apis/core/meta.h"
#include "dovetail/scheduling/requirement.h"

namespace dovetail::scheduling {

// Which keys of `other` Compatible() lets this side leave undefined.
enum class AllowUndefined { kNone, kWellKnownLabels };

class Requirements {
 public:
  using const_iterator = std::vector<Requirement>::const_iterator;

  Requirements() = default;

  // Errors: InvalidArgument from Requirement::Create (bad Gt/Lt/Gte/Lte values).
  static absl::StatusOr<Requirements> FromNodeSelectorRequirements(
      absl::Span<const apis::core::NodeSelectorRequirement> requirements);
  // Each label becomes `key In [value]`.
  static Requirements FromLabels(const apis::core::StringMap& labels);
  // A pod's scheduling requirements: its nodeSelector (as In), the first required nodeAffinity term
  // and, when the caller passes one, the heaviest preferred term (callers pick the first of equal
  // weights), all as required. matchFields are ignored (provisioning ignores pods that use them).
  // Errors: InvalidArgument from Requirement::Create.
  static absl::StatusOr<Requirements> ForPod(
      const apis::core::StringMap& node_selector,
      absl::Span<const apis::core::NodeSelectorTerm> required_terms,
      const apis::core::NodeSelectorTerm* heaviest_preferred_term = nullptr);

  // Normalises the key and intersects with the requirement already held for it, if any.
  void Add(Requirement requirement);
  absl::Status Add(const apis::core::NodeSelectorRequirement& requirement);
  absl::Status Add(absl::Span<const apis::core::NodeSelectorRequirement> requirements);
  // Adds every requirement of `other` (the conjunction of both sets).
  void Intersect(const Requirements& other);
  void Remove(std::string_view key);

  bool Has(std::string_view key) const { return Find(key) != nullptr; }
  // nullptr when the key is not defined. The key is looked up as given (not normalised).
  const Requirement* Find(std::string_view key) const;
  // The requirement for the key, or Exists when it is not defined.
  Requirement Get(std::string_view key) const;

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  // In key order.
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }

  // OK when `other` may be placed on something with these requirements. Every key of `other` must
  // be defined here unless its operator is NotIn or DoesNotExist, or it is a well-known label and
  // `allow` is kWellKnownLabels (error: `label "X" does not have known values`, with a
  // `(typo of "Y"?)` hint when a close key exists); then Intersects(other) must hold. Keys are
  // checked in order and the first failure is returned.
  absl::Status Compatible(const Requirements& other, AllowUndefined allow) const;
  // OK when every key defined on both sides admits a common value, except that two negative
  // requirements (NotIn/DoesNotExist on both sides) are always fine. Keys defined on one side only
  // are unconstrained. The error names the first conflicting key, `other`'s requirement, then
  // this side's: `key "K": requirement In [a] is incompatible with In [b, c]`.
  absl::Status Intersects(const Requirements& other) const;

  // The labels Karpenter derives for a node: for every key that is not a restricted node label
  // (restricted domains, kubernetes.io/hostname, well-known labels), Any() of its requirement when
  // that is non-empty. A custom `Exists` therefore yields a synthetic integer value.
  apis::core::StringMap Labels() const;
  // Keys whose requirement is `In` exactly one value, with that value (all keys, well-known
  // included): the labels a launched instance is known to carry.
  apis::core::StringMap SingleValuedLabels() const;

  // In key order; see Requirement::AppendNodeSelectorRequirements for the per-key form.
  std::vector<apis::core::NodeSelectorRequirement> ToNodeSelectorRequirements() const;

  // "k1 In [a, b], k2 Exists" in key order; "" when empty.
  std::string String() const;

  friend bool operator==(const Requirements&, const Requirements&) = default;

 private:
  std::vector<Requirement>::iterator LowerBound(std::string_view key);
  std::vector<Requirement>::const_iterator LowerBound(std::string_view key) const;

  std::vector<Requirement> items_;  // sorted by key, keys unique
};

// Where a requirement or label comes from; NodePools may not name karpenter.sh/nodepool.
enum class RequirementSource { kPod, kNodePool };

// The key must be a qualified name and not restricted (see IsRestrictedLabel), and, for a
// NodePool, not karpenter.sh/nodepool. The key is normalised first. Errors: InvalidArgument.
absl::Status ValidateRequirementKey(std::string_view key, RequirementSource source);

// Karpenter's runtime validation of one requirement (the checks that make a NodePool
// ValidationSucceeded=False or a pod ignored by provisioning): the key (ValidateRequirementKey);
// every value a valid label value; In needs values and at least minValues of them; Gt/Lt/Gte/Lte
// exactly one non-negative integer; for keys with known values (capacity type, tenancy) an In
// must name at least one known value and minValues may not exceed the known values named.
// Errors: InvalidArgument naming the key.
absl::Status ValidateRequirement(const apis::core::NodeSelectorRequirement& requirement,
                                 RequirementSource source);

// A NodePool template label: valid key (as ValidateRequirementKey for kNodePool) and value.
absl::Status ValidateNodePoolLabel(std::string_view key, std::string_view value);

}  // namespace dovetail::scheduling
