#include "dovetail/common/quantity.h"

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail {
namespace {

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinInt64 = std::numeric_limits<int64_t>::min();
// Exponents beyond this magnitude behave like infinity for 64-bit milli-units; clamping keeps
// the arithmetic below trivially bounded.
constexpr int64_t kExponentClamp = 1 << 20;

absl::Status Malformed(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(
      Cat("quantity \"", absl::CHexEscape(AsAbsl(text)), "\" is malformed: ", AsAbsl(why)));
}

struct Suffix {
  int64_t exp10 = 0;
  int exp2 = 0;
  QuantityFormat format = QuantityFormat::kDecimalSI;
};

// Interprets everything after the number. Returns false for an unknown suffix; sets
// *exponent_overflow when a decimal exponent does not fit int64 (apimachinery rejects those).
bool InterpretSuffix(std::string_view s, Suffix* out, bool* exponent_overflow) {
  *exponent_overflow = false;
  if (s.empty()) return true;
  if (s.size() == 1) {
    switch (s[0]) {
      case 'n':
        out->exp10 = -9;
        return true;
      case 'u':
        out->exp10 = -6;
        return true;
      case 'm':
        out->exp10 = -3;
        return true;
      case 'k':
        out->exp10 = 3;
        return true;
      case 'M':
        out->exp10 = 6;
        return true;
      case 'G':
        out->exp10 = 9;
        return true;
      case 'T':
        out->exp10 = 12;
        return true;
      case 'P':
        out->exp10 = 15;
        return true;
      case 'E':
        out->exp10 = 18;
        return true;
      default:
        return false;
    }
  }
  if (s.size() == 2 && s[1] == 'i') {
    constexpr std::string_view kBinary = "KMGTPE";
    size_t index = kBinary.find(s[0]);
    if (index == std::string_view::npos) return false;
    out->exp2 = 10 * static_cast<int>(index + 1);
    out->format = QuantityFormat::kBinarySI;
    return true;
  }
  if (s[0] != 'e' && s[0] != 'E') return false;
  size_t pos = 1;
  bool negative = false;
  if (s[pos] == '+' || s[pos] == '-') {
    negative = s[pos] == '-';
    ++pos;
  }
  if (pos == s.size()) return false;
  uint64_t magnitude = 0;
  for (; pos < s.size(); ++pos) {
    if (!absl::ascii_isdigit(s[pos])) return false;
    magnitude = magnitude * 10 + static_cast<uint64_t>(s[pos] - '0');
    // int64 accepts magnitudes up to 2^63 - 1 positive and 2^63 negative.
    if (magnitude > static_cast<uint64_t>(kMaxInt64) + (negative ? 1 : 0)) {
      *exponent_overflow = true;
      return false;
    }
  }
  int64_t clamped = magnitude > static_cast<uint64_t>(kExponentClamp)
                        ? kExponentClamp
                        : static_cast<int64_t>(magnitude);
  out->exp10 = negative ? -clamped : clamped;
  out->format = QuantityFormat::kDecimalExponent;
  return true;
}

// A non-negative decimal integer as digits (most significant first), without leading zeros.
using Digits = absl::InlinedVector<uint8_t, 40>;

// digits *= factor, for factor <= 2^30 (so digit * factor + carry fits in 64 bits).
void MultiplyInPlace(Digits& digits, uint64_t factor) {
  uint64_t carry = 0;
  for (size_t i = digits.size(); i-- > 0;) {
    uint64_t v = digits[i] * factor + carry;
    digits[i] = static_cast<uint8_t>(v % 10);
    carry = v / 10;
  }
  Digits head;
  while (carry > 0) {
    head.insert(head.begin(), static_cast<uint8_t>(carry % 10));
    carry /= 10;
  }
  digits.insert(digits.begin(), head.begin(), head.end());
}

// The integer formed by digits[0, count) followed by `zeros` zeros, if it is <= INT64_MAX.
bool ToInt64(const Digits& digits, size_t count, int64_t zeros, uint64_t* out) {
  if (count + static_cast<uint64_t>(zeros) > 19) {
    // 19 digits is the most int64 can hold; only a 19-digit number needs the exact check below.
    return false;
  }
  __uint128_t value = 0;
  for (size_t i = 0; i < count; ++i) value = value * 10 + digits[i];
  for (int64_t i = 0; i < zeros; ++i) value *= 10;
  if (value > static_cast<__uint128_t>(kMaxInt64)) return false;
  *out = static_cast<uint64_t>(value);
  return true;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kMaxInt64 : -kMaxInt64;
  // Keep the range symmetric so that magnitudes never overflow.
  return r == kMinInt64 ? -kMaxInt64 : r;
}

int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? kMaxInt64 : -kMaxInt64;
  return r == kMinInt64 ? -kMaxInt64 : r;
}

std::string_view DecimalSuffix(int exponent) {
  switch (exponent) {
    case -9:
      return "n";
    case -6:
      return "u";
    case -3:
      return "m";
    case 3:
      return "k";
    case 6:
      return "M";
    case 9:
      return "G";
    case 12:
      return "T";
    case 15:
      return "P";
    case 18:
      return "E";
    default:
      return "";
  }
}

}  // namespace

