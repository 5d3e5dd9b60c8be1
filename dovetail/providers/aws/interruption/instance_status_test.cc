#include "dovetail/providers/aws/interruption/instance_status.h"

#include "gtest/gtest.h"

namespace dovetail::providers::aws::interruption {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'796'000'000);

Ec2StatusSummary Failed(absl::Time since, std::string name = "reachability") {
  return {.status = "impaired",
          .details = {{.name = std::move(name), .status = "failed", .impaired_since = since}}};
}
Ec2StatusSummary WithStatus(std::string status) {
  return {.status = "ok",
          .details = {{.name = "reachability",
                       .status = std::move(status),
                       .impaired_since = kNow - absl::Hours(1)}}};
}
Ec2StatusSummary Passed() { return WithStatus("passed"); }

Ec2InstanceStatus Instance(std::string id) {
  return {.instance_id = std::move(id),
          .availability_zone = "us-east-1a",
          .instance_state = "running",
          .instance_status = Passed(),
          .system_status = Passed(),
          .attached_ebs_status = Passed()};
}

TEST(InstanceStatusTest, CategoryNamesAreEc2s) {
  EXPECT_EQ(StatusCategoryName(StatusCategory::kInstanceStatus), "InstanceStatus");
  EXPECT_EQ(StatusCategoryName(StatusCategory::kSystemStatus), "SystemStatus");
  EXPECT_EQ(StatusCategoryName(StatusCategory::kEbsStatus), "EBSStatus");
  EXPECT_EQ(StatusCategoryName(StatusCategory::kEventStatus), "EventStatus");
}

TEST(InstanceStatusTest, InstanceAndSystemFailuresTerminateForcefullyEventsDrainEbsNothing) {
  EXPECT_EQ(ActionForCategory(StatusCategory::kInstanceStatus),
            (CategoryAction{.act = true, .kind = "instance_status", .forceful = true}));
  EXPECT_EQ(ActionForCategory(StatusCategory::kSystemStatus),
            (CategoryAction{.act = true, .kind = "system_status", .forceful = true}));
  EXPECT_EQ(ActionForCategory(StatusCategory::kEventStatus),
            (CategoryAction{.act = true, .kind = "event_status", .forceful = false}));
  EXPECT_FALSE(ActionForCategory(StatusCategory::kEbsStatus).act);
}

TEST(InstanceStatusTest, ThreeCallsImpairedInstanceImpairedSystemOrScheduledEvents) {
  const std::vector<std::vector<Filter>> sets = InstanceStatusFilterSets();
  ASSERT_EQ(sets.size(), 3u);
  ASSERT_EQ(sets[0].size(), 1u);
  EXPECT_EQ(sets[0][0].name, "instance-status.status");
  EXPECT_EQ(sets[0][0].values, std::vector<std::string>{"impaired"});
  ASSERT_EQ(sets[1].size(), 1u);
  EXPECT_EQ(sets[1][0].name, "system-status.status");
  EXPECT_EQ(sets[1][0].values, std::vector<std::string>{"impaired"});
  ASSERT_EQ(sets[2].size(), 1u);
  EXPECT_EQ(sets[2][0].name, "event.code");
  EXPECT_EQ(sets[2][0].values,
            (std::vector<std::string>{"instance-reboot", "system-reboot", "system-maintenance",
                                      "instance-retirement", "instance-stop"}));
}

TEST(InstanceStatusTest, AFailedCheckCountsFrom120Seconds) {
  Ec2InstanceStatus at119 = Instance("i-119");
  at119.instance_status = Failed(kNow - absl::Seconds(119));
  Ec2InstanceStatus at120 = Instance("i-120");
  at120.instance_status = Failed(kNow - absl::Seconds(120));
  Ec2InstanceStatus system = Instance("i-sys");
  system.system_status = Failed(kNow - absl::Minutes(5));
  Ec2InstanceStatus system119 = Instance("i-sys119");
  system119.system_status = Failed(kNow - absl::Seconds(119));

  const std::vector<UnhealthyInstance> got =
      UnhealthyInstances({at119, at120, system, system119}, kNow);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], (UnhealthyInstance{.instance_id = "i-120",
                                       .details = {{.category = StatusCategory::kInstanceStatus,
                                                    .name = "reachability",
                                                    .status = "failed",
                                                    .impaired_since = kNow - absl::Seconds(120)}},
                                       .impaired_since = kNow - absl::Seconds(120)}));
  EXPECT_EQ(got[1].instance_id, "i-sys");
  EXPECT_EQ(got[1].Categories(), std::vector<StatusCategory>{StatusCategory::kSystemStatus});
}

TEST(InstanceStatusTest, AFailedCheckWithoutImpairedSinceCounts) {
  Ec2InstanceStatus s = Instance("i-1");
  s.instance_status = Failed(absl::InfinitePast());
  EXPECT_EQ(UnhealthyInstances({s}, kNow).size(), 1u);
}

