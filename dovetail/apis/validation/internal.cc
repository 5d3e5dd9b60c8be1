#include "dovetail/apis/validation/internal.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/label_syntax.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/duration.h"

namespace dovetail::apis::validation::internal {
namespace {

using core::SelectorOperator;

constexpr size_t kMaxRequirements = 100;
constexpr int32_t kMinMinValues = 1;
constexpr int32_t kMaxMinValues = 50;
constexpr size_t kMaxAnnotationsBytes = size_t{256} * 1024;

std::string Message(const absl::Status& status) { return std::string(AsStd(status.message())); }

// The part of a key before its first '/', or the whole key when it has none (how the CRD's CEL
// rules cut the domain: `key.find("^([^/]+)")`).
std::string_view CelDomain(std::string_view key) { return key.substr(0, key.find('/')); }

// Keys of the kubernetes.io domain that NodePools may use: the well-known labels and the beta
// keys Karpenter normalises.
bool IsAllowedKubernetesIoKey(std::string_view key) {
  if (apis::v1::IsWellKnownLabel(key)) return true;
  for (const auto& [from, to] : v1::kNormalizedLabels) {
    if (key == from) return true;
  }
  return false;
}

std::string OperatorName(SelectorOperator op) { return std::string(core::EnumName(op)); }

}  // namespace

std::string Child(std::string_view path, std::string_view key) {
  std::string out(path);
  core::AppendPathKey(out, key);
  return out;
}

std::string Item(std::string_view path, size_t index) {
  std::string out(path);
  core::AppendPathIndex(out, index);
  return out;
}

void ValidateObjectMeta(const core::ObjectMeta& meta, std::string_view path, ErrorList& errors) {
  if (meta.name.empty() && meta.generate_name.empty()) {
    errors.Add(Child(path, "name"), "is required (or generateName)");
  } else if (!meta.name.empty() && !apis::core::IsDns1123Subdomain(meta.name)) {
    errors.Add(Child(path, "name"),
               Cat("must be a DNS-1123 subdomain (at most 253 lowercase letters, digits, '-' and "
                   "'.', starting and ending with a letter or digit), got ",
                   Quote(meta.name)),
               meta.name);
  }
  const std::string labels = Child(path, "labels");
  for (const auto& [key, value] : meta.labels) {
    const std::string at = Child(labels, key);
    if (absl::Status s = apis::core::ValidateQualifiedName(key); !s.ok()) {
      errors.Add(at, Message(s), key);
    }
    if (absl::Status s = apis::core::ValidateLabelValue(value); !s.ok()) {
      errors.Add(at, Message(s), value);
    }
  }
  const std::string annotations = Child(path, "annotations");
  size_t total = 0;
  for (const auto& [key, value] : meta.annotations) {
    total += key.size() + value.size();
    if (absl::Status s = apis::core::ValidateQualifiedName(key); !s.ok()) {
      errors.Add(Child(annotations, key), Message(s), key);
    }
  }
  if (total > kMaxAnnotationsBytes) {
    errors.Add(annotations, Cat("may not be larger than 256 KiB in total, got ", total, " bytes"));
  }
}

std::optional<std::string> LabelKeyProblem(std::string_view key, bool forbid_nodepool) {
  if (key.empty()) return "must not be empty";
  if (absl::Status s = apis::core::ValidateQualifiedName(key); !s.ok()) return Message(s);
  const std::string_view normalized = apis::v1::NormalizeLabelKey(key);
  if (forbid_nodepool && normalized == v1::kNodePoolLabelKey) {
    return Cat("label ", Quote(v1::kNodePoolLabelKey),
               " is restricted: Karpenter sets it to the name of the NodePool");
  }
  if (normalized == v1::kLabelHostname) {
    return Cat("label ", Quote(v1::kLabelHostname),
               " is restricted: every node gets its own hostname");
  }
  const std::string_view domain = CelDomain(key);
  if (domain.ends_with("kubernetes.io") && !domain.ends_with("node.kubernetes.io") &&
      !domain.ends_with("node-restriction.kubernetes.io") && !IsAllowedKubernetesIoKey(key)) {
    return std::string(
        "label domain \"kubernetes.io\" is restricted: only the well-known labels and the "
        "node.kubernetes.io and node-restriction.kubernetes.io domains may be used");
  }
  if (domain.ends_with("k8s.io") && !domain.ends_with("kops.k8s.io")) {
    return std::string(
        "label domain \"k8s.io\" is restricted: only the kops.k8s.io domain may be used");
  }
  if (domain.ends_with(v1::kGroup) && key != v1::kCapacityTypeLabelKey &&
      key != v1::kNodePoolLabelKey) {
    return Cat("label domain ", Quote(v1::kGroup), " is restricted: only ",
               Quote(v1::kCapacityTypeLabelKey), " may be used");
  }
  if (domain.ends_with(v1::kAwsGroup) && !apis::v1::IsWellKnownLabel(key)) {
    return Cat("label domain ", Quote(v1::kAwsGroup),
               " is restricted: only the well-known labels of the AWS provider may be used");
  }
  if (apis::v1::IsRestrictedLabel(normalized)) {
    return Cat("label ", Quote(key), " is restricted");
  }
  return std::nullopt;
}

std::optional<int64_t> ParseNonNegativeInteger(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const int digit = c - '0';
    if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

void ValidateRequirements(const std::vector<core::NodeSelectorRequirement>& requirements,
                          std::string_view path, bool forbid_nodepool, ErrorList& errors) {
  if (requirements.size() > kMaxRequirements) {
    errors.Add(std::string(path),
               Cat("must have at most ", kMaxRequirements, " items, got ", requirements.size()));
  }
  for (size_t i = 0; i < requirements.size(); ++i) {
    const core::NodeSelectorRequirement& r = requirements[i];
    const std::string at = Item(path, i);
    if (std::optional<std::string> problem = LabelKeyProblem(r.key, forbid_nodepool)) {
      errors.Add(Child(at, "key"), *problem, r.key);
    }
    for (size_t j = 0; j < r.values.size(); ++j) {
      if (absl::Status s = apis::core::ValidateLabelValue(r.values[j]); !s.ok()) {
        errors.Add(Item(Child(at, "values"), j), Message(s), r.values[j]);
      }
    }
    switch (r.op) {
      case SelectorOperator::kIn:
        if (r.values.empty()) {
          errors.Add(Child(at, "values"),
                     "requirements with operator 'In' must have a value defined");
        } else if (r.min_values && static_cast<int64_t>(r.values.size()) < *r.min_values) {
          errors.Add(Child(at, "minValues"),
                     Cat("is ", *r.min_values, " but operator In lists only ", r.values.size(),
                         " values; the values must include at least that many values"),
                     Cat(*r.min_values));
        }
        break;
      case SelectorOperator::kGt:
      case SelectorOperator::kLt:
      case SelectorOperator::kGte:
      case SelectorOperator::kLte:
        if (r.values.size() != 1 || !ParseNonNegativeInteger(r.values[0])) {
          errors.Add(Child(at, "values"), Cat("operator ", OperatorName(r.op),
                                              " needs a single non-negative integer value, got [",
                                              absl::StrJoin(r.values, ", "), "]"));
        }
        break;
      case SelectorOperator::kNotIn:
      case SelectorOperator::kExists:
      case SelectorOperator::kDoesNotExist:
        break;
    }
    if (r.min_values && (*r.min_values < kMinMinValues || *r.min_values > kMaxMinValues)) {
      errors.Add(
          Child(at, "minValues"),
          Cat("must be between ", kMinMinValues, " and ", kMaxMinValues, ", got ", *r.min_values),
          Cat(*r.min_values));
    }
    // Well-known labels with a closed set of values (capacity type, tenancy).
    if (r.op != SelectorOperator::kIn || r.values.empty()) continue;
    const std::string_view key = apis::v1::NormalizeLabelKey(r.key);
    for (const v1::WellKnownValues& known : v1::kWellKnownValues) {
      if (known.key != key) continue;
      int64_t known_count = 0;
      for (const std::string& value : r.values) {
        if (std::find(known.values.begin(), known.values.end(), value) != known.values.end()) {
          ++known_count;
        }
      }
      const std::string expected =
          absl::StrJoin(known.values.begin(), known.values.end(), ", ", StdStringViewFormatter());
      if (known_count == 0) {
        errors.Add(at, Cat("none of the values [", absl::StrJoin(r.values, ", "), "] of ",
                           Quote(key), " is known; expected one of [", expected, "]"));
      } else if (r.min_values && known_count < *r.min_values) {
        errors.Add(at, Cat("minValues is ", *r.min_values, " but only ", known_count,
                           " of the values are known values of ", Quote(key), " [", expected, "]"));
      }
    }
  }
}

void ValidateTaints(const std::vector<core::Taint>& taints,
                    const std::vector<core::Taint>& startup_taints, std::string_view path,
                    ErrorList& errors) {
  std::map<std::pair<std::string, core::TaintEffect>, std::string> seen;
  const std::pair<const std::vector<core::Taint>*, std::string_view> lists[] = {
      {&taints, "taints"}, {&startup_taints, "startupTaints"}};
  for (const auto& [list, name] : lists) {
    const std::string list_path = Child(path, name);
    for (size_t i = 0; i < list->size(); ++i) {
      const core::Taint& taint = (*list)[i];
      const std::string at = Item(list_path, i);
      if (taint.key.empty()) {
        errors.Add(Child(at, "key"), "is required");
      } else if (absl::Status s = apis::core::ValidateQualifiedName(taint.key); !s.ok()) {
        errors.Add(Child(at, "key"), Message(s), taint.key);
      }
      if (absl::Status s = apis::core::ValidateLabelValue(taint.value); !s.ok()) {
        errors.Add(Child(at, "value"), Message(s), taint.value);
      }
      const auto [it, inserted] = seen.emplace(std::make_pair(taint.key, taint.effect), at);
      if (!inserted) {
        errors.Add(at,
                   Cat("duplicate taint: key ", Quote(taint.key), " with effect ",
                       core::EnumName(taint.effect), " is already used by ", it->second,
                       "; a startup taint may not repeat the key and effect of a taint either"),
                   taint.key);
      }
    }
  }
}

void ValidateKarpenterDuration(const std::optional<std::string>& value, std::string_view path,
                               bool allow_never, ErrorList& errors) {
  if (!value.has_value()) return;
  if (allow_never && *value == kNeverDuration) return;
  if (IsKarpenterDurationPattern(*value)) {
    if (ParseGoDuration(*value).ok()) return;
    errors.Add(std::string(path), Cat("duration ", Quote(*value), " is too long"), *value);
    return;
  }
  errors.Add(
      std::string(path),
      Cat("must be a duration in whole hours, minutes and seconds such as 720h, 90m or "
          "1h30m",
          allow_never ? ", or Never" : " (Never is not allowed here)", "; got ", Quote(*value)),
      *value);
}

}  // namespace dovetail::apis::validation::internal
