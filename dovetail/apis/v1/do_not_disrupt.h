// The karpenter.sh/do-not-disrupt annotation on a pod (labels.h kDoNotDisruptAnnotationKey), read
// once for every controller that honours it (termination's drain, disruption's candidates,
// provisioning's pods of deleting nodes):
//   - "true" protects the pod for as long as it runs;
//   - a Go duration ("30m", "1h30m"; common/duration.h) protects it for that long after `since`
//     (the caller's choice of the pod's start); without `since` it protects nothing;
//   - any other value, and a negative duration, protects nothing and is `invalid` (upstream
//     reports such a value and otherwise ignores it).
// Pure; thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "absl/time/time.h"

namespace dovetail::apis::v1 {

bool DoNotDisruptInForce(std::string_view value, std::optional<absl::Time> since, absl::Time now,
                         bool* invalid = nullptr);

}  // namespace dovetail::apis::v1
