// One label key's constraint in Karpenter's internal form: {complement, values, gte, lte,
// minValues}. `In` is (¬complement, values), `NotIn` (complement, values), `Exists` (complement,
// ∅), `DoesNotExist` (¬complement, ∅); the integer operators become inclusive bounds on a
// complement set (`Gt N` => gte N+1, `Lt N` => lte N-1, `Gte`/`Lte` as written). Intersection is
// closed over this form, which is what lets NodePools, NodeClaims, instance types, offerings and
// pods be narrowed against each other. Requirements (requirements.h) maps keys to these.
//
// Values are kept sorted and unique, so every operation is deterministic (Any() returns the same
// value on every call, messages list values in order). Bounds only exist on complement sets: a
// concrete set is filtered by the bounds when intersected and drops them.
//
// Used by the scheduler, validation and drift. Value type; thread-compatible.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dovetail/apis/core/meta.h"

namespace dovetail::scheduling {

class Requirement {
 public:
  using Values = absl::InlinedVector<std::string, 2>;

  // DoesNotExist on the empty key; a placeholder to assign to.
  Requirement() = default;

  // Builds the requirement an API entry describes. The key is taken as written (Requirements
  // normalises it). Errors: InvalidArgument when Gt/Lt/Gte/Lte do not have exactly one
  // non-negative integer value. Values of Exists/DoesNotExist are ignored; `In` without values is
  // accepted and behaves like DoesNotExist (ValidateRequirement rejects both).
  static absl::StatusOr<Requirement> Create(std::string key, apis::core::SelectorOperator op,
                                            absl::Span<const std::string> values,
                                            std::optional<int32_t> min_values = std::nullopt);
  static absl::StatusOr<Requirement> FromNodeSelectorRequirement(
      const apis::core::NodeSelectorRequirement& r);

  static Requirement In(std::string key, absl::Span<const std::string> values);
  static Requirement In(std::string key, std::initializer_list<std::string_view> values);
  static Requirement NotIn(std::string key, absl::Span<const std::string> values);
  static Requirement NotIn(std::string key, std::initializer_list<std::string_view> values);
  static Requirement Exists(std::string key);
  static Requirement DoesNotExist(std::string key);

  const std::string& key() const { return key_; }
  void set_key(std::string key) { key_ = std::move(key); }
  bool complement() const { return complement_; }
  // Sorted, unique. For a complement these are the excluded values.
  const Values& values() const { return values_; }
  std::optional<int64_t> gte() const { return gte_; }
  std::optional<int64_t> lte() const { return lte_; }
  std::optional<int32_t> min_values() const { return min_values_; }
  void set_min_values(std::optional<int32_t> min_values) { min_values_ = min_values; }

  // In, NotIn, Exists or DoesNotExist (bounds do not change the operator: a bounded complement
  // without excluded values is Exists).
  apis::core::SelectorOperator Operator() const;

  // The number of admitted values: |values| for a concrete set, INT64_MAX - |values| for a
  // complement (bounds are not counted, as upstream).
  int64_t Len() const;

  // Whether `value` is admitted. With bounds, only integers within them are.
  bool Has(std::string_view value) const;

  // A value this requirement admits, or "" when there is none (DoesNotExist). Deterministic: the
  // smallest value of an `In`; for a complement the smallest non-negative integer within the
  // bounds that is not excluded (the largest admitted integer when the upper bound is negative).
  std::string Any() const;

  // Keeps this key. complement = both complements; values = union (both complement), difference
  // (one complement) or intersection (neither), filtered by the tightened bounds; bounds that cross
  // (gte > lte) give DoesNotExist; minValues = the larger of both.
  Requirement Intersection(const Requirement& other) const;
  // Intersection(other).Len() != 0, without building the intersection.
  bool Intersects(const Requirement& other) const;

  // The API form: In/NotIn/Exists/DoesNotExist, with each bound as its own Gte/Lte entry (before
  // a NotIn entry of excluded values, if any; the upper bound -1 that only `Lt 0` produces is
  // written back as `Lt 0`, since Lte takes no negative value). minValues goes on the first entry.
  std::vector<apis::core::NodeSelectorRequirement> ToNodeSelectorRequirements() const;
  void AppendNodeSelectorRequirements(std::vector<apis::core::NodeSelectorRequirement>* out) const;

  // "In [a, b]", "NotIn [a] >=4 <=8", "Exists", "DoesNotExist minValues 2"; more than five values
  // are shortened to "[a, b, c, d, e and 3 others]". Without the key.
  std::string String() const;
  // `key` followed by String().
  std::string DebugString() const;

  friend bool operator==(const Requirement&, const Requirement&) = default;

 private:
  std::string key_;
  bool complement_ = false;
  Values values_;
  std::optional<int64_t> gte_;
  std::optional<int64_t> lte_;
  std::optional<int32_t> min_values_;
};

// strconv.Atoi: an optional sign and decimal digits that fit int64; nullopt otherwise.
std::optional<int64_t> ParseInteger(std::string_view text);

// The operand of a Gt, Lt, Gte or Lte requirement: its only value, a non-negative ParseInteger;
// nullopt when there is not exactly one value or it is not a non-negative integer.
std::optional<int64_t> NumericOperand(absl::Span<const std::string> values);

// Name of an operator as the API spells it ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt",
// "Gte", "Lte").
std::string_view SelectorOperatorName(apis::core::SelectorOperator op);

}  // namespace dovetail::scheduling
