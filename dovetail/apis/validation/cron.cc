#include "dovetail/apis/validation/cron.h"

#include <array>
#include <string>
#include <vector>

#include "dovetail/common/absl_compat.h"
#include "dovetail/common/input_limits.h"

namespace dovetail::apis::validation {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
char ToLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(separator, start);
    if (at == std::string_view::npos) {
      out.push_back(text.substr(start));
      return out;
    }
    out.push_back(text.substr(start, at - start));
    start = at + 1;
  }
}

std::vector<std::string_view> SplitWhitespace(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && !IsSpace(text[i])) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
  return text;
}

struct FieldSpec {
  std::string_view what;
  int min;
  int max;
  const std::string_view* names;  // names[i] is value min_name + i; nullptr when none
  int names_count;
  int min_name;
};

constexpr std::array<std::string_view, 12> kMonthNames = {"jan", "feb", "mar", "apr", "may", "jun",
                                                          "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<std::string_view, 7> kDayNames = {"sun", "mon", "tue", "wed",
                                                       "thu", "fri", "sat"};

constexpr std::array<FieldSpec, 5> kFields = {{
    {"minute", 0, 59, nullptr, 0, 0},
    {"hour", 0, 23, nullptr, 0, 0},
    {"day of month", 1, 31, nullptr, 0, 0},
    {"month", 1, 12, kMonthNames.data(), static_cast<int>(kMonthNames.size()), 1},
    {"day of week", 0, 6, kDayNames.data(), static_cast<int>(kDayNames.size()), 0},
}};

// Descriptor -> the five fields it stands for.
struct Descriptor {
  std::string_view name;
  std::string_view fields;
};
constexpr std::array<Descriptor, 7> kDescriptors = {{
    {"@yearly", "0 0 1 1 *"},
    {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},
    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
}};

absl::Status CronFieldError(const FieldSpec& spec, std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(Cat(spec.what, " \"", text, "\": ", why));
}

// A non-negative decimal number (an optional leading '+' is accepted, as the cron library does).
bool ParseNumber(std::string_view text, int* out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty() || text.size() > 9) return false;
  int value = 0;
  for (char c : text) {
    if (!IsDigit(c)) return false;
    value = value * 10 + (c - '0');
  }
  *out = value;
  return true;
}

absl::Status ParseValue(const FieldSpec& spec, std::string_view field_text, std::string_view text,
                        int* out) {
  if (spec.names != nullptr) {
    std::string lower(text);
    for (char& c : lower) c = ToLower(c);
    for (int i = 0; i < spec.names_count; ++i) {
      if (spec.names[i] == lower) {
        *out = spec.min_name + i;
        return absl::OkStatus();
      }
    }
  }
  if (!ParseNumber(text, out)) {
    return CronFieldError(spec, field_text,
                          text.empty() ? std::string("empty value")
                                       : Cat("\"", text, "\" is not a number",
                                             spec.names != nullptr ? " or a name" : ""));
  }
  return absl::OkStatus();
}

// One element of a comma-separated list: `*`, `?`, `a`, `a-b`, each optionally `/step`.
absl::Status ParseRange(const FieldSpec& spec, std::string_view field_text, std::string_view text,
                        uint64_t* bits, bool* any) {
  std::vector<std::string_view> range_and_step = Split(text, '/');
  if (range_and_step.size() > 2) return CronFieldError(spec, field_text, "more than one '/'");
  std::vector<std::string_view> low_and_high = Split(range_and_step[0], '-');
  int start = 0;
  int end = 0;
  bool star = false;
  if (range_and_step[0] == "*" || range_and_step[0] == "?") {
    start = spec.min;
    end = spec.max;
    star = true;
  } else {
    if (low_and_high.size() > 2) return CronFieldError(spec, field_text, "more than one '-'");
    if (absl::Status s = ParseValue(spec, field_text, low_and_high[0], &start); !s.ok()) return s;
    end = start;
    if (low_and_high.size() == 2) {
      if (absl::Status s = ParseValue(spec, field_text, low_and_high[1], &end); !s.ok()) return s;
    }
  }
  int step = 1;
  if (range_and_step.size() == 2) {
    if (!ParseNumber(range_and_step[1], &step)) {
      return CronFieldError(spec, field_text,
                            Cat("step \"", range_and_step[1], "\" is not a number"));
    }
    // `a/step` runs from a to the maximum.
    if (!star && low_and_high.size() == 1) end = spec.max;
  }
  if (start < spec.min) {
    return CronFieldError(spec, field_text, Cat(start, " is below the minimum ", spec.min));
  }
  if (end > spec.max) {
    return CronFieldError(spec, field_text, Cat(end, " is above the maximum ", spec.max));
  }
  if (start > end) {
    return CronFieldError(spec, field_text, Cat("range starts at ", start, " after its end ", end));
  }
  if (step == 0) return CronFieldError(spec, field_text, "step must be a positive number");
  for (int v = start; v <= end; v += step) *bits |= uint64_t{1} << v;
  if (star && step == 1) *any = true;
  return absl::OkStatus();
}

