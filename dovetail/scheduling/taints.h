// Taints and tolerations: Kubernetes' toleration matching, Karpenter's "does the pod tolerate
// every taint of this node / NodePool" check, the taints Karpenter treats as ephemeral, and the
// text forms used in messages and the CLI.
//
// Matching is Kubernetes' Toleration.ToleratesTaint: the toleration's effect (when set) must equal
// the taint's; its key (when non-empty) must equal the taint's; operator Exists then tolerates any
// value and Equal requires equal values. An empty key with Exists tolerates every taint.
// PreferNoSchedule taints must be tolerated like the others during scheduling until the
// preference relaxation adds a blanket toleration; callers that only care about hard constraints
// pass PreferNoSchedule::kIgnore.
// Stateless functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dovetail/apis/core/meta.h"

namespace dovetail::scheduling {

enum class PreferNoSchedule { kMustTolerate, kIgnore };

bool ToleratesTaint(const apis::core::Toleration& toleration, const apis::core::Taint& taint);
// True when any of the tolerations tolerates the taint.
bool ToleratesTaint(absl::Span<const apis::core::Toleration> tolerations,
                    const apis::core::Taint& taint);

// OK when every taint is tolerated. Otherwise FailedPrecondition naming the first untolerated
// taint: `did not tolerate taint key=value:NoSchedule`.
absl::Status Tolerates(absl::Span<const apis::core::Toleration> tolerations,
                       absl::Span<const apis::core::Taint> taints,
                       PreferNoSchedule prefer_no_schedule = PreferNoSchedule::kMustTolerate);

// Same key and effect (values are not compared), Kubernetes' Taint.MatchTaint.
bool MatchTaint(const apis::core::Taint& a, const apis::core::Taint& b);
// `base` followed by every taint of `extra` that matches none already present.
std::vector<apis::core::Taint> MergeTaints(absl::Span<const apis::core::Taint> base,
                                           absl::Span<const apis::core::Taint> extra);

// The taints of labels.h's kKnownEphemeralTaints (matched by key and effect) and any taint whose
// key starts with readiness.k8s.io/.
bool IsKnownEphemeralTaint(const apis::core::Taint& taint);

std::string_view TaintEffectName(apis::core::TaintEffect effect);
// "NoSchedule", "PreferNoSchedule", "NoExecute" (case-sensitive). Errors: InvalidArgument.
absl::StatusOr<apis::core::TaintEffect> ParseTaintEffect(std::string_view text);

// "key=value:Effect", or "key:Effect" when the value is empty (Kubernetes' Taint.ToString()).
std::string TaintToString(const apis::core::Taint& taint);
// Parses "key=value:Effect", "key=:Effect" or "key:Effect" (kubectl taint syntax with the effect
// required). The key must be a qualified name and the value a valid label value.
// Errors: InvalidArgument.
absl::StatusOr<apis::core::Taint> ParseTaint(std::string_view text);

// Dovetail's toleration text, unambiguous and round-tripping through ParseToleration:
//   Equal:  "key=value", "key=value:Effect" (value may be empty: "key=")
//   Exists: "key", "key:Effect"; with the empty key "*" or "*:Effect"
// followed by " for <N>s" when tolerationSeconds is set.
std::string TolerationToString(const apis::core::Toleration& toleration);
// Errors: InvalidArgument (bad effect, bad key or value syntax, bad seconds).
absl::StatusOr<apis::core::Toleration> ParseToleration(std::string_view text);

}  // namespace dovetail::scheduling
