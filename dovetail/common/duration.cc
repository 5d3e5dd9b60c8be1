#include "dovetail/common/duration.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail {
namespace {

constexpr uint64_t kTwoTo63 = uint64_t{1} << 63;
constexpr uint64_t kNanosPerMicro = 1'000;
constexpr uint64_t kNanosPerMilli = 1'000'000;
constexpr uint64_t kNanosPerSecond = 1'000'000'000;
constexpr uint64_t kNanosPerMinute = 60 * kNanosPerSecond;
constexpr uint64_t kNanosPerHour = 60 * kNanosPerMinute;

absl::Status Invalid(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(
      Cat("duration \"", absl::CHexEscape(AsAbsl(text)), "\": ", AsAbsl(why)));
}

std::optional<uint64_t> UnitNanos(std::string_view unit) {
  if (unit == "ns") return 1;
  // "µs" is U+00B5 MICRO SIGN, "μs" U+03BC GREEK SMALL LETTER MU; Go accepts both.
  if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") return kNanosPerMicro;
  if (unit == "ms") return kNanosPerMilli;
  if (unit == "s") return kNanosPerSecond;
  if (unit == "m") return kNanosPerMinute;
  if (unit == "h") return kNanosPerHour;
  return std::nullopt;
}

// Writes the digits of v right-aligned ending before buf[w]; returns the new start.
int PutInt(char* buf, int w, uint64_t v) {
  if (v == 0) {
    buf[--w] = '0';
    return w;
  }
  while (v > 0) {
    buf[--w] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
  return w;
}

// Writes the `precision` low decimal digits of *v as a fraction (".5", trailing zeros and a bare
// point omitted) ending before buf[w], and divides *v by 10^precision.
int PutFraction(char* buf, int w, uint64_t* v, int precision) {
  bool printed = false;
  for (int i = 0; i < precision; ++i) {
    uint64_t digit = *v % 10;
    printed = printed || digit != 0;
    if (printed) buf[--w] = static_cast<char>('0' + digit);
    *v /= 10;
  }
  if (printed) buf[--w] = '.';
  return w;
}

}  // namespace

absl::StatusOr<absl::Duration> ParseGoDuration(std::string_view text) {
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return absl::ZeroDuration();
  if (s.empty()) return Invalid(text, "invalid duration");

  uint64_t total = 0;
  while (!s.empty()) {
    if (!(s[0] == '.' || absl::ascii_isdigit(s[0]))) return Invalid(text, "invalid duration");

    // Whole part; overflow is an error.
    uint64_t whole = 0;
    size_t i = 0;
    for (; i < s.size() && absl::ascii_isdigit(s[i]); ++i) {
      if (whole > kTwoTo63 / 10) return Invalid(text, "invalid duration");
      whole = whole * 10 + static_cast<uint64_t>(s[i] - '0');
      if (whole > kTwoTo63) return Invalid(text, "invalid duration");
    }
    const bool has_whole = i > 0;
    s.remove_prefix(i);

    // Fraction; digits beyond 63 bits of precision are ignored.
    uint64_t fraction = 0;
    double scale = 1;
    bool has_fraction = false;
    if (!s.empty() && s[0] == '.') {
      s.remove_prefix(1);
      bool saturated = false;
      size_t j = 0;
      for (; j < s.size() && absl::ascii_isdigit(s[j]); ++j) {
        if (saturated) continue;
        if (fraction > (kTwoTo63 - 1) / 10) {
          saturated = true;
          continue;
        }
        uint64_t next = fraction * 10 + static_cast<uint64_t>(s[j] - '0');
        if (next > kTwoTo63) {
          saturated = true;
          continue;
        }
        fraction = next;
        scale *= 10;
      }
      has_fraction = j > 0;
      s.remove_prefix(j);
    }
    if (!has_whole && !has_fraction) return Invalid(text, "invalid duration");

    size_t unit_len = 0;
    while (unit_len < s.size() && s[unit_len] != '.' && !absl::ascii_isdigit(s[unit_len]))
      ++unit_len;
    if (unit_len == 0) return Invalid(text, "missing unit");
    std::string_view unit_text = s.substr(0, unit_len);
    s.remove_prefix(unit_len);
    std::optional<uint64_t> unit = UnitNanos(unit_text);
    if (!unit) {
      return Invalid(text, Cat("unknown unit \"", absl::CHexEscape(AsAbsl(unit_text)), "\""));
    }

    if (whole > kTwoTo63 / *unit) return Invalid(text, "invalid duration");
    uint64_t value = whole * *unit;
    if (fraction > 0) {
      // Go computes the fractional part in float64 and truncates; keep that bit-for-bit.
      value += static_cast<uint64_t>(static_cast<double>(fraction) *
                                     (static_cast<double>(*unit) / scale));
      if (value > kTwoTo63) return Invalid(text, "invalid duration");
    }
    total += value;
    if (total > kTwoTo63) return Invalid(text, "invalid duration");
  }
  if (negative) {
    // total <= 2^63, so the negation fits int64 (2^63 itself is INT64_MIN).
    return absl::Nanoseconds(static_cast<int64_t>(uint64_t{0} - total));
  }
  if (total > kTwoTo63 - 1) return Invalid(text, "invalid duration");
  return absl::Nanoseconds(static_cast<int64_t>(total));
}

std::string FormatGoDuration(absl::Duration d) {
  int64_t nanos;
  if (d == absl::InfiniteDuration() ||
      d >= absl::Nanoseconds(std::numeric_limits<int64_t>::max())) {
    nanos = std::numeric_limits<int64_t>::max();
  } else if (d == -absl::InfiniteDuration() ||
             d <= absl::Nanoseconds(std::numeric_limits<int64_t>::min())) {
    nanos = std::numeric_limits<int64_t>::min();
  } else {
    nanos = absl::ToInt64Nanoseconds(d);  // truncates toward zero
  }

  // Longest output: "-2562047h47m16.854775808s" (25 bytes).
  char buf[32];
  int w = sizeof(buf);
  const bool negative = nanos < 0;
  uint64_t u = negative ? uint64_t{0} - static_cast<uint64_t>(nanos) : static_cast<uint64_t>(nanos);

  if (u < kNanosPerSecond) {
    if (u == 0) return "0s";
    // Below one second: the largest of ns, µs, ms that keeps an integer part.
    int precision;
    buf[--w] = 's';
    if (u < kNanosPerMicro) {
      precision = 0;
      buf[--w] = 'n';
    } else if (u < kNanosPerMilli) {
      precision = 3;
      buf[--w] = '\xB5';  // U+00B5 MICRO SIGN, as Go prints it
      buf[--w] = '\xC2';
    } else {
      precision = 6;
      buf[--w] = 'm';
    }
    w = PutFraction(buf, w, &u, precision);
    w = PutInt(buf, w, u);
  } else {
    buf[--w] = 's';
    w = PutFraction(buf, w, &u, 9);
    w = PutInt(buf, w, u % 60);  // seconds
    u /= 60;
    if (u > 0) {
      buf[--w] = 'm';
      w = PutInt(buf, w, u % 60);  // minutes
      u /= 60;
      if (u > 0) {
        buf[--w] = 'h';
        w = PutInt(buf, w, u);  // hours; Go stops here because days vary in length
      }
    }
  }
  if (negative) buf[--w] = '-';
  return std::string(buf + w, sizeof(buf) - w);
}

absl::StatusOr<std::optional<absl::Duration>> ParseNillableDuration(std::string_view text) {
  if (text == kNeverDuration) return std::optional<absl::Duration>();
  absl::StatusOr<absl::Duration> d = ParseGoDuration(text);
  if (!d.ok()) return d.status();
  return std::optional<absl::Duration>(*d);
}

std::string FormatNillableDuration(const std::optional<absl::Duration>& d) {
  return d ? FormatGoDuration(*d) : std::string(kNeverDuration);
}

bool IsKarpenterDurationPattern(std::string_view text) {
  // One or more groups of digits followed by s, m or h.
  if (text.empty()) return false;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && absl::ascii_isdigit(text[i])) ++i;
    if (i == start || i == text.size()) return false;
    char unit = text[i++];
    if (unit != 's' && unit != 'm' && unit != 'h') return false;
  }
  return true;
}

bool IsBudgetDurationPattern(std::string_view text) {
  // Nh | Nm | NhNm, each optionally followed by "0s".
  if (text.size() >= 2 && text.substr(text.size() - 2) == "0s") {
    std::string_view head = text.substr(0, text.size() - 2);
    // "0s" may only be a suffix after a complete h/m group; "10s" alone is not allowed.
    if (!head.empty() && (head.back() == 'h' || head.back() == 'm')) text = head;
  }
  size_t i = 0;
  auto group = [&](char unit) {
    size_t start = i;
    while (i < text.size() && absl::ascii_isdigit(text[i])) ++i;
    if (i == start || i == text.size() || text[i] != unit) {
      i = start;
      return false;
    }
    ++i;
    return true;
  };
  if (group('h')) {
    if (i == text.size()) return true;
    return group('m') && i == text.size();
  }
  return group('m') && i == text.size();
}

}  // namespace dovetail