absl::StatusOr<Quantity> Quantity::Parse(std::string_view text) {
  if (text.empty()) return Malformed(text, "empty");
  size_t pos = 0;
  bool negative = false;
  if (text[0] == '+' || text[0] == '-') {
    negative = text[0] == '-';
    ++pos;
  }
  const size_t int_begin = pos;
  while (pos < text.size() && absl::ascii_isdigit(text[pos])) ++pos;
  std::string_view int_digits = text.substr(int_begin, pos - int_begin);
  std::string_view frac_digits;
  if (pos < text.size() && text[pos] == '.') {
    const size_t frac_begin = ++pos;
    while (pos < text.size() && absl::ascii_isdigit(text[pos])) ++pos;
    frac_digits = text.substr(frac_begin, pos - frac_begin);
  }
  if (int_digits.empty() && frac_digits.empty()) return Malformed(text, "no digits");

  Suffix suffix;
  bool exponent_overflow = false;
  if (!InterpretSuffix(text.substr(pos), &suffix, &exponent_overflow)) {
    return Malformed(text, exponent_overflow ? "exponent out of range" : "unknown suffix");
  }

  // value = digits * 10^scale10 * 2^exp2, with digits stripped of leading and trailing zeros.
  Digits digits;
  int64_t scale10 = suffix.exp10 - static_cast<int64_t>(frac_digits.size());
  for (std::string_view part : {int_digits, frac_digits}) {
    for (char c : part) {
      if (digits.empty() && c == '0') continue;
      digits.push_back(static_cast<uint8_t>(c - '0'));
    }
  }
  while (!digits.empty() && digits.back() == 0) {
    digits.pop_back();
    ++scale10;
  }
  if (digits.empty()) return FromMilli(0, suffix.format);

  for (int remaining = suffix.exp2; remaining > 0; remaining -= 30) {
    MultiplyInPlace(digits, uint64_t{1} << (remaining > 30 ? 30 : remaining));
  }

  // milli = digits * 10^(scale10 + 3), rounded away from zero.
  const int64_t e = scale10 + 3;
  uint64_t magnitude = 0;
  bool in_range;
  if (e >= 0) {
    in_range = ToInt64(digits, digits.size(), e, &magnitude);
  } else {
    const uint64_t fraction_digits = static_cast<uint64_t>(-e);
    if (fraction_digits >= digits.size()) {
      magnitude = 1;  // 0.something milli-units rounds up to one (digits is non-zero)
      in_range = true;
    } else {
      const size_t whole = digits.size() - fraction_digits;
      in_range = ToInt64(digits, whole, 0, &magnitude);
      bool has_fraction = false;
      for (size_t i = whole; i < digits.size(); ++i) has_fraction |= digits[i] != 0;
      if (in_range && has_fraction) {
        if (magnitude == static_cast<uint64_t>(kMaxInt64)) {
          in_range = false;
        } else {
          ++magnitude;
        }
      }
    }
  }
  if (!in_range) {
    return absl::OutOfRangeError(Cat("quantity \"", absl::CHexEscape(AsAbsl(text)),
                                     "\" does not fit in 64-bit milli-units"));
  }
  const int64_t milli = static_cast<int64_t>(magnitude);
  return FromMilli(negative ? -milli : milli, suffix.format);
}

