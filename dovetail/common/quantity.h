// Kubernetes resource quantities (`100m`, `1.5`, `2Gi`, `500Mi`, `1e3`, `0.5Ki`, `10Pi`, `1e30`)
// and resource lists. Parsing follows k8s.io/apimachinery/pkg/api/resource: the same grammar, the
// same rounding (up, away from zero, to one nano-unit), the same cap (BinarySI values above
// 2^63-1 units become 2^63-1) and the same canonical printing, so every quantity the API server
// accepts parses, and ToString() of a stored quantity is the text the API server stores.
// Garbage input gives an InvalidArgument status naming the text, never a crash.
//
// Two views of one value:
//  - The exact value (sign, decimal digits, power of ten), kept only when it is not a whole
//    number of milli-units within int64; ToString(), ==, <=> and Value() use it.
//  - MilliValue(): the value in milli-units rounded away from zero (Kubernetes' MilliValue()) and
//    saturated at +-(2^63-1) instead of wrapping as apimachinery does. Scheduling arithmetic uses
//    this view: a 10Pi request saturates to about 8Pi, which no node offers.
//
// Where Dovetail deliberately differs from apimachinery:
//  - A mantissa without digits ("Gi", "-", ".") is InvalidArgument. ParseQuantity reads these as
//    zero, but the OpenAPI pattern of every CRD quantity field rejects them.
//  - Leading or trailing spaces are InvalidArgument. Quantity's UnmarshalJSON trims them, but the
//    API server never stores them and CRD quantity patterns reject them.
//  - The API server echoes input that it considers canonical ("+1", "1E3", "01Ki"); Dovetail
//    prints the canonical form of the value ("1", "1e3", "1Ki").
//  - DecimalSI values of 1000E and more print in exponent form ("1000E" prints "1e21");
//    apimachinery has no suffix for them and prints the digits alone ("1"), losing the exponent.
// Like apimachinery, a whole BinarySI value of 1024 or more that no binary suffix divides exactly
// prints its digits ("1000187.5Ki" prints "1024192000"), which parse back as DecimalSI and print
// "1024192k": printing is stable from the second round on, not the first.
// Like apimachinery, an exponent beyond int64 ("1e99999999999999999999") is InvalidArgument and
// one beyond int32 keeps its low 32 bits ("1e4294967296" is 1).
//
// Arithmetic: adding to or subtracting from zero gives the other operand exactly (format and
// value); any other sum works on MilliValue() and saturates at +-(2^63-1) milli-units.
// Value type; thread-compatible.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace dovetail {

enum class QuantityFormat { kDecimalSI, kBinarySI, kDecimalExponent };

class Quantity {
 public:
  Quantity() = default;

  // Parses a Kubernetes quantity string. Errors: InvalidArgument (malformed text, unknown
  // suffix, an exponent beyond int64). Values of any size parse.
  static absl::StatusOr<Quantity> Parse(std::string_view text);
  static Quantity FromMilli(int64_t milli, QuantityFormat format = QuantityFormat::kDecimalSI);
  // Exact for every int64; MilliValue() saturates when units * 1000 does not fit int64.
  static Quantity FromUnits(int64_t units, QuantityFormat format = QuantityFormat::kDecimalSI);

  // Milli-units, rounded away from zero, saturated at +-(2^63-1).
  int64_t MilliValue() const { return milli_; }
  // Whole units, rounded away from zero (Kubernetes' Value(): 1500m -> 2, -1500m -> -2),
  // saturated at +-(2^63-1).
  int64_t Value() const;
  // True when MilliValue() is the exact value (no rounding, no saturation).
  bool IsExactMilli() const { return exact_ == nullptr; }
  QuantityFormat format() const { return format_; }
  bool IsZero() const { return milli_ == 0; }
  // -1, 0 or 1.
  int Sign() const { return (milli_ > 0) - (milli_ < 0); }

  // Canonical Kubernetes text (e.g. "1500m", "1Gi", "1e3", "0", "10Pi", "100n").
  std::string ToString() const;

  Quantity& operator+=(const Quantity& o);
  Quantity& operator-=(const Quantity& o);
  friend Quantity operator+(Quantity a, const Quantity& b) { return a += b; }
  friend Quantity operator-(Quantity a, const Quantity& b) { return a -= b; }
  // By exact value, regardless of format ("1Ki" == "1024").
  friend bool operator==(const Quantity& a, const Quantity& b) {
    if (a.exact_ == nullptr && b.exact_ == nullptr) return a.milli_ == b.milli_;
    return Compare(a, b) == 0;
  }
  friend std::strong_ordering operator<=>(const Quantity& a, const Quantity& b) {
    if (a.exact_ == nullptr && b.exact_ == nullptr) return a.milli_ <=> b.milli_;
    return Compare(a, b) <=> 0;
  }

  // The exact value: magnitude = digits x 10^exponent, digits without leading or trailing zeros.
  struct Decimal {
    bool negative = false;
    std::string digits;
    int64_t exponent = 0;
  };

 private:
  // -1, 0 or 1 by exact value.
  static int Compare(const Quantity& a, const Quantity& b);
  Decimal Exact() const;

  int64_t milli_ = 0;
  QuantityFormat format_ = QuantityFormat::kDecimalSI;
  // Set only when milli_ is not the exact value (shared: copies stay cheap).
  std::shared_ptr<const Decimal> exact_;
};

// Resource name (`cpu`, `memory`, `pods`, `nvidia.com/gpu`, ...) to quantity, ordered by name.
using ResourceList = std::map<std::string, Quantity, std::less<>>;

// Parses every value of a {resource name: quantity text} map. The first malformed entry (in name
// order) gives its Parse() error, prefixed with the resource name.
absl::StatusOr<ResourceList> ParseResourceList(
    const std::map<std::string, std::string, std::less<>>& text);

// "{cpu: 1500m, memory: 1Gi}" in name order; "{}" when empty. For messages and logs.
std::string ResourceListToString(const ResourceList& list);

}  // namespace dovetail
