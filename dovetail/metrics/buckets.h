// Histogram bucket layouts shared by the families that copy client_golang's helpers.
#pragma once

#include <vector>

namespace dovetail::metrics {

// `count` bounds: start, start*factor, start*factor^2, ... each the previous bound times `factor`
// (so the bounds are bit-identical to client_golang's ExponentialBuckets, e.g.
// 0.0022500000000000003 for (0.001, 1.5)).
inline std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  out.reserve(count);
  for (int i = 0; i < count; ++i) {
    out.push_back(start);
    start *= factor;
  }
  return out;
}

}  // namespace dovetail::metrics