Quantity Quantity::FromMilli(int64_t milli, QuantityFormat format) {
  Quantity q;
  q.milli_ = milli == kMinInt64 ? -kMaxInt64 : milli;
  q.format_ = format;
  return q;
}

Quantity Quantity::FromUnits(int64_t units, QuantityFormat format) {
  int64_t milli;
  if (__builtin_mul_overflow(units, int64_t{1000}, &milli)) {
    milli = units > 0 ? kMaxInt64 : -kMaxInt64;
  }
  return FromMilli(milli, format);
}

int64_t Quantity::Value() const {
  int64_t units = milli_ / 1000;
  int64_t rest = milli_ % 1000;
  if (rest > 0) ++units;
  if (rest < 0) --units;
  return units;
}

std::string Quantity::ToString() const {
  if (milli_ == 0) return "0";
  const bool negative = milli_ < 0;
  uint64_t magnitude =
      negative ? uint64_t{0} - static_cast<uint64_t>(milli_) : static_cast<uint64_t>(milli_);
  std::string out = negative ? "-" : "";

  // Binary form only for whole values of at least 1Ki; anything else is shown as DecimalSI so
  // that no precision is lost.
  if (format_ == QuantityFormat::kBinarySI && magnitude >= uint64_t{1024} * 1000 &&
      magnitude % 1000 == 0) {
    static constexpr std::array<std::string_view, 7> kBinary = {"",   "Ki", "Mi", "Gi",
                                                                "Ti", "Pi", "Ei"};
    uint64_t units = magnitude / 1000;
    size_t power = 0;
    while (units % 1024 == 0 && power + 1 < kBinary.size()) {
      units /= 1024;
      ++power;
    }
    CatTo(&out, units, AsAbsl(kBinary[power]));
    return out;
  }

  // Largest exponent that is a multiple of three and keeps an integer mantissa.
  int exponent = -3;
  while (magnitude % 10 == 0) {
    magnitude /= 10;
    ++exponent;
  }
  while (exponent % 3 != 0) {
    magnitude *= 10;  // cannot overflow: at most as many factors of ten as were removed
    --exponent;
  }
  CatTo(&out, magnitude);
  if (format_ == QuantityFormat::kDecimalExponent) {
    if (exponent != 0) CatTo(&out, "e", exponent);
  } else {
    CatTo(&out, AsAbsl(DecimalSuffix(exponent)));
  }
  return out;
}

Quantity& Quantity::operator+=(const Quantity& o) {
  if (milli_ == 0) format_ = o.format_;
  milli_ = SaturatingAdd(milli_, o.milli_);
  return *this;
}

Quantity& Quantity::operator-=(const Quantity& o) {
  if (milli_ == 0) format_ = o.format_;
  milli_ = SaturatingSub(milli_, o.milli_);
  return *this;
}

absl::StatusOr<ResourceList> ParseResourceList(
    const std::map<std::string, std::string, std::less<>>& text) {
  ResourceList list;
  for (const auto& [name, value] : text) {
    absl::StatusOr<Quantity> q = Quantity::Parse(value);
    if (!q.ok()) {
      return absl::Status(q.status().code(),
                          Cat("resource \"", name, "\": ", q.status().message()));
    }
    list.emplace_hint(list.end(), name, *q);
  }
  return list;
}

std::string ResourceListToString(const ResourceList& list) {
  std::string out = "{";
  for (const auto& [name, q] : list) {
    if (out.size() > 1) out += ", ";
    CatTo(&out, name, ": ", q.ToString());
  }
  out += "}";
  return out;
}

}  // namespace dovetail
