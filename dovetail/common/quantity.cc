#include "dovetail/common/quantity.h"

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/saturating.h"

namespace dovetail {
namespace {

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinInt64 = std::numeric_limits<int64_t>::min();

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
  // apimachinery parses the exponent as int64 and keeps its low 32 bits (int32(parsed)).
  const uint64_t parsed = negative ? uint64_t{0} - magnitude : magnitude;
  out->exp10 = static_cast<int32_t>(static_cast<uint32_t>(parsed));
  out->format = QuantityFormat::kDecimalExponent;
  return true;
}

// Decimal digits as characters, most significant first.
using Digits = std::string;

// digits *= factor, for factor <= 2^30 (so digit * factor + carry fits in 64 bits).
void MultiplyInPlace(Digits& digits, uint64_t factor) {
  uint64_t carry = 0;
  for (size_t i = digits.size(); i-- > 0;) {
    uint64_t v = static_cast<uint64_t>(digits[i] - '0') * factor + carry;
    digits[i] = static_cast<char>('0' + v % 10);
    carry = v / 10;
  }
  std::string head;
  for (; carry > 0; carry /= 10) head.insert(head.begin(), static_cast<char>('0' + carry % 10));
  digits.insert(0, head);
}

// Moves trailing zeros of the digits into the exponent; clears the digits of a zero value.
void Normalize(Quantity::Decimal& d) {
  size_t first = d.digits.find_first_not_of('0');
  if (first == std::string::npos) {
    d.digits.clear();
    d.exponent = 0;
    return;
  }
  d.digits.erase(0, first);
  size_t last = d.digits.find_last_not_of('0');
  d.exponent += static_cast<int64_t>(d.digits.size() - 1 - last);
  d.digits.resize(last + 1);
}

// Adds one unit in the last place of a non-empty digit string.
void Increment(Digits& digits) {
  for (size_t i = digits.size(); i-- > 0;) {
    if (digits[i] != '9') {
      ++digits[i];
      return;
    }
    digits[i] = '0';
  }
  digits.insert(digits.begin(), '1');
}

// apimachinery rounds every non-zero value up (away from zero) to a whole number of nano-units.
void RoundUpToNano(Quantity::Decimal& d) {
  constexpr int64_t kNano = -9;
  if (d.digits.empty() || d.exponent >= kNano) return;
  // The dropped digits are never all zero: normalized digits end in a non-zero digit.
  const int64_t dropped = kNano - d.exponent;
  if (dropped >= static_cast<int64_t>(d.digits.size())) {
    d.digits = "1";
  } else {
    d.digits.resize(d.digits.size() - static_cast<size_t>(dropped));
    Increment(d.digits);
  }
  d.exponent = kNano;
  Normalize(d);
}

// ceil(|d| * 10^shift) into *out when it is at most INT64_MAX; *exact tells whether no rounding
// was needed. Returns false when the magnitude is larger.
bool ScaledMagnitude(const Quantity::Decimal& d, int64_t shift, uint64_t* out, bool* exact) {
  *out = 0;
  *exact = true;
  if (d.digits.empty()) return true;
  const int64_t size = static_cast<int64_t>(d.digits.size());
  const int64_t e = d.exponent + shift;
  // size + e is the number of digits before the decimal point; int64 holds at most 19.
  if (size + e > 19) return false;
  __uint128_t value = 0;
  if (e >= 0) {
    for (char c : d.digits) value = value * 10 + static_cast<unsigned>(c - '0');
    for (int64_t i = 0; i < e; ++i) value *= 10;
  } else {
    for (int64_t i = 0; i < size + e; ++i) {
      value = value * 10 + static_cast<unsigned>(d.digits[static_cast<size_t>(i)] - '0');
    }
    ++value;  // the dropped digits end in a non-zero digit
    *exact = false;
  }
  if (value > static_cast<__uint128_t>(kMaxInt64)) return false;
  *out = static_cast<uint64_t>(value);
  return true;
}

// A value's signed ceil(|d| * 10^shift), saturated at +-INT64_MAX.
int64_t SaturatedScaled(const Quantity::Decimal& d, int64_t shift, bool* exact) {
  uint64_t magnitude = 0;
  if (!ScaledMagnitude(d, shift, &magnitude, exact)) {
    *exact = false;
    magnitude = static_cast<uint64_t>(kMaxInt64);
  }
  const int64_t signed_magnitude = static_cast<int64_t>(magnitude);
  return d.negative ? -signed_magnitude : signed_magnitude;
}

Quantity::Decimal FromInt64(int64_t value, int64_t exponent) {
  Quantity::Decimal d;
  d.negative = value < 0;
  const uint64_t magnitude =
      d.negative ? uint64_t{0} - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  d.digits = std::to_string(magnitude);
  d.exponent = exponent;
  Normalize(d);
  return d;
}

std::string_view DecimalSuffix(int64_t exponent) {
  switch (exponent) {
    case -9:
      return "n";
    case -6:
      return "u";
    case -3:
      return "m";
    case 0:
      return "";
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
      return {};
  }
}

// 2^63 - 1, the BinarySI cap.
const Quantity::Decimal& BinaryCap() {
  static const Quantity::Decimal* const cap = new Quantity::Decimal(FromInt64(kMaxInt64, 0));
  return *cap;
}

}  // namespace

