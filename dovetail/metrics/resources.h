// How upstream's metrics name and measure a Kubernetes resource: the label `resource_type` is the
// resource name lower-cased with '-' as '_' (ephemeral-storage -> ephemeral_storage), and the
// value is in cores for cpu and in whole units (Kubernetes' Value(), rounded up) for the rest.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dovetail::metrics {

inline std::string ResourceTypeLabel(std::string_view resource) {
  std::string out(resource);
  for (char& c : out) {
    if (c == '-') c = '_';
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

inline double ResourceValue(std::string_view resource, int64_t milli) {
  if (resource == "cpu") return static_cast<double>(milli) / 1000.0;
  const int64_t units = milli >= 0 ? (milli + 999) / 1000 : -((-milli + 999) / 1000);
  return static_cast<double>(units);
}

}  // namespace dovetail::metrics
