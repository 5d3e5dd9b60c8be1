// Saturating int64 arithmetic for sums of resource amounts (milli-units, bytes, nanoseconds):
// a sum beyond the int64 range stays at +-INT64_MAX instead of wrapping around, so a huge
// request makes a pod fit nowhere rather than fit everywhere. The range is kept symmetric
// (INT64_MIN never appears as a result) so that negating a result never overflows.
// Header-only; thread-safe.
#pragma once

#include <cstdint>
#include <limits>

namespace dovetail {

inline constexpr int64_t kSaturatedMax = std::numeric_limits<int64_t>::max();

// a + b, saturated at +-INT64_MAX.
constexpr int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kSaturatedMax : -kSaturatedMax;
  return r == std::numeric_limits<int64_t>::min() ? -kSaturatedMax : r;
}

// a - b, saturated at +-INT64_MAX.
constexpr int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? kSaturatedMax : -kSaturatedMax;
  return r == std::numeric_limits<int64_t>::min() ? -kSaturatedMax : r;
}

// a * b, saturated at +-INT64_MAX.
constexpr int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    return (a > 0) == (b > 0) ? kSaturatedMax : -kSaturatedMax;
  }
  return r == std::numeric_limits<int64_t>::min() ? -kSaturatedMax : r;
}

}  // namespace dovetail
