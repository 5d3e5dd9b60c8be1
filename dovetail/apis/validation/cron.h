// Cron schedules of NodePool disruption budgets (`spec.disruption.budgets[].schedule`), parsed
// with the rules Karpenter's cron library applies to them: either one of the descriptors
// @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, or exactly five
// whitespace-separated fields (minute 0-59, hour 0-23, day of month 1-31, month 1-12 or jan-dec,
// day of week 0-6 or sun-sat). A field is a comma-separated list of `*` or `?` (every value), a
// number or name, a range `a-b`, each optionally stepped (`*/15`, `1-5/2`, `10/20` = 10 to the
// maximum in steps of 20). Names are case-insensitive; ranges must not run backwards; steps must
// be positive. The schedule is always read in UTC; a `TZ=` / `CRON_TZ=` prefix is rejected
// because Karpenter adds its own.
//
// Used by apis/validation (and usable by the disruption controller, which needs the same parse).
// Stateless functions and a value type; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace dovetail::apis::validation {

// Bit i of a field is set when value i matches (minute bit 0..59, month bit 1..12, ...).
struct CronSchedule {
  uint64_t minutes = 0;
  uint64_t hours = 0;
  uint64_t days_of_month = 0;
  uint64_t months = 0;
  uint64_t days_of_week = 0;
  // The day-of-month / day-of-week field was `*` or `?` (cron ORs the two day fields unless one
  // of them is unrestricted).
  bool any_day_of_month = false;
  bool any_day_of_week = false;
};

// Errors: InvalidArgument naming the offending field and what is wrong with it, e.g.
// `day of week "7": 7 is above the maximum 6`, or for a schedule longer than
// kMaxCronScheduleBytes (common/input_limits.h).
absl::StatusOr<CronSchedule> ParseCronSchedule(std::string_view text);

// The first activation strictly after `after` (at a whole minute, UTC), as cron libraries compute
// it; InfiniteFuture when none comes within five years (e.g. `0 0 30 2 *`).
absl::Time NextActivation(const CronSchedule& schedule, absl::Time after);

}  // namespace dovetail::apis::validation
