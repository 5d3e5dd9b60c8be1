#include "dovetail/scheduling/label_selector.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "dovetail/apis/core/label_syntax.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/scheduling/names.h"
#include "dovetail/scheduling/requirement.h"

namespace dovetail::scheduling {
namespace {

constexpr std::string_view kNodeNameField = "metadata.name";

bool ValueIn(const std::vector<std::string>& values, std::string_view v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

const std::string* Lookup(const StringMap& map, std::string_view key) {
  auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}

bool LabelRequirementMatches(const LabelSelectorRequirement& r, const StringMap& labels) {
  const std::string* value = Lookup(labels, r.key);
  switch (r.op) {
    case LabelSelectorOperator::kIn:
      return !r.values.empty() && value != nullptr && ValueIn(r.values, *value);
    case LabelSelectorOperator::kNotIn:
      return !r.values.empty() && (value == nullptr || !ValueIn(r.values, *value));
    case LabelSelectorOperator::kExists:
      return r.values.empty() && value != nullptr;
    case LabelSelectorOperator::kDoesNotExist:
      return r.values.empty() && value == nullptr;
  }
  return false;
}

bool NodeRequirementMatches(const NodeSelectorRequirement& r, const StringMap& labels) {
  const std::string* value = Lookup(labels, r.key);
  switch (r.op) {
    case SelectorOperator::kIn:
      return !r.values.empty() && value != nullptr && ValueIn(r.values, *value);
    case SelectorOperator::kNotIn:
      return !r.values.empty() && (value == nullptr || !ValueIn(r.values, *value));
    case SelectorOperator::kExists:
      return r.values.empty() && value != nullptr;
    case SelectorOperator::kDoesNotExist:
      return r.values.empty() && value == nullptr;
    case SelectorOperator::kGt:
    case SelectorOperator::kLt:
    case SelectorOperator::kGte:
    case SelectorOperator::kLte: {
      if (r.values.size() != 1 || value == nullptr) return false;
      std::optional<int64_t> bound = ParseInteger(r.values[0]);
      std::optional<int64_t> actual = ParseInteger(*value);
      if (!bound || !actual) return false;
      if (r.op == SelectorOperator::kGt) return *actual > *bound;
      if (r.op == SelectorOperator::kLt) return *actual < *bound;
      if (r.op == SelectorOperator::kGte) return *actual >= *bound;
      return *actual <= *bound;
    }
  }
  return false;
}

bool IsWellFormedField(const NodeSelectorRequirement& r) {
  return (r.op == SelectorOperator::kIn || r.op == SelectorOperator::kNotIn) &&
         r.values.size() == 1;
}

// A field absent from `fields` reads as "", as in Kubernetes' field sets.
bool FieldRequirementMatches(const NodeSelectorRequirement& r, const StringMap& fields) {
  if (!IsWellFormedField(r)) return false;
  const std::string* value = Lookup(fields, r.key);
  std::string_view actual;
  if (value != nullptr) actual = *value;
  if (r.op == SelectorOperator::kIn) return actual == r.values[0];
  if (r.op == SelectorOperator::kNotIn) return actual != r.values[0];
  return false;
}

absl::Status ValidateValues(std::string_view key, const std::vector<std::string>& values) {
  for (const std::string& v : values) {
    if (absl::Status s = apis::core::ValidateLabelValue(v); !s.ok()) {
      return absl::InvalidArgumentError(Cat("key \"", key, "\": ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool Matches(const LabelSelector& selector, const StringMap& labels) {
  for (const auto& [key, value] : selector.match_labels) {
    const std::string* actual = Lookup(labels, key);
    if (actual == nullptr || *actual != value) return false;
  }
  for (const LabelSelectorRequirement& r : selector.match_expressions) {
    if (!LabelRequirementMatches(r, labels)) return false;
  }
  return true;
}

absl::Status ValidateLabelSelector(const LabelSelector& selector) {
  for (const auto& [key, value] : selector.match_labels) {
    RETURN_IF_ERROR(apis::core::ValidateQualifiedName(key));
    RETURN_IF_ERROR(apis::core::ValidateLabelValue(value));
  }
  for (const LabelSelectorRequirement& r : selector.match_expressions) {
    RETURN_IF_ERROR(apis::core::ValidateQualifiedName(r.key));
    const bool needs_values =
        r.op == LabelSelectorOperator::kIn || r.op == LabelSelectorOperator::kNotIn;
    if (needs_values && r.values.empty()) {
      return absl::InvalidArgumentError(
          Cat("key \"", r.key, "\": operators In and NotIn need at least one value"));
    }
    if (!needs_values && !r.values.empty()) {
      return absl::InvalidArgumentError(
          Cat("key \"", r.key, "\": operators Exists and DoesNotExist take no values"));
    }
    RETURN_IF_ERROR(ValidateValues(r.key, r.values));
  }
  return absl::OkStatus();
}

bool NodeSelectorTermMatches(const NodeSelectorTerm& term, const StringMap& labels,
                             const StringMap& fields) {
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;
  for (const NodeSelectorRequirement& r : term.match_expressions) {
    if (!NodeRequirementMatches(r, labels)) return false;
  }
  for (const NodeSelectorRequirement& r : term.match_fields) {
    // Malformed fields fail the term even when no fields are given; well-formed ones are only
    // evaluated when the caller passes the node's fields.
    if (!IsWellFormedField(r)) return false;
    if (!fields.empty() && !FieldRequirementMatches(r, fields)) return false;
  }
  return true;
}

bool NodeSelectorMatches(absl::Span<const NodeSelectorTerm> terms, const StringMap& labels,
                         const StringMap& fields) {
  return std::any_of(terms.begin(), terms.end(), [&](const NodeSelectorTerm& term) {
    return NodeSelectorTermMatches(term, labels, fields);
  });
}

bool NodeSelectorMatches(const NodeSelector& selector, const StringMap& labels,
                         const StringMap& fields) {
  return NodeSelectorMatches(selector.terms, labels, fields);
}

absl::Status ValidateNodeSelectorTerm(const NodeSelectorTerm& term) {
  for (const NodeSelectorRequirement& r : term.match_expressions) {
    RETURN_IF_ERROR(apis::core::ValidateQualifiedName(r.key));
    switch (r.op) {
      case SelectorOperator::kIn:
      case SelectorOperator::kNotIn:
        if (r.values.empty()) {
          return absl::InvalidArgumentError(
              Cat("key \"", r.key, "\": operators In and NotIn need at least one value"));
        }
        RETURN_IF_ERROR(ValidateValues(r.key, r.values));
        break;
      case SelectorOperator::kExists:
      case SelectorOperator::kDoesNotExist:
        if (!r.values.empty()) {
          return absl::InvalidArgumentError(
              Cat("key \"", r.key, "\": operators Exists and DoesNotExist take no values"));
        }
        break;
      case SelectorOperator::kGt:
      case SelectorOperator::kLt:
      case SelectorOperator::kGte:
      case SelectorOperator::kLte:
        if (r.values.size() != 1 || !ParseInteger(r.values[0])) {
          return absl::InvalidArgumentError(Cat("key \"", r.key, "\": operator ",
                                                SelectorOperatorName(r.op),
                                                " needs exactly one integer value"));
        }
        break;
    }
  }
  for (const NodeSelectorRequirement& r : term.match_fields) {
    if (r.key != kNodeNameField) {
      return absl::InvalidArgumentError(
          Cat("field \"", r.key, "\": only metadata.name is supported"));
    }
    if ((r.op != SelectorOperator::kIn && r.op != SelectorOperator::kNotIn) ||
        r.values.size() != 1) {
      return absl::InvalidArgumentError(
          Cat("field \"", r.key, "\": needs operator In or NotIn with exactly one value"));
    }
  }
  return absl::OkStatus();
}

}  // namespace dovetail::scheduling
