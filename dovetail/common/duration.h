// Go-style durations as Karpenter's API writes them: `30s`, `1h30m`, `720h`, `1.5h`, `300ms`,
// `-2m`. ParseGoDuration accepts exactly what Go's time.ParseDuration accepts (units ns, us, µs,
// μs, ms, s, m, h; fractions; a leading sign; the bare "0") with the same range (int64
// nanoseconds) and the same float64 rounding of fractions. FormatGoDuration prints like Go's
// time.Duration.String() (720h0m0s, 1m30s, 1.5s, 300ms, 0s).
// The Is*Pattern predicates check the OpenAPI patterns Karpenter's CRDs put on duration fields.
// Used by the API codecs, validation and the CLI. Stateless functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace dovetail {

// Errors: InvalidArgument (malformed text, missing or unknown unit, more than 2^63-1 ns).
absl::StatusOr<absl::Duration> ParseGoDuration(std::string_view text);

// Go's Duration.String(). The duration is truncated toward zero to whole nanoseconds and
// saturated to the int64-nanosecond range; an infinite duration prints as the saturated value.
std::string FormatGoDuration(absl::Duration d);

// The literal that disables a nillable Karpenter duration (expireAfter, consolidateAfter).
inline constexpr std::string_view kNeverDuration = "Never";

// "Never" -> nullopt; otherwise ParseGoDuration. Mirrors Karpenter's NillableDuration.
absl::StatusOr<std::optional<absl::Duration>> ParseNillableDuration(std::string_view text);
// nullopt -> "Never"; otherwise FormatGoDuration.
std::string FormatNillableDuration(const std::optional<absl::Duration>& d);

// ^([0-9]+(s|m|h))+$ : NodePool expireAfter / consolidateAfter (besides "Never") and
// terminationGracePeriod.
bool IsKarpenterDurationPattern(std::string_view text);

// ^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$ : NodePool disruption budget `duration`.
bool IsBudgetDurationPattern(std::string_view text);

}  // namespace dovetail
