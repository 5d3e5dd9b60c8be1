// Kubernetes resource quantities (`100m`, `1.5`, `2Gi`, `500Mi`, `1e3`, `0.5Ki`) and resource
// lists. Parsing follows k8s.io/apimachinery/pkg/api/resource: the same grammar, the same rounding
// (values are kept in milli-units and rounded up, as Kubernetes' MilliValue does) and the same
// canonical printing (ToString() of a parsed quantity equals what the API server stores).
// Garbage input gives an InvalidArgument status naming the text, never a crash.
//
// Where Dovetail deliberately differs from apimachinery:
//  - Precision is one milli-unit: "100n" or "0.1m" print as "1m" (the API server keeps "100n").
//  - A mantissa without digits ("Gi", "-", ".") is InvalidArgument. ParseQuantity reads these as
//    zero, but the OpenAPI pattern of every CRD quantity field rejects them.
//  - Values beyond 64-bit milli-units are OutOfRange; apimachinery caps them at 2^63-1 units.
//  - The API server echoes input that it considers canonical ("+1", "1E3", "01Ki"); Dovetail
//    prints the canonical form of the value ("1", "1e3", "1Ki").
// Arithmetic saturates at the int64 limits instead of overflowing.
// Value type; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace dovetail {

enum class QuantityFormat { kDecimalSI, kBinarySI, kDecimalExponent };

class Quantity {
 public:
  Quantity() = default;

  // Parses a Kubernetes quantity string. Errors: InvalidArgument (malformed text, unknown suffix),
  // OutOfRange (the value does not fit 64-bit milli-units, about 9.2e15 units).
  static absl::StatusOr<Quantity> Parse(std::string_view text);
  static Quantity FromMilli(int64_t milli, QuantityFormat format = QuantityFormat::kDecimalSI);
  // Saturates when units * 1000 does not fit int64.
  static Quantity FromUnits(int64_t units, QuantityFormat format = QuantityFormat::kDecimalSI);

  int64_t MilliValue() const { return milli_; }
  // Whole units, rounded away from zero (Kubernetes' Value(): 1500m -> 2, -1500m -> -2).
  int64_t Value() const;
  QuantityFormat format() const { return format_; }
  bool IsZero() const { return milli_ == 0; }
  // -1, 0 or 1.
  int Sign() const { return (milli_ > 0) - (milli_ < 0); }

  // Canonical Kubernetes text (e.g. "1500m", "1Gi", "1e3", "0").
  std::string ToString() const;

  // Adding to or subtracting from a zero quantity adopts the other operand's format, as
  // apimachinery does; otherwise the left operand's format is kept.
  Quantity& operator+=(const Quantity& o);
  Quantity& operator-=(const Quantity& o);
  friend Quantity operator+(Quantity a, const Quantity& b) { return a += b; }
  friend Quantity operator-(Quantity a, const Quantity& b) { return a -= b; }
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.milli_ == b.milli_; }
  friend auto operator<=>(const Quantity& a, const Quantity& b) { return a.milli_ <=> b.milli_; }

 private:
  int64_t milli_ = 0;
  QuantityFormat format_ = QuantityFormat::kDecimalSI;
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