absl::Status ParseField(const FieldSpec& spec, std::string_view text, uint64_t* bits, bool* any) {
  for (std::string_view element : Split(text, ',')) {
    if (absl::Status s = ParseRange(spec, text, element, bits, any); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CronSchedule> ParseCronSchedule(std::string_view text) {
  if (text.size() > kMaxCronScheduleBytes) {
    return absl::InvalidArgumentError(Cat("schedule is ", text.size(),
                                          " characters long, more than the limit of ",
                                          kMaxCronScheduleBytes));
  }
  text = Trim(text);
  if (text.empty()) return absl::InvalidArgumentError("empty schedule");
  if (text.starts_with("TZ=") || text.starts_with("CRON_TZ=")) {
    return absl::InvalidArgumentError(
        "time zones are not supported: schedules are always evaluated in UTC");
  }
  if (text.front() == '@') {
    for (const Descriptor& d : kDescriptors) {
      if (d.name == text) return ParseCronSchedule(d.fields);
    }
    return absl::InvalidArgumentError(
        Cat("unknown descriptor \"", text,
            "\": use @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly"));
  }
  std::vector<std::string_view> fields = SplitWhitespace(text);
  if (fields.size() != kFields.size()) {
    return absl::InvalidArgumentError(
        Cat("expected exactly 5 fields (minute hour day-of-month month day-of-week), found ",
            fields.size()));
  }
  CronSchedule out;
  bool unused = false;
  uint64_t* bits[] = {&out.minutes, &out.hours, &out.days_of_month, &out.months, &out.days_of_week};
  bool* any[] = {&unused, &unused, &out.any_day_of_month, &unused, &out.any_day_of_week};
  for (size_t i = 0; i < fields.size(); ++i) {
    if (absl::Status s = ParseField(kFields[i], fields[i], bits[i], any[i]); !s.ok()) return s;
  }
  return out;
}

absl::Time NextActivation(const CronSchedule& schedule, absl::Time after) {
  const absl::TimeZone utc = absl::UTCTimeZone();
  // Start at the next whole minute.
  absl::CivilMinute t = absl::ToCivilMinute(after, utc) + 1;
  const absl::CivilYear limit = absl::CivilYear(t) + 5;
  auto bit = [](uint64_t set, int v) { return ((set >> v) & 1) != 0; };
  while (absl::CivilYear(t) <= limit) {
    if (!bit(schedule.months, t.month())) {
      t = absl::CivilMinute(absl::CivilMonth(t) + 1);
      continue;
    }
    const bool dom = bit(schedule.days_of_month, t.day());
    // Cron counts Sunday as 0; Abseil's weekdays run Monday (0) to Sunday (6).
    const int weekday = (static_cast<int>(absl::GetWeekday(absl::CivilDay(t))) + 1) % 7;
    const bool dow = bit(schedule.days_of_week, weekday);
    const bool day =
        schedule.any_day_of_month || schedule.any_day_of_week ? dom && dow : dom || dow;
    if (!day) {
      t = absl::CivilMinute(absl::CivilDay(t) + 1);
      continue;
    }
    if (!bit(schedule.hours, t.hour())) {
      t = absl::CivilMinute(absl::CivilHour(t) + 1);
      continue;
    }
    if (!bit(schedule.minutes, t.minute())) {
      t += 1;
      continue;
    }
    return absl::FromCivil(t, utc);
  }
  return absl::InfiniteFuture();
}

}  // namespace dovetail::apis::validation
