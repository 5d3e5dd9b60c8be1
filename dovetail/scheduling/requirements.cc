#include "dovetail/scheduling/requirements.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dovetail/apis/core/label_syntax.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/scheduling/label_selector.h"
#include "dovetail/scheduling/names.h"

namespace dovetail::scheduling {
namespace {

bool IsNegative(SelectorOperator op) {
  return op == SelectorOperator::kNotIn || op == SelectorOperator::kDoesNotExist;
}

// Levenshtein distance; keys are short.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

bool LooksLikeTypoOf(std::string_view key, std::string_view candidate) {
  return candidate.find(key) != std::string_view::npos ||
         EditDistance(key, candidate) < candidate.size() / 5;
}

// " (typo of "Y"?)" for the first close key: well-known labels (when they may be undefined), then
// the keys defined on `defined`; "" when none is close.
std::string TypoHint(const Requirements& defined, std::string_view key, AllowUndefined allow) {
  if (allow == AllowUndefined::kWellKnownLabels) {
    static const auto* const kSorted = [] {
      auto* sorted = new std::vector<std::string_view>(apis::v1::kWellKnownLabels.begin(),
                                                       apis::v1::kWellKnownLabels.end());
      std::sort(sorted->begin(), sorted->end());
      return sorted;
    }();
    for (std::string_view candidate : *kSorted) {
      if (LooksLikeTypoOf(key, candidate)) return Cat(" (typo of \"", candidate, "\"?)");
    }
  }
  for (const Requirement& r : defined) {
    if (LooksLikeTypoOf(key, r.key())) return Cat(" (typo of \"", r.key(), "\"?)");
  }
  return "";
}

absl::Status KeyError(std::string_view key, std::string_view why) {
  return absl::InvalidArgumentError(Cat("key \"", key, "\": ", why));
}

}  // namespace

absl::Status ValidateRequirementKey(std::string_view key, RequirementSource source) {
  key = apis::v1::NormalizeLabelKey(key);
  if (absl::Status s = apis::core::ValidateQualifiedName(key); !s.ok())
    return KeyError(key, AsStd(s.message()));
  if (source == RequirementSource::kNodePool && key == apis::v1::kNodePoolOnlyRestrictedLabel) {
    return KeyError(key, "label is restricted: Karpenter sets it on the nodes of a NodePool");
  }
  if (apis::v1::IsRestrictedLabel(key)) {
    return KeyError(
        key, Cat("label is restricted: use a well-known label or a custom label "
                 "outside the restricted domains [",
                 absl::StrJoin(apis::v1::kRestrictedLabelDomains, ", ", StdStringViewFormatter()),
                 "] and [",
                 absl::StrJoin(apis::v1::kRestrictedLabels, ", ", StdStringViewFormatter()), "]"));
  }
  return absl::OkStatus();
}

absl::Status ValidateRequirement(const NodeSelectorRequirement& requirement,
                                 RequirementSource source) {
  const std::string_view key = apis::v1::NormalizeLabelKey(requirement.key);
  RETURN_IF_ERROR(ValidateRequirementKey(key, source));
  for (const std::string& value : requirement.values) {
    if (absl::Status s = apis::core::ValidateLabelValue(value); !s.ok()) {
      return KeyError(key, Cat("value \"", value, "\": ", AsStd(s.message())));
    }
  }
  const SelectorOperator op = requirement.op;
  const std::string_view op_name = SelectorOperatorName(op);
  switch (op) {
    case SelectorOperator::kIn:
      if (requirement.values.empty()) {
        return KeyError(key, "operator In must have a value defined");
      }
      if (requirement.min_values &&
          static_cast<int64_t>(requirement.values.size()) < *requirement.min_values) {
        return KeyError(key, Cat("operator In must have at least minValues (",
                                 *requirement.min_values, ") values"));
      }
      break;
    case SelectorOperator::kGt:
    case SelectorOperator::kLt:
    case SelectorOperator::kGte:
    case SelectorOperator::kLte:
      if (!NumericOperand(requirement.values)) {
        return KeyError(
            key, Cat("operator ", op_name, " must have a single non-negative integer value"));
      }
      break;
    case SelectorOperator::kNotIn:
    case SelectorOperator::kExists:
    case SelectorOperator::kDoesNotExist:
      break;
  }
  if (op == SelectorOperator::kIn) {
    for (const apis::v1::WellKnownValues& known : apis::v1::kWellKnownValues) {
      if (known.key != key) continue;
      int64_t known_count = 0;
      for (const std::string& value : requirement.values) {
        if (std::find(known.values.begin(), known.values.end(), value) != known.values.end()) {
          ++known_count;
        }
      }
      if (known_count == 0) {
        return KeyError(key, Cat("none of the values [", absl::StrJoin(requirement.values, ", "),
                                 "] is known; expected one of [",
                                 absl::StrJoin(known.values, ", ", StdStringViewFormatter()), "]"));
      }
      if (requirement.min_values && known_count < *requirement.min_values) {
        return KeyError(key, Cat("minValues ", *requirement.min_values, " exceeds the ",
                                 known_count, " known values given"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateNodePoolLabel(std::string_view key, std::string_view value) {
  RETURN_IF_ERROR(ValidateRequirementKey(key, RequirementSource::kNodePool));
  if (absl::Status s = apis::core::ValidateLabelValue(value); !s.ok()) {
    return KeyError(key, Cat("value \"", value, "\": ", AsStd(s.message())));
  }
  return absl::OkStatus();
}

absl::StatusOr<Requirements> Requirements::FromNodeSelectorRequirements(
    absl::Span<const NodeSelectorRequirement> requirements) {
  Requirements out;
  RETURN_IF_ERROR(out.Add(requirements));
  return out;
}

Requirements Requirements::FromLabels(const StringMap& labels) {
  Requirements out;
  for (const auto& [key, value] : labels) {
    const std::string_view v = value;
    out.Add(Requirement::In(key, {v}));
  }
  return out;
}

absl::StatusOr<Requirements> Requirements::ForPod(const StringMap& node_selector,
                                                  absl::Span<const NodeSelectorTerm> required_terms,
                                                  const NodeSelectorTerm* heaviest_preferred_term) {
  Requirements out = FromLabels(node_selector);
  if (heaviest_preferred_term != nullptr) {
    RETURN_IF_ERROR(out.Add(heaviest_preferred_term->match_expressions));
  }
  if (!required_terms.empty()) RETURN_IF_ERROR(out.Add(required_terms.front().match_expressions));
  return out;
}

std::vector<Requirement>::iterator Requirements::LowerBound(std::string_view key) {
  return std::lower_bound(items_.begin(), items_.end(), key,
                          [](const Requirement& r, std::string_view k) { return r.key() < k; });
}

std::vector<Requirement>::const_iterator Requirements::LowerBound(std::string_view key) const {
  return std::lower_bound(items_.begin(), items_.end(), key,
                          [](const Requirement& r, std::string_view k) { return r.key() < k; });
}

void Requirements::Add(Requirement requirement) {
  std::string_view normalized = apis::v1::NormalizeLabelKey(requirement.key());
  if (normalized != requirement.key()) requirement.set_key(std::string(normalized));
  auto it = LowerBound(requirement.key());
  if (it != items_.end() && it->key() == requirement.key()) {
    *it = requirement.Intersection(*it);
  } else {
    items_.insert(it, std::move(requirement));
  }
}

absl::Status Requirements::Add(const NodeSelectorRequirement& requirement) {
  ASSIGN_OR_RETURN(Requirement r, Requirement::FromNodeSelectorRequirement(requirement));
  Add(std::move(r));
  return absl::OkStatus();
}

absl::Status Requirements::Add(absl::Span<const NodeSelectorRequirement> requirements) {
  for (const NodeSelectorRequirement& r : requirements) RETURN_IF_ERROR(Add(r));
  return absl::OkStatus();
}

void Requirements::Intersect(const Requirements& other) {
  for (const Requirement& r : other.items_) Add(r);
}

void Requirements::Remove(std::string_view key) {
  auto it = LowerBound(key);
  if (it != items_.end() && it->key() == key) items_.erase(it);
}

const Requirement* Requirements::Find(std::string_view key) const {
  auto it = LowerBound(key);
  return it != items_.end() && it->key() == key ? &*it : nullptr;
}

Requirement Requirements::Get(std::string_view key) const {
  const Requirement* r = Find(key);
  return r != nullptr ? *r : Requirement::Exists(std::string(key));
}

absl::Status Requirements::Compatible(const Requirements& other, AllowUndefined allow) const {
  for (const Requirement& incoming : other.items_) {
    const std::string& key = incoming.key();
    if (allow == AllowUndefined::kWellKnownLabels && apis::v1::IsWellKnownLabel(key)) continue;
    if (IsNegative(incoming.Operator()) || Has(key)) continue;
    return absl::FailedPreconditionError(
        Cat("label \"", key, "\" does not have known values", TypoHint(*this, key, allow)));
  }
  return Intersects(other);
}

absl::Status Requirements::Intersects(const Requirements& other) const {
  auto mine = items_.begin();
  auto theirs = other.items_.begin();
  while (mine != items_.end() && theirs != other.items_.end()) {
    if (mine->key() < theirs->key()) {
      ++mine;
    } else if (theirs->key() < mine->key()) {
      ++theirs;
    } else {
      if (!(IsNegative(theirs->Operator()) && IsNegative(mine->Operator())) &&
          !mine->Intersects(*theirs)) {
        return absl::FailedPreconditionError(Cat("key \"", mine->key(), "\": requirement ",
                                                 theirs->String(), " is incompatible with ",
                                                 mine->String()));
      }
      ++mine;
      ++theirs;
    }
  }
  return absl::OkStatus();
}

StringMap Requirements::Labels() const {
  StringMap labels;
  for (const Requirement& r : items_) {
    if (apis::v1::IsRestrictedNodeLabel(r.key())) continue;
    std::string value = r.Any();
    if (!value.empty()) labels.emplace(r.key(), std::move(value));
  }
  return labels;
}

StringMap Requirements::SingleValuedLabels() const {
  StringMap labels;
  for (const Requirement& r : items_) {
    if (!r.complement() && r.values().size() == 1) labels.emplace(r.key(), r.values().front());
  }
  return labels;
}

std::vector<NodeSelectorRequirement> Requirements::ToNodeSelectorRequirements() const {
  std::vector<NodeSelectorRequirement> out;
  out.reserve(items_.size());
  for (const Requirement& r : items_) r.AppendNodeSelectorRequirements(&out);
  return out;
}

std::string Requirements::String() const {
  return absl::StrJoin(items_, ", ",
                       [](std::string* out, const Requirement& r) { CatTo(out, r.DebugString()); });
}

}  // namespace dovetail::scheduling
