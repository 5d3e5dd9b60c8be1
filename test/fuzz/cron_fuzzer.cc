// Disruption budget schedules (`spec.disruption.budgets[].schedule`), written by NodePool authors.
// Properties: a parsed schedule's next activation is at a whole minute, strictly after the start,
// and on a minute and hour the schedule allows.
#include <cstdint>
#include <string_view>

#include "absl/time/time.h"
#include "dovetail/apis/validation/cron.h"
#include "dovetail/common/absl_compat.h"
#include "test/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto schedule = dovetail::apis::validation::ParseCronSchedule(text);
  if (!schedule.ok()) return 0;
  const absl::Time start = absl::FromUnixSeconds(1780000000);  // 2026-05-28, a fixed instant
  const absl::Time next = dovetail::apis::validation::NextActivation(*schedule, start);
  if (next == absl::InfiniteFuture()) return 0;
  FUZZ_CHECK(next > start, text);
  const absl::CivilMinute at = absl::ToCivilMinute(next, absl::UTCTimeZone());
  FUZZ_CHECK(absl::FromCivil(at, absl::UTCTimeZone()) == next, text);
  FUZZ_CHECK((schedule->minutes >> at.minute()) & 1,
             dovetail::Cat(text, " at ", absl::FormatCivilTime(at)));
  FUZZ_CHECK((schedule->hours >> at.hour()) & 1,
             dovetail::Cat(text, " at ", absl::FormatCivilTime(at)));
  FUZZ_CHECK((schedule->months >> at.month()) & 1,
             dovetail::Cat(text, " at ", absl::FormatCivilTime(at)));
  return 0;
}
