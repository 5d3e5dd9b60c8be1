#include "dovetail/apis/v1/labels.h"

#include <string_view>

#include "absl/container/flat_hash_set.h"

namespace dovetail::apis::v1 {
namespace {

const absl::flat_hash_set<std::string_view>& WellKnownLabelSet() {
  static const auto* const kSet =
      new absl::flat_hash_set<std::string_view>(kWellKnownLabels.begin(), kWellKnownLabels.end());
  return *kSet;
}

bool HasSuffixDomain(std::string_view domain, std::string_view suffix) {
  return domain.ends_with(suffix);
}

}  // namespace

std::string_view NormalizeLabelKey(std::string_view key) {
  for (const auto& [from, to] : kNormalizedLabels) {
    if (key == from) return to;
  }
  return key;
}

bool IsWellKnownLabel(std::string_view key) { return WellKnownLabelSet().contains(key); }

std::string_view LabelDomain(std::string_view key) {
  size_t slash = key.find('/');
  return slash == std::string_view::npos ? std::string_view() : key.substr(0, slash);
}

bool IsRestrictedLabel(std::string_view key) {
  if (IsWellKnownLabel(key)) return false;
  for (std::string_view restricted : kRestrictedLabels) {
    if (key == restricted) return true;
  }
  std::string_view domain = LabelDomain(key);
  for (std::string_view restricted : kRestrictedLabelDomains) {
    if (HasSuffixDomain(domain, restricted)) return true;
  }
  return false;
}

bool IsRestrictedNodeLabel(std::string_view key) {
  if (IsWellKnownLabel(key)) return true;
  std::string_view domain = LabelDomain(key);
  for (std::string_view exception : kLabelDomainExceptions) {
    if (HasSuffixDomain(domain, exception)) return false;
  }
  return IsRestrictedLabel(key);
}

}  // namespace dovetail::apis::v1
