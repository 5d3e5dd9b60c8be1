#include "dovetail/apis/core/label_syntax.h"

#include <algorithm>
#include <cstddef>
#include <string_view>

#include "absl/status/status.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::apis::core {
namespace {

constexpr size_t kMaxNameLength = 63;
constexpr size_t kMaxLabelValueLength = 63;
constexpr size_t kMaxSubdomainLength = 253;

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], i.e. non-empty, alphanumeric at both ends.
bool IsNameSyntax(std::string_view s) {
  if (s.empty() || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

absl::Status Invalid(std::string_view what, std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(Cat(what, " \"", text, "\": ", why));
}

absl::Status ValidateNameSyntax(std::string_view what, std::string_view text,
                                std::string_view name) {
  if (name.empty()) return Invalid(what, text, "name part must be non-empty");
  if (name.size() > kMaxNameLength) {
    return Invalid(what, text, "name part must be no more than 63 characters");
  }
  if (!IsNameSyntax(name)) {
    return Invalid(what, text,
                   "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                   "start and end with an alphanumeric character");
  }
  return absl::OkStatus();
}

}  // namespace

bool IsDns1123Subdomain(std::string_view value) {
  if (value.empty() || value.size() > kMaxSubdomainLength) return false;
  size_t start = 0;
  while (true) {
    size_t dot = value.find('.', start);
    std::string_view label =
        value.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || !IsLowerAlnum(label.front()) || !IsLowerAlnum(label.back())) return false;
    for (char c : label) {
      if (!IsLowerAlnum(c) && c != '-') return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

absl::Status ValidateQualifiedName(std::string_view key) {
  constexpr std::string_view kWhat = "qualified name";
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) return ValidateNameSyntax(kWhat, key, key);
  if (key.find('/', slash + 1) != std::string_view::npos) {
    return Invalid(kWhat, key, "must have at most one '/'");
  }
  std::string_view prefix = key.substr(0, slash);
  if (prefix.empty()) return Invalid(kWhat, key, "prefix part must be non-empty");
  if (prefix.size() > kMaxSubdomainLength) {
    return Invalid(kWhat, key, "prefix part must be no more than 253 characters");
  }
  if (!IsDns1123Subdomain(prefix)) {
    return Invalid(kWhat, key,
                   "prefix part must be a DNS-1123 subdomain (lowercase alphanumeric characters, "
                   "'-' or '.', starting and ending with an alphanumeric character)");
  }
  return ValidateNameSyntax(kWhat, key, key.substr(slash + 1));
}

bool IsQualifiedName(std::string_view key) { return ValidateQualifiedName(key).ok(); }

absl::Status ValidateLabelValue(std::string_view value) {
  if (value.empty()) return absl::OkStatus();
  if (value.size() > kMaxLabelValueLength) {
    return Invalid("label value", value, "must be no more than 63 characters");
  }
  if (!IsNameSyntax(value)) {
    return Invalid("label value", value,
                   "must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                   "end with an alphanumeric character");
  }
  return absl::OkStatus();
}

bool IsValidLabelValue(std::string_view value) {
  return value.empty() || (value.size() <= kMaxLabelValueLength && IsNameSyntax(value));
}

}  // namespace dovetail::apis::core