TEST(InstanceStatusTest, ScheduledEventsCountAtOnceAsImpairedNow) {
  Ec2InstanceStatus s = Instance("i-evt");
  s.events = {{.code = "system-maintenance",
               .description = "Scheduled system maintenance",
               .not_before = kNow + absl::Hours(72),
               .not_after = kNow + absl::Hours(78)}};
  const std::vector<UnhealthyInstance> got = UnhealthyInstances({s}, kNow);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].details, (std::vector<StatusDetail>{{.category = StatusCategory::kEventStatus,
                                                        .name = "system-maintenance",
                                                        .status = "failed",
                                                        .impaired_since = kNow}}));
  EXPECT_EQ(got[0].impaired_since, kNow);
}

TEST(InstanceStatusTest, PassedInitializingAndInsufficientDataNeverCount) {
  Ec2InstanceStatus a = Instance("i-a");
  a.instance_status = WithStatus("initializing");
  a.system_status = WithStatus("insufficient-data");
  Ec2InstanceStatus b = Instance("i-b");  // every check passed
  b.instance_status.status = "impaired";  // the summary alone does not count: its checks do
  EXPECT_TRUE(UnhealthyInstances({a, b}, kNow).empty());
}

TEST(InstanceStatusTest, EbsFailuresAreKeptButMapToNoAction) {
  Ec2InstanceStatus s = Instance("i-ebs");
  s.attached_ebs_status = Failed(kNow - absl::Minutes(10));
  const std::vector<UnhealthyInstance> got = UnhealthyInstances({s}, kNow);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].Categories(), std::vector<StatusCategory>{StatusCategory::kEbsStatus});
  EXPECT_FALSE(ActionForCategory(got[0].Categories()[0]).act);
}

TEST(InstanceStatusTest, OnlyTheCountingDetailsAreKeptAndTheEarliestImpairmentWins) {
  Ec2InstanceStatus s = Instance("i-mixed");
  s.instance_status = Failed(kNow - absl::Minutes(3));
  s.system_status = Failed(kNow - absl::Seconds(30));  // too recent
  s.attached_ebs_status = Failed(kNow - absl::Minutes(9));
  s.events = {{.code = "instance-retirement"}, {.code = "instance-stop"}};
  const std::vector<UnhealthyInstance> got = UnhealthyInstances({s}, kNow);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].details.size(), 4u);
  EXPECT_EQ(got[0].Categories(), (std::vector<StatusCategory>{StatusCategory::kInstanceStatus,
                                                              StatusCategory::kEbsStatus,
                                                              StatusCategory::kEventStatus}));
  EXPECT_EQ(got[0].impaired_since, kNow - absl::Minutes(9));
}

TEST(InstanceStatusTest, AnInstanceInSeveralRepliesCountsByItsFirst) {
  Ec2InstanceStatus first = Instance("i-dup");
  first.instance_status = Failed(kNow - absl::Minutes(3));
  Ec2InstanceStatus again = first;
  again.events = {{.code = "instance-reboot"}};  // a later reply's copy is not looked at
  const std::vector<UnhealthyInstance> got = UnhealthyInstances({first, again}, kNow);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].Categories(), std::vector<StatusCategory>{StatusCategory::kInstanceStatus});
}

TEST(InstanceStatusTest, EachKeyIsNewOnceWhileItStaysReported) {
  UnhealthySeen seen;
  const UnhealthySeen::Key a = {"i-a", StatusCategory::kInstanceStatus};
  const UnhealthySeen::Key a_event = {"i-a", StatusCategory::kEventStatus};
  const UnhealthySeen::Key b = {"i-b", StatusCategory::kSystemStatus};
  EXPECT_EQ(seen.Poll({a, b}), (std::set<UnhealthySeen::Key>{a, b}));
  EXPECT_EQ(seen.Poll({a, b}), std::set<UnhealthySeen::Key>{});
  // Another category of a known instance is new.
  EXPECT_EQ(seen.Poll({a, a_event, b}), std::set<UnhealthySeen::Key>{a_event});
  EXPECT_EQ(seen.size(), 3u);
}

TEST(InstanceStatusTest, AKeyNotReportedIsForgottenAndCountsAgainWhenItRecurs) {
  UnhealthySeen seen;
  const UnhealthySeen::Key a = {"i-a", StatusCategory::kInstanceStatus};
  const UnhealthySeen::Key b = {"i-b", StatusCategory::kSystemStatus};
  EXPECT_EQ(seen.Poll({a, b}).size(), 2u);
  EXPECT_EQ(seen.Poll({b}), std::set<UnhealthySeen::Key>{});
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen.Poll({a, b}), std::set<UnhealthySeen::Key>{a});
  EXPECT_EQ(seen.Poll({}), std::set<UnhealthySeen::Key>{});
  EXPECT_EQ(seen.size(), 0u);
  EXPECT_EQ(seen.Poll({b}), std::set<UnhealthySeen::Key>{b});
}

}  // namespace
}  // namespace dovetail::providers::aws::interruption
