// Rng: the seeded random source of the solver's property tests (solver_property_test.cc,
// session_test.cc). SplitMix64, independent of the standard library's distributions, so that a
// seed means the same workload on every platform. Test-only; value type; thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

namespace dovetail::solver::test_builders {

class Rng {
 public:
  // The seed is mixed first: consecutive seeds must not give shifted copies of one stream.
  explicit Rng(uint64_t seed) : state_(Mix(seed ^ 0x5851F42D4C957F2Dull)) {}
  uint64_t Next() { return Mix(state_ += 0x9E3779B97F4A7C15ull); }
  // Uniform in [lo, hi], both inclusive.
  int Int(int lo, int hi) { return lo + static_cast<int>(Next() % (hi - lo + 1)); }
  // True with probability `p`.
  bool Chance(double p) { return (Next() >> 11) * (1.0 / 9007199254740992.0) < p; }
  // A member of the non-empty `v`.
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Next() % v.size()];
  }

 private:
  static uint64_t Mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

}  // namespace dovetail::solver::test_builders

namespace dovetail::solver {
using test_builders::Rng;  // for the solver's own tests, as solver_test_builders.h does
}  // namespace dovetail::solver
