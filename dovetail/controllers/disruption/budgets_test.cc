#include "dovetail/controllers/disruption/budgets.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::controllers::disruption {
namespace {

using apis::v1::Budget;
using apis::v1::DisruptionReason;
using apis::v1::NodePool;
using ::testing::HasSubstr;

absl::Time Utc(int y, int mo, int d, int h, int mi) {
  return absl::FromCivil(absl::CivilMinute(y, mo, d, h, mi), absl::UTCTimeZone());
}

NodePool Pool(std::optional<std::vector<Budget>> budgets) {
  NodePool p;
  p.metadata.name = "default";
  if (budgets) p.spec.disruption.emplace().budgets = std::move(budgets);
  return p;
}

const absl::Time kNow = Utc(2026, 11, 30, 10, 30);  // a Monday

TEST(BudgetsTest, DefaultIsTenPercentRoundedUp) {
  EXPECT_EQ(AllowedDisruptions(Pool(std::nullopt), DisruptionReason::kEmpty, 25, kNow), 3);
  EXPECT_EQ(AllowedDisruptions(Pool(std::nullopt), DisruptionReason::kDrifted, 1, kNow), 1);
  EXPECT_EQ(AllowedDisruptions(Pool(std::nullopt), DisruptionReason::kDrifted, 0, kNow), 0);
}

TEST(BudgetsTest, EmptyListIsUnlimited) {
  EXPECT_EQ(AllowedDisruptions(Pool(std::vector<Budget>{}), DisruptionReason::kEmpty, 10, kNow),
            kUnlimited);
}

TEST(BudgetsTest, MinimumOverBudgetsForTheReason) {
  auto pool = Pool(std::vector<Budget>{
      {{}, "50%", {}, {}},
      {{DisruptionReason::kDrifted}, "1", {}, {}},
      {{DisruptionReason::kEmpty, DisruptionReason::kUnderutilized}, "0", {}, {}}});
  EXPECT_EQ(AllowedDisruptions(pool, DisruptionReason::kDrifted, 10, kNow), 1);
  EXPECT_EQ(AllowedDisruptions(pool, DisruptionReason::kEmpty, 10, kNow), 0);
  auto only_drift = Pool(std::vector<Budget>{{{DisruptionReason::kDrifted}, "2", {}, {}}});
  EXPECT_EQ(AllowedDisruptions(only_drift, DisruptionReason::kUnderutilized, 10, kNow), kUnlimited);
}

TEST(BudgetsTest, ScheduledBudgetLimitsOnlyWhileActive) {
  // No disruption during business hours on weekdays (09:00 for 8h).
  auto pool = Pool(std::vector<Budget>{{{}, "0", "0 9 * * mon-fri", "8h"}, {{}, "100%", {}, {}}});
  EXPECT_EQ(AllowedDisruptions(pool, DisruptionReason::kEmpty, 4, kNow), 0);
  EXPECT_EQ(AllowedDisruptions(pool, DisruptionReason::kEmpty, 4, Utc(2026, 11, 30, 8, 59)), 4);
  EXPECT_EQ(AllowedDisruptions(pool, DisruptionReason::kEmpty, 4, Utc(2026, 11, 30, 9, 0)), 0);
  EXPECT_EQ(AllowedDisruptions(pool, DisruptionReason::kEmpty, 4, Utc(2026, 11, 30, 16, 59)), 0);
  EXPECT_EQ(AllowedDisruptions(pool, DisruptionReason::kEmpty, 4, Utc(2026, 11, 30, 17, 0)), 4);
  EXPECT_EQ(AllowedDisruptions(pool, DisruptionReason::kEmpty, 4, Utc(2026, 12, 5, 10, 30)), 4);
}

TEST(BudgetsTest, InvalidBudgetFailsClosedWithAReason) {
  std::string error;
  auto bad_cron = Pool(std::vector<Budget>{{{}, "5", "0 25 * * *", "1h"}});
  EXPECT_EQ(AllowedDisruptions(bad_cron, DisruptionReason::kEmpty, 10, kNow, &error), 0);
  EXPECT_THAT(error, HasSubstr("schedule"));
  auto bad_nodes = Pool(std::vector<Budget>{{{}, "lots", {}, {}}});
  EXPECT_EQ(AllowedDisruptions(bad_nodes, DisruptionReason::kEmpty, 10, kNow, &error), 0);
  EXPECT_THAT(error, HasSubstr("lots"));
  auto half = Pool(std::vector<Budget>{{{}, "5", "@daily", std::nullopt}});
  EXPECT_EQ(AllowedDisruptions(half, DisruptionReason::kEmpty, 10, kNow, &error), 0);
}

TEST(BudgetsTest, DisruptingNodesConsumeBudget) {
  auto pool = Pool(std::vector<Budget>{{{}, "3", {}, {}}});
  EXPECT_EQ(RemainingDisruptions(pool, DisruptionReason::kEmpty, 10, 2, kNow), 1);
  EXPECT_EQ(RemainingDisruptions(pool, DisruptionReason::kEmpty, 10, 5, kNow), 0);
  EXPECT_EQ(
      RemainingDisruptions(Pool(std::vector<Budget>{}), DisruptionReason::kEmpty, 10, 5, kNow),
      kUnlimited);
}

}  // namespace
}  // namespace dovetail::controllers::disruption