absl::StatusOr<Quantity> Quantity::Parse(std::string_view text) {
  if (text.empty()) return Malformed(text, "empty");
  size_t pos = 0;
  Decimal d;
  if (text[0] == '+' || text[0] == '-') {
    d.negative = text[0] == '-';
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

  // value = digits * 10^exp10 * 2^exp2.
  d.digits = Cat(AsAbsl(int_digits), AsAbsl(frac_digits));
  d.exponent = suffix.exp10 - static_cast<int64_t>(frac_digits.size());
  Normalize(d);
  Quantity q;
  q.format_ = suffix.format;
  if (d.digits.empty()) return q;
  for (int remaining = suffix.exp2; remaining > 0; remaining -= 30) {
    MultiplyInPlace(d.digits, uint64_t{1} << (remaining > 30 ? 30 : remaining));
  }
  Normalize(d);
  RoundUpToNano(d);

  if (q.format_ == QuantityFormat::kBinarySI) {
    uint64_t units = 0;
    bool whole = true;
    if (!ScaledMagnitude(d, 0, &units, &whole)) {
      const bool negative = d.negative;
      d = BinaryCap();
      d.negative = negative;
    }
    // Binary values between zero and one are DecimalSI in apimachinery.
    if (static_cast<int64_t>(d.digits.size()) + d.exponent <= 0) {
      q.format_ = QuantityFormat::kDecimalSI;
    }
  }

  bool exact = true;
  q.milli_ = SaturatedScaled(d, 3, &exact);
  if (!exact) q.exact_ = std::make_shared<const Decimal>(std::move(d));
  return q;
}

Quantity Quantity::FromMilli(int64_t milli, QuantityFormat format) {
  Quantity q;
  q.milli_ = milli == kMinInt64 ? -kMaxInt64 : milli;
  q.format_ = format;
  if (milli == kMinInt64) q.exact_ = std::make_shared<const Decimal>(FromInt64(milli, -3));
  return q;
}

Quantity Quantity::FromUnits(int64_t units, QuantityFormat format) {
  Quantity q;
  q.format_ = format;
  if (__builtin_mul_overflow(units, int64_t{1000}, &q.milli_)) {
    q.milli_ = units > 0 ? kMaxInt64 : -kMaxInt64;
    q.exact_ = std::make_shared<const Decimal>(FromInt64(units, 0));
  }
  return q;
}

Quantity::Decimal Quantity::Exact() const {
  if (exact_ != nullptr) return *exact_;
  return FromInt64(milli_, -3);
}

int64_t Quantity::Value() const {
  if (exact_ != nullptr) {
    bool exact = true;
    return SaturatedScaled(*exact_, 0, &exact);
  }
  int64_t units = milli_ / 1000;
  int64_t rest = milli_ % 1000;
  if (rest > 0) ++units;
  if (rest < 0) --units;
  return units;
}

int Quantity::Compare(const Quantity& a, const Quantity& b) {
  const int sa = a.Sign();
  const int sb = b.Sign();
  if (sa != sb) return sa < sb ? -1 : 1;
  if (sa == 0) return 0;
  const Decimal x = a.Exact();
  const Decimal y = b.Exact();
  // Compare magnitudes: first by the position of the leading digit, then digit by digit.
  int magnitude = 0;
  const int64_t lead_x = static_cast<int64_t>(x.digits.size()) + x.exponent;
  const int64_t lead_y = static_cast<int64_t>(y.digits.size()) + y.exponent;
  if (lead_x != lead_y) {
    magnitude = lead_x < lead_y ? -1 : 1;
  } else {
    const int c = x.digits.compare(y.digits);
    magnitude = (c > 0) - (c < 0);
  }
  return sa > 0 ? magnitude : -magnitude;
}

std::string Quantity::ToString() const {
  if (IsZero()) return "0";
  Decimal d = Exact();
  std::string out = d.negative ? "-" : "";

  // Binary form only for whole values of at least 1Ki; anything else is shown as DecimalSI so
  // that no precision is lost.
  uint64_t units = 0;
  bool whole = false;
  if (format_ == QuantityFormat::kBinarySI && ScaledMagnitude(d, 0, &units, &whole) && whole &&
      units >= 1024) {
    static constexpr std::array<std::string_view, 7> kBinary = {"",   "Ki", "Mi", "Gi",
                                                                "Ti", "Pi", "Ei"};
    size_t power = 0;
    while (units % 1024 == 0 && power + 1 < kBinary.size()) {
      units /= 1024;
      ++power;
    }
    CatTo(&out, units, AsAbsl(kBinary[power]));
    return out;
  }

  // The exponent a multiple of three, the mantissa an integer.
  while (d.exponent % 3 != 0) {
    d.digits.push_back('0');
    --d.exponent;
  }
  out += d.digits;
  std::string_view suffix = DecimalSuffix(d.exponent);
  if (format_ == QuantityFormat::kDecimalExponent || suffix.data() == nullptr) {
    if (d.exponent != 0) CatTo(&out, "e", d.exponent);
  } else {
    out += suffix;
  }
  return out;
}

Quantity& Quantity::operator+=(const Quantity& o) {
  if (o.IsZero()) return *this;
  if (IsZero()) return *this = o;
  milli_ = SaturatingAdd(milli_, o.milli_);
  exact_.reset();
  return *this;
}

Quantity& Quantity::operator-=(const Quantity& o) {
  if (o.IsZero()) return *this;
  if (IsZero()) {
    format_ = o.format_;
    milli_ = -o.milli_;
    exact_.reset();
    if (o.exact_ != nullptr) {
      Decimal negated = *o.exact_;
      negated.negative = !negated.negative;
      exact_ = std::make_shared<const Decimal>(std::move(negated));
    }
    return *this;
  }
  milli_ = SaturatingSub(milli_, o.milli_);
  exact_.reset();
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
