// What the benchmarks that generate clusters or workloads share (bench/consolidation,
// bench/disruption, bench/scenario, bench/scheduling): Rng, the seeded random source their
// workloads are drawn from (SplitMix64, independent of the standard library's distributions, so
// that a seed means the same workload on every platform and build), and kNow, the fixed instant
// generated objects are stamped with, with Rfc3339 to write it. Benchmark-only; value types;
// thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"

namespace dovetail::bench {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi], both inclusive.
  int Int(int lo, int hi) { return lo + static_cast<int>(Next() % (hi - lo + 1)); }
  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) / 9007199254740992.0; }
  // One of `choices`, uniformly.
  template <typename T, size_t N>
  T Pick(const T (&choices)[N]) {
    return choices[Next() % N];
  }

 private:
  uint64_t state_;
};

inline const absl::Time kNow =
    absl::FromCivil(absl::CivilSecond(2026, 11, 30, 12, 0, 0), absl::UTCTimeZone());

inline std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

}  // namespace dovetail::bench
