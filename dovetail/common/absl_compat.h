// Bridges std::string_view and absl::string_view. Debian's Abseil is built with its own
// absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW is 0), so a std::string_view does not convert
// implicitly to absl::string_view or absl::AlphaNum (StrCat, StrJoin, CHexEscape, ...). These
// adapters view the same bytes without copying; Cat/CatTo are absl::StrCat/StrAppend that also
// take std::string_view arguments. Header-only; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace dovetail {

inline absl::string_view AsAbsl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}
inline std::string_view AsStd(absl::string_view s) { return std::string_view(s.data(), s.size()); }

namespace internal {
inline absl::string_view AlphaNumArg(std::string_view s) { return AsAbsl(s); }
template <typename T>
const T& AlphaNumArg(const T& v) {
  return v;
}
}  // namespace internal

// absl::StrCat, also accepting std::string_view.
template <typename... Args>
std::string Cat(const Args&... args) {
  return absl::StrCat(internal::AlphaNumArg(args)...);
}

// absl::StrAppend, also accepting std::string_view.
template <typename... Args>
void CatTo(std::string* out, const Args&... args) {
  absl::StrAppend(out, internal::AlphaNumArg(args)...);
}

// An absl::StrJoin formatter for ranges of std::string_view.
struct StdStringViewFormatter {
  void operator()(std::string* out, std::string_view s) const { out->append(s.data(), s.size()); }
};

}  // namespace dovetail
