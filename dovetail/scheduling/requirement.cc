#include "dovetail/scheduling/requirement.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/scheduling/names.h"

namespace dovetail::scheduling {
namespace {

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr size_t kMaxValuesInMessages = 5;

struct ViewLess {
  bool operator()(std::string_view a, std::string_view b) const { return a < b; }
};

bool Contains(const Requirement::Values& sorted, std::string_view value) {
  return std::binary_search(sorted.begin(), sorted.end(), value, ViewLess());
}

template <typename Range>
Requirement::Values SortedUnique(const Range& values) {
  Requirement::Values out;
  out.reserve(std::size(values));
  for (const auto& v : values) out.emplace_back(v);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool WithinBounds(std::string_view value, std::optional<int64_t> gte, std::optional<int64_t> lte) {
  if (!gte && !lte) return true;
  std::optional<int64_t> n = ParseInteger(value);
  if (!n) return false;  // with bounds only integers are admitted
  if (gte && *n < *gte) return false;
  if (lte && *n > *lte) return false;
  return true;
}

template <typename T>
std::optional<T> MaxOf(std::optional<T> a, std::optional<T> b) {
  if (!a) return b;
  if (!b) return a;
  return std::max(*a, *b);
}

template <typename T>
std::optional<T> MinOf(std::optional<T> a, std::optional<T> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

NodeSelectorRequirement ApiEntry(const std::string& key, SelectorOperator op,
                                 std::vector<std::string> values) {
  NodeSelectorRequirement r;
  r.key = key;
  r.op = op;
  r.values = std::move(values);
  return r;
}

}  // namespace

std::optional<int64_t> ParseInteger(std::string_view text) {
  size_t pos = 0;
  bool negative = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    negative = text[0] == '-';
    pos = 1;
  }
  if (pos == text.size()) return std::nullopt;
  // Accumulate as a negative number so that INT64_MIN is representable.
  int64_t value = 0;
  for (; pos < text.size(); ++pos) {
    char c = text[pos];
    if (c < '0' || c > '9') return std::nullopt;
    if (__builtin_mul_overflow(value, int64_t{10}, &value) ||
        __builtin_sub_overflow(value, int64_t{c - '0'}, &value)) {
      return std::nullopt;
    }
  }
  if (negative) return value;
  if (value == std::numeric_limits<int64_t>::min()) return std::nullopt;
  return -value;
}

std::optional<int64_t> NumericOperand(absl::Span<const std::string> values) {
  if (values.size() != 1) return std::nullopt;
  std::optional<int64_t> n = ParseInteger(values[0]);
  if (!n || *n < 0) return std::nullopt;
  return n;
}

std::string_view SelectorOperatorName(SelectorOperator op) {
  switch (op) {
    case SelectorOperator::kIn:
      return "In";
    case SelectorOperator::kNotIn:
      return "NotIn";
    case SelectorOperator::kExists:
      return "Exists";
    case SelectorOperator::kDoesNotExist:
      return "DoesNotExist";
    case SelectorOperator::kGt:
      return "Gt";
    case SelectorOperator::kLt:
      return "Lt";
    case SelectorOperator::kGte:
      return "Gte";
    case SelectorOperator::kLte:
      return "Lte";
  }
  return "Unknown";
}

absl::StatusOr<Requirement> Requirement::Create(std::string key, SelectorOperator op,
                                                absl::Span<const std::string> values,
                                                std::optional<int32_t> min_values) {
  Requirement r;
  r.min_values_ = min_values;
  switch (op) {
    case SelectorOperator::kIn:
      r.values_ = SortedUnique(values);
      break;
    case SelectorOperator::kNotIn:
      r.complement_ = true;
      r.values_ = SortedUnique(values);
      break;
    case SelectorOperator::kExists:
      r.complement_ = true;
      break;
    case SelectorOperator::kDoesNotExist:
      break;
    case SelectorOperator::kGt:
    case SelectorOperator::kLt:
    case SelectorOperator::kGte:
    case SelectorOperator::kLte: {
      const std::optional<int64_t> n = NumericOperand(values);
      if (!n) {
        return absl::InvalidArgumentError(
            Cat("key \"", key, "\": operator ", SelectorOperatorName(op),
                " needs exactly one non-negative integer value, got [", absl::StrJoin(values, ", "),
                "]"));
      }
      if (op == SelectorOperator::kGt && *n == kMaxInt64) break;  // nothing is greater
      r.complement_ = true;
      if (op == SelectorOperator::kGt) r.gte_ = *n + 1;
      if (op == SelectorOperator::kLt) r.lte_ = *n - 1;
      if (op == SelectorOperator::kGte) r.gte_ = *n;
      if (op == SelectorOperator::kLte) r.lte_ = *n;
      break;
    }
  }
  r.key_ = std::move(key);
  return r;
}

absl::StatusOr<Requirement> Requirement::FromNodeSelectorRequirement(
    const NodeSelectorRequirement& r) {
  return Create(r.key, r.op, r.values, r.min_values);
}

Requirement Requirement::In(std::string key, absl::Span<const std::string> values) {
  Requirement r;
  r.key_ = std::move(key);
  r.values_ = SortedUnique(values);
  return r;
}

Requirement Requirement::In(std::string key, std::initializer_list<std::string_view> values) {
  Requirement r;
  r.key_ = std::move(key);
  r.values_ = SortedUnique(values);
  return r;
}

Requirement Requirement::NotIn(std::string key, absl::Span<const std::string> values) {
  Requirement r = In(std::move(key), values);
  r.complement_ = true;
  return r;
}

Requirement Requirement::NotIn(std::string key, std::initializer_list<std::string_view> values) {
  Requirement r = In(std::move(key), values);
  r.complement_ = true;
  return r;
}

Requirement Requirement::Exists(std::string key) {
  Requirement r;
  r.key_ = std::move(key);
  r.complement_ = true;
  return r;
}

Requirement Requirement::DoesNotExist(std::string key) {
  Requirement r;
  r.key_ = std::move(key);
  return r;
}

SelectorOperator Requirement::Operator() const {
  if (complement_) return values_.empty() ? SelectorOperator::kExists : SelectorOperator::kNotIn;
  return values_.empty() ? SelectorOperator::kDoesNotExist : SelectorOperator::kIn;
}

int64_t Requirement::Len() const {
  const auto n = static_cast<int64_t>(values_.size());
  return complement_ ? kMaxInt64 - n : n;
}

bool Requirement::Has(std::string_view value) const {
  if (Contains(values_, value) == complement_) return false;
  return WithinBounds(value, gte_, lte_);
}

std::string Requirement::Any() const {
  if (!complement_) return values_.empty() ? std::string() : values_.front();
  // The smallest admitted non-negative integer, or counting down from a negative upper bound.
  const bool descending = !gte_ && lte_ && *lte_ < 0;
  int64_t candidate = descending ? *lte_ : gte_.value_or(0);
  const int64_t last = descending ? std::numeric_limits<int64_t>::min() : lte_.value_or(kMaxInt64);
  // At most |values| candidates can be excluded, so this loop is short.
  for (size_t tries = 0; tries <= values_.size(); ++tries) {
    std::string text = Cat(candidate);
    if (!Contains(values_, text)) return text;
    if (candidate == last) break;
    candidate += descending ? -1 : 1;
  }
  return std::string();
}

Requirement Requirement::Intersection(const Requirement& other) const {
  Requirement r;
  r.key_ = key_;
  r.min_values_ = MaxOf(min_values_, other.min_values_);
  const std::optional<int64_t> gte = MaxOf(gte_, other.gte_);
  const std::optional<int64_t> lte = MinOf(lte_, other.lte_);
  if (gte && lte && *gte > *lte) return r;  // DoesNotExist

  r.complement_ = complement_ && other.complement_;
  auto out = std::back_inserter(r.values_);
  if (complement_ && other.complement_) {
    std::set_union(values_.begin(), values_.end(), other.values_.begin(), other.values_.end(), out);
  } else if (complement_) {
    std::set_difference(other.values_.begin(), other.values_.end(), values_.begin(), values_.end(),
                        out);
  } else if (other.complement_) {
    std::set_difference(values_.begin(), values_.end(), other.values_.begin(), other.values_.end(),
                        out);
  } else {
    std::set_intersection(values_.begin(), values_.end(), other.values_.begin(),
                          other.values_.end(), out);
  }
  if (gte || lte) {
    r.values_.erase(
        std::remove_if(r.values_.begin(), r.values_.end(),
                       [&](const std::string& v) { return !WithinBounds(v, gte, lte); }),
        r.values_.end());
  }
  if (r.complement_) {
    r.gte_ = gte;
    r.lte_ = lte;
  }
  return r;
}

bool Requirement::Intersects(const Requirement& other) const {
  const std::optional<int64_t> gte = MaxOf(gte_, other.gte_);
  const std::optional<int64_t> lte = MinOf(lte_, other.lte_);
  if (gte && lte && *gte > *lte) return false;
  if (complement_ && other.complement_) return true;  // a complement is never empty
  const Requirement& concrete = complement_ ? other : *this;
  const Requirement& rest = complement_ ? *this : other;
  for (const std::string& v : concrete.values_) {
    if (Contains(rest.values_, v) == rest.complement_) continue;
    if (WithinBounds(v, gte, lte)) return true;
  }
  return false;
}

void Requirement::AppendNodeSelectorRequirements(std::vector<NodeSelectorRequirement>* out) const {
  const size_t first = out->size();
  if (complement_) {
    if (gte_) out->push_back(ApiEntry(key_, SelectorOperator::kGte, {Cat(*gte_)}));
    if (lte_) {
      // Lt 0 is the only way to get a negative upper bound; Lte must not be negative.
      if (*lte_ < 0) {
        out->push_back(ApiEntry(key_, SelectorOperator::kLt, {Cat(*lte_ + 1)}));
      } else {
        out->push_back(ApiEntry(key_, SelectorOperator::kLte, {Cat(*lte_)}));
      }
    }
    if (!values_.empty()) {
      out->push_back(ApiEntry(key_, SelectorOperator::kNotIn,
                              std::vector<std::string>(values_.begin(), values_.end())));
    } else if (!gte_ && !lte_) {
      out->push_back(ApiEntry(key_, SelectorOperator::kExists, {}));
    }
  } else if (!values_.empty()) {
    out->push_back(ApiEntry(key_, SelectorOperator::kIn,
                            std::vector<std::string>(values_.begin(), values_.end())));
  } else {
    out->push_back(ApiEntry(key_, SelectorOperator::kDoesNotExist, {}));
  }
  (*out)[first].min_values = min_values_;
}

std::vector<NodeSelectorRequirement> Requirement::ToNodeSelectorRequirements() const {
  std::vector<NodeSelectorRequirement> out;
  AppendNodeSelectorRequirements(&out);
  return out;
}

std::string Requirement::String() const {
  const SelectorOperator op = Operator();
  std::string s(SelectorOperatorName(op));
  if (op == SelectorOperator::kIn || op == SelectorOperator::kNotIn) {
    const size_t shown = std::min(values_.size(), kMaxValuesInMessages);
    CatTo(&s, " [", absl::StrJoin(values_.begin(), values_.begin() + shown, ", "));
    if (values_.size() > shown) CatTo(&s, " and ", values_.size() - shown, " others");
    s += "]";
  }
  if (gte_) CatTo(&s, " >=", *gte_);
  if (lte_) CatTo(&s, " <=", *lte_);
  if (min_values_) CatTo(&s, " minValues ", *min_values_);
  return s;
}

std::string Requirement::DebugString() const { return Cat(key_, " ", String()); }

}  // namespace dovetail::scheduling
