// Early-return helpers for absl::Status / absl::StatusOr. The Debian release of Abseil predates
// Abseil's own macros, so Dovetail carries these two. Header-only; thread-compatible.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define DOVETAIL_STATUS_CONCAT_INNER_(a, b) a##b
#define DOVETAIL_STATUS_CONCAT_(a, b) DOVETAIL_STATUS_CONCAT_INNER_(a, b)

// RETURN_IF_ERROR(expr): evaluates expr (a Status or StatusOr) and returns its status if not OK.
#define RETURN_IF_ERROR(expr)                                                                   \
  do {                                                                                          \
    if (auto _dovetail_status = ::dovetail::internal::ToStatus(expr); !_dovetail_status.ok()) { \
      return _dovetail_status;                                                                  \
    }                                                                                           \
  } while (false)

// ASSIGN_OR_RETURN(lhs, expr): evaluates expr (a StatusOr<T>); on error returns its status,
// otherwise moves the value into lhs (which may be a declaration, e.g. `auto x`).
#define ASSIGN_OR_RETURN(lhs, expr) \
  DOVETAIL_ASSIGN_OR_RETURN_IMPL_(DOVETAIL_STATUS_CONCAT_(_dovetail_statusor_, __LINE__), lhs, expr)

// `lhs` may be a declaration and `statusor` is a name: neither can be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define DOVETAIL_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                    \
  if (!statusor.ok()) return std::move(statusor).status();   \
  lhs = std::move(statusor).value()
// NOLINTEND(bugprone-macro-parentheses)

namespace dovetail::internal {
inline absl::Status ToStatus(const absl::Status& s) { return s; }
template <typename T>
absl::Status ToStatus(const absl::StatusOr<T>& s) {
  return s.status();
}
}  // namespace dovetail::internal
