// Kubernetes' syntax for label keys and values and for object names (apimachinery's
// validation): what the API server accepts, checked without a server. Stateless; thread-safe.
#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace dovetail::apis::core {

// [prefix/]name: name 1-63 characters of [A-Za-z0-9_.-] starting and ending alphanumeric; the
// optional prefix a DNS-1123 subdomain of at most 253 characters.
bool IsQualifiedName(std::string_view key);
absl::Status ValidateQualifiedName(std::string_view key);
// Empty, or at most 63 characters of [A-Za-z0-9_.-] starting and ending alphanumeric.
bool IsValidLabelValue(std::string_view value);
absl::Status ValidateLabelValue(std::string_view value);
// Lowercase alphanumerics, '-' and '.', labels starting and ending alphanumeric, <= 253 chars.
bool IsDns1123Subdomain(std::string_view value);

}  // namespace dovetail::apis::core
