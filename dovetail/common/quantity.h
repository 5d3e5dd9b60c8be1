// Kubernetes resource quantities (`100m`, `1.5`, `2Gi`, `500Mi`, `1e3`, `0.5Ki`) and resource
// lists. Parsing follows k8s.io/apimachinery/pkg/api/resource: the same grammar, the same rounding
// (values are kept in milli-units and rounded up, as Kubernetes' MilliValue does) and the same
// canonical printing (ToString() of a parsed quantity equals what the API server stores).
// Garbage input gives an InvalidArgument status naming the text, never a crash.
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
  static Quantity FromUnits(int64_t units, QuantityFormat format = QuantityFormat::kDecimalSI);

  int64_t MilliValue() const { return milli_; }
  // Whole units, rounded up (Kubernetes' Value()).
  int64_t Value() const;
  QuantityFormat format() const { return format_; }
  bool IsZero() const { return milli_ == 0; }

  // Canonical Kubernetes text (e.g. "1500m", "1Gi", "1e3", "0").
  std::string ToString() const;

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

}  // namespace dovetail
