// Wire-format helpers shared by the encoders and decoders of dovetail/kube: the MicroTime format
// of Kubernetes (events.k8s.io eventTime and series, coordination.k8s.io Lease times) and the
// status and early return of the simdjson readers (objects.cc, watch_event.cc).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "dovetail/common/absl_compat.h"
#include "simdjson.h"

namespace dovetail::kube::internal {

// RFC 3339 in UTC with microseconds, as metav1.MicroTime serialises.
inline std::string MicroTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

// InvalidArgument naming where a simdjson read failed and why.
inline absl::Status JsonError(simdjson::error_code error, std::string_view where) {
  return absl::InvalidArgumentError(
      Cat(where, ": ", std::string_view(simdjson::error_message(error))));
}

}  // namespace dovetail::kube::internal

// SJ_GET(expr, out, where): reads simdjson result `expr` into `out`, or returns the JsonError
// from the enclosing function.
#define SJ_GET(expr, out, where)                                      \
  do {                                                                \
    if (auto _sj_error = std::move(expr).get(out); _sj_error) {       \
      return ::dovetail::kube::internal::JsonError(_sj_error, where); \
    }                                                                 \
  } while (false)
