#include "dovetail/apis/validation/cron.h"

#include <string>

#include "dovetail/common/input_limits.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::apis::validation {
namespace {

using ::testing::HasSubstr;

TEST(CronScheduleTest, AcceptsDescriptorsAndFiveFields) {
  for (const char* text :
       {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly", " @daily ",
        "* * * * *", "0 9 * * mon-fri", "30 2 1 * *", "*/15 0-6,18-23 * * *", "0 0 1 jan,JUL *",
        "0 0 ? * SUN", "5/10 * * * *", "0 12 1-31/2 1-12 0-6", "0  9\t* * 1", "+5 * * * *"}) {
    EXPECT_TRUE(ParseCronSchedule(text).ok()) << text;
  }
}

TEST(CronScheduleTest, RejectsMalformedSchedules) {
  for (const char* text : {"",
                           "every day",
                           "@every 5m",
                           "@dailyx",
                           "* * * *",
                           "0 0 * * * *",
                           "60 * * * *",
                           "* 24 * * *",
                           "* * 0 * *",
                           "* * 32 * *",
                           "* * * 13 *",
                           "* * * * 7",
                           "5-1 * * * *",
                           "*/0 * * * *",
                           "1-2-3 * * * *",
                           "1/2/3 * * * *",
                           "1,,2 * * * *",
                           "a * * * *",
                           "* * * foo *",
                           "TZ=UTC * * * * *",
                           "CRON_TZ=UTC * * * * *",
                           "-1 * * * *",
                           "* * * * mon-",
                           "99999999999 * * * *"}) {
    EXPECT_FALSE(ParseCronSchedule(text).ok()) << text;
  }
}

TEST(CronScheduleTest, RefusesSchedulesOverTheLengthLimitBeforeParsing) {
  // A valid schedule padded with list items: long but well formed up to the limit.
  std::string list = "0";
  while (list.size() + 10 < kMaxCronScheduleBytes) list += ",0";
  const std::string at_limit = list + " * * * *";
  ASSERT_LE(at_limit.size(), kMaxCronScheduleBytes);
  EXPECT_TRUE(ParseCronSchedule(at_limit).ok());
  const std::string over = at_limit + std::string(kMaxCronScheduleBytes, ' ');
  const absl::StatusOr<CronSchedule> parsed = ParseCronSchedule(over);
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), HasSubstr("more than the limit of 1024"));
}

TEST(CronScheduleTest, ExpandsRangesStepsAndNames) {
  absl::StatusOr<CronSchedule> s = ParseCronSchedule("*/20 1-5/2 10 feb-mar mon,fri");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->minutes, (uint64_t{1} << 0) | (uint64_t{1} << 20) | (uint64_t{1} << 40));
  EXPECT_EQ(s->hours, (uint64_t{1} << 1) | (uint64_t{1} << 3) | (uint64_t{1} << 5));
  EXPECT_EQ(s->days_of_month, uint64_t{1} << 10);
  EXPECT_EQ(s->months, (uint64_t{1} << 2) | (uint64_t{1} << 3));
  EXPECT_EQ(s->days_of_week, (uint64_t{1} << 1) | (uint64_t{1} << 5));
  EXPECT_FALSE(s->any_day_of_month);
  EXPECT_FALSE(s->any_day_of_week);
}

TEST(CronScheduleTest, StepFromAValueRunsToTheMaximum) {
  absl::StatusOr<CronSchedule> s = ParseCronSchedule("50/5 * * * *");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->minutes, (uint64_t{1} << 50) | (uint64_t{1} << 55));
  EXPECT_TRUE(s->any_day_of_month);
  EXPECT_TRUE(s->any_day_of_week);
}

TEST(CronScheduleTest, DescriptorsExpand) {
  absl::StatusOr<CronSchedule> s = ParseCronSchedule("@weekly");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->minutes, 1u);
  EXPECT_EQ(s->hours, 1u);
  EXPECT_EQ(s->days_of_week, 1u);
  EXPECT_TRUE(s->any_day_of_month);
}

TEST(CronScheduleTest, ErrorsNameTheField) {
  absl::StatusOr<CronSchedule> s = ParseCronSchedule("0 0 * * 7");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("day of week \"7\""));
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("above the maximum 6"));
}

absl::Time Utc(int y, int mo, int d, int h, int mi) {
  return absl::FromCivil(absl::CivilMinute(y, mo, d, h, mi), absl::UTCTimeZone());
}

absl::Time Next(std::string_view cron, absl::Time after) {
  auto s = ParseCronSchedule(cron);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? NextActivation(*s, after) : absl::InfinitePast();
}

TEST(CronNextTest, FindsTheNextMatchingMinuteStrictlyAfter) {
  // 2026-11-30 is a Monday.
  EXPECT_EQ(Next("*/15 * * * *", Utc(2026, 11, 30, 10, 0)), Utc(2026, 11, 30, 10, 15));
  EXPECT_EQ(Next("*/15 * * * *", Utc(2026, 11, 30, 10, 7) + absl::Seconds(30)),
            Utc(2026, 11, 30, 10, 15));
  EXPECT_EQ(Next("@daily", Utc(2026, 11, 30, 10, 0)), Utc(2026, 12, 1, 0, 0));
  EXPECT_EQ(Next("@hourly", Utc(2026, 12, 31, 23, 30)), Utc(2027, 1, 1, 0, 0));
  EXPECT_EQ(Next("0 9 * * mon-fri", Utc(2026, 12, 4, 9, 0)), Utc(2026, 12, 7, 9, 0));  // Fri -> Mon
  EXPECT_EQ(Next("0 0 * * sun", Utc(2026, 11, 30, 0, 0)), Utc(2026, 12, 6, 0, 0));
  EXPECT_EQ(Next("@yearly", Utc(2026, 11, 30, 0, 0)), Utc(2027, 1, 1, 0, 0));
  EXPECT_EQ(Next("0 0 29 2 *", Utc(2026, 3, 1, 0, 0)), Utc(2028, 2, 29, 0, 0));
}

TEST(CronNextTest, RestrictedDayFieldsAreOred) {
  // The 1st of the month or any Monday: after Tuesday 2026-12-01 00:00 comes Monday 12-07.
  EXPECT_EQ(Next("0 0 1 * mon", Utc(2026, 12, 1, 0, 0)), Utc(2026, 12, 7, 0, 0));
  // With the day of month unrestricted only Mondays match.
  EXPECT_EQ(Next("0 0 * * mon", Utc(2026, 12, 1, 0, 0)), Utc(2026, 12, 7, 0, 0));
  // With the day of week unrestricted only the 1st matches.
  EXPECT_EQ(Next("0 0 1 * *", Utc(2026, 12, 1, 0, 0)), Utc(2027, 1, 1, 0, 0));
}

TEST(CronNextTest, NeverIsInfiniteFuture) {
  EXPECT_EQ(Next("0 0 30 2 *", Utc(2026, 1, 1, 0, 0)), absl::InfiniteFuture());
}

}  // namespace
}  // namespace dovetail::apis::validation
