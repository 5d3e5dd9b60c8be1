#include "dovetail/providers/aws/interruption_messages.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace dovetail::providers::aws {
namespace {

// EventBridge events in the shapes AWS documents (ids and accounts made up).
constexpr char kSpot[] = R"({
  "version": "0", "id": "1e5527d7-bb36-4607-3370-4164db56a40e",
  "detail-type": "EC2 Spot Instance Interruption Warning", "source": "aws.ec2",
  "account": "123456789012", "time": "2026-11-30T10:25:20Z", "region": "us-east-1",
  "resources": ["arn:aws:ec2:us-east-1b:instance/i-0b662ef9931388ba0"],
  "detail": {"instance-id": "i-0b662ef9931388ba0", "instance-action": "terminate"}})";
constexpr char kRebalance[] = R"({
  "version": "0", "id": "5c2e4b44-7a2b-4cbb-8a1b-0e0c3a3b1d2f",
  "detail-type": "EC2 Instance Rebalance Recommendation", "source": "aws.ec2",
  "account": "123456789012", "time": "2026-11-30T11:00:00Z", "region": "us-east-1",
  "resources": ["arn:aws:ec2:us-east-1a:instance/i-0123456789abcdef0"],
  "detail": {"instance-id": "i-0123456789abcdef0"}})";
constexpr char kHealth[] = R"({
  "version": "0", "id": "7bf73129-1428-4cd3-a780-95db273d1602",
  "detail-type": "AWS Health Event", "source": "aws.health",
  "account": "123456789012", "time": "2026-11-30T01:00:00Z", "region": "us-east-1",
  "resources": [],
  "detail": {
    "eventArn": "arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED_1",
    "service": "EC2", "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
    "eventTypeCategory": "scheduledChange",
    "startTime": "Sat, 05 Dec 2026 15:00:00 GMT", "endTime": "Sat, 05 Dec 2026 17:00:00 GMT",
    "eventDescription": [{"language": "en_US", "latestDescription": "retirement"}],
    "affectedEntities": [{"entityValue": "i-0aaaaaaaaaaaaaaa1"}, {"entityValue": "i-0aaaaaaaaaaaaaaa2"}]}})";
std::string StateChange(const std::string& state) {
  return R"({"version": "0", "id": "7bf73129-1428-4cd3-a780-95db273d1602",
    "detail-type": "EC2 Instance State-change Notification", "source": "aws.ec2",
    "account": "123456789012", "time": "2026-11-30T12:00:00Z", "region": "us-east-1",
    "resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-0abcd1234ef567890"],
    "detail": {"instance-id": "i-0abcd1234ef567890", "state": ")" +
         state + R"("}})";
}
constexpr char kCapacityReservation[] = R"({
  "version": "0", "id": "9f1c2b3a-0000-4000-8000-000000000001",
  "detail-type": "EC2 Capacity Reservation Instance Interruption Warning", "source": "aws.ec2",
  "account": "123456789012", "time": "2026-11-30T13:00:00Z", "region": "us-west-2",
  "resources": ["arn:aws:ec2:us-west-2:123456789012:capacity-reservation/cr-0123456789abcdef0"],
  "detail": {"instance-id": "i-0ccccccccccccccc1", "instance-action": "terminate"}})";

TEST(InterruptionMessagesTest, ParsesSpotInterruptionWarning) {
  InterruptionMessage m = ParseInterruptionMessage(kSpot);
  EXPECT_EQ(m.kind, InterruptionKind::kSpotInterruption) << m.reason;
  EXPECT_TRUE(m.actionable());
  EXPECT_EQ(m.instance_ids, std::vector<std::string>{"i-0b662ef9931388ba0"});
  EXPECT_EQ(m.instance_action, "terminate");
  EXPECT_EQ(m.time,
            absl::FromCivil(absl::CivilSecond(2026, 11, 30, 10, 25, 20), absl::UTCTimeZone()));
  EXPECT_EQ(m.id, "1e5527d7-bb36-4607-3370-4164db56a40e");
  EXPECT_EQ(m.region, "us-east-1");
  EXPECT_EQ(m.account, "123456789012");
  EXPECT_EQ(m.resources.size(), 1u);
  EXPECT_EQ(InterruptionKindName(m.kind), "spot_interrupted");
}

TEST(InterruptionMessagesTest, ParsesRebalanceRecommendation) {
  InterruptionMessage m = ParseInterruptionMessage(kRebalance);
  EXPECT_EQ(m.kind, InterruptionKind::kRebalanceRecommendation) << m.reason;
  EXPECT_EQ(m.instance_ids, std::vector<std::string>{"i-0123456789abcdef0"});
  EXPECT_EQ(InterruptionKindName(m.kind), "rebalance_recommendation");
}

TEST(InterruptionMessagesTest, ParsesScheduledChangeWithEveryAffectedInstance) {
  InterruptionMessage m = ParseInterruptionMessage(kHealth);
  EXPECT_EQ(m.kind, InterruptionKind::kScheduledChange) << m.reason;
  EXPECT_EQ(m.instance_ids,
            (std::vector<std::string>{"i-0aaaaaaaaaaaaaaa1", "i-0aaaaaaaaaaaaaaa2"}));
  EXPECT_EQ(m.event_type_code, "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED");
  EXPECT_FALSE(m.event_arn.empty());
  EXPECT_EQ(InterruptionKindName(m.kind), "scheduled_change");
}

TEST(InterruptionMessagesTest, ParsesTheScheduledWindowOfAHealthEvent) {
  const absl::TimeZone utc = absl::UTCTimeZone();
  InterruptionMessage m = ParseInterruptionMessage(kHealth);
  ASSERT_EQ(m.kind, InterruptionKind::kScheduledChange) << m.reason;
  EXPECT_EQ(m.start_time, absl::FromCivil(absl::CivilSecond(2026, 12, 5, 15, 0, 0), utc));
  EXPECT_EQ(m.end_time, absl::FromCivil(absl::CivilSecond(2026, 12, 5, 17, 0, 0), utc));

  // One-digit days and RFC 3339 are read too.
  std::string other = kHealth;
  other.replace(other.find("Sat, 05 Dec 2026 15:00:00 GMT"), 29, "Sat, 5 Dec 2026 15:30:00 GMT");
  other.replace(other.find("Sat, 05 Dec 2026 17:00:00 GMT"), 29, "2026-12-05T18:00:00Z");
  m = ParseInterruptionMessage(other);
  ASSERT_EQ(m.kind, InterruptionKind::kScheduledChange) << m.reason;
  EXPECT_EQ(m.start_time, absl::FromCivil(absl::CivilSecond(2026, 12, 5, 15, 30, 0), utc));
  EXPECT_EQ(m.end_time, absl::FromCivil(absl::CivilSecond(2026, 12, 5, 18, 0, 0), utc));

  // An unreadable or missing window is absent, not a reason to drop the event.
  std::string bad = kHealth;
  bad.replace(bad.find("Sat, 05 Dec 2026 15:00:00 GMT"), 29, "next Tuesday");
  const std::string end = R"(, "endTime": "Sat, 05 Dec 2026 17:00:00 GMT")";
  bad.replace(bad.find(end), end.size(), "");
  m = ParseInterruptionMessage(bad);
  ASSERT_EQ(m.kind, InterruptionKind::kScheduledChange) << m.reason;
  EXPECT_EQ(m.start_time, absl::InfinitePast());
  EXPECT_EQ(m.end_time, absl::InfinitePast());
}

TEST(InterruptionMessagesTest, HealthEventsOfOtherServicesOrCategoriesAreUnknown) {
  std::string other_service = kHealth;
  other_service.replace(other_service.find("\"service\": \"EC2\""), 16, "\"service\": \"RDS\"");
  InterruptionMessage m = ParseInterruptionMessage(other_service);
  EXPECT_EQ(m.kind, InterruptionKind::kUnknown);
  EXPECT_NE(m.reason.find("RDS"), std::string::npos) << m.reason;
  std::string issue = kHealth;
  issue.replace(issue.find("scheduledChange"), 15, "issue");
  EXPECT_EQ(ParseInterruptionMessage(issue).kind, InterruptionKind::kUnknown);
}

TEST(InterruptionMessagesTest, StateChangeMapsStatesToStoppedOrTerminated) {
  for (const char* s : {"stopping", "stopped"}) {
    InterruptionMessage m = ParseInterruptionMessage(StateChange(s));
    EXPECT_EQ(m.kind, InterruptionKind::kInstanceStopped) << s << ": " << m.reason;
    EXPECT_EQ(m.state, s);
    EXPECT_EQ(m.instance_ids, std::vector<std::string>{"i-0abcd1234ef567890"});
  }
  for (const char* s : {"shutting-down", "terminated"}) {
    InterruptionMessage m = ParseInterruptionMessage(StateChange(s));
    EXPECT_EQ(m.kind, InterruptionKind::kInstanceTerminated) << s << ": " << m.reason;
    EXPECT_EQ(InterruptionKindName(m.kind), "instance_terminated");
  }
  for (const char* s : {"pending", "running"}) {
    InterruptionMessage m = ParseInterruptionMessage(StateChange(s));
    EXPECT_EQ(m.kind, InterruptionKind::kUnknown) << s;
    EXPECT_TRUE(m.instance_ids.empty());
    EXPECT_FALSE(m.reason.empty());
  }
}

TEST(InterruptionMessagesTest, ParsesCapacityReservationInterruption) {
  InterruptionMessage m = ParseInterruptionMessage(kCapacityReservation);
  EXPECT_EQ(m.kind, InterruptionKind::kCapacityReservationInterruption) << m.reason;
  EXPECT_EQ(m.instance_ids, std::vector<std::string>{"i-0ccccccccccccccc1"});
  EXPECT_EQ(m.region, "us-west-2");
  EXPECT_EQ(InterruptionKindName(m.kind), "capacity_reservation_interrupted");
}

TEST(InterruptionMessagesTest, ForeignAndMalformedMessagesAreTypedNotFatal) {
  struct Case {
    std::string body;
    InterruptionKind kind;
  };
  const std::vector<Case> cases = {
      {"", InterruptionKind::kInvalid},
      {"not json", InterruptionKind::kInvalid},
      {"[1,2,3]", InterruptionKind::kInvalid},
      {"\"a string\"", InterruptionKind::kInvalid},
      {"null", InterruptionKind::kInvalid},
      {"{}", InterruptionKind::kUnknown},
      {R"({"hello": "world"})", InterruptionKind::kUnknown},
      // An S3 test event, a foreign EventBridge event, an unsupported version.
      {R"({"Service":"Amazon S3","Event":"s3:TestEvent"})", InterruptionKind::kUnknown},
      {R"({"version":"0","source":"aws.autoscaling","detail-type":"EC2 Instance Launch Successful","detail":{}})",
       InterruptionKind::kUnknown},
      {R"({"version":"1","source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{"instance-id":"i-1"}})",
       InterruptionKind::kUnknown},
      // SNS-wrapped: upstream reads raw EventBridge events only.
      {R"({"Type":"Notification","MessageId":"m","TopicArn":"arn:aws:sns:us-east-1:1:t","Message":"{}"})",
       InterruptionKind::kUnknown},
      // Recognised events with missing or mistyped fields.
      {R"({"version":"0","source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning"})",
       InterruptionKind::kInvalid},
      {R"({"version":"0","source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{}})",
       InterruptionKind::kInvalid},
      {R"({"version":"0","source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{"instance-id":7}})",
       InterruptionKind::kInvalid},
      {R"({"version":"0","source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":"x"})",
       InterruptionKind::kInvalid},
      {R"({"version":"0","source":"aws.ec2","detail-type":"EC2 Instance State-change Notification","detail":{"instance-id":"i-1"}})",
       InterruptionKind::kInvalid},
      {R"({"version":"0","source":"aws.health","detail-type":"AWS Health Event","detail":{"service":"EC2","eventTypeCategory":"scheduledChange"}})",
       InterruptionKind::kInvalid},
      {R"({"version":"0","source":"aws.health","detail-type":"AWS Health Event","detail":{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":3}]}})",
       InterruptionKind::kInvalid},
      {R"({"version":"0","source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","time":"yesterday","detail":{"instance-id":"i-1"}})",
       InterruptionKind::kInvalid},
      {R"({"version":0,"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{"instance-id":"i-1"}})",
       InterruptionKind::kInvalid},
      {R"({"version":"0","source":["aws.ec2"],"detail-type":"x"})", InterruptionKind::kInvalid},
      {R"({"version":"0","source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","resources":"r","detail":{"instance-id":"i-1"}})",
       InterruptionKind::kInvalid},
  };
  for (const Case& c : cases) {
    InterruptionMessage m = ParseInterruptionMessage(c.body);
    EXPECT_EQ(m.kind, c.kind) << c.body << " => " << InterruptionKindName(m.kind) << ": "
                              << m.reason;
    EXPECT_FALSE(m.reason.empty()) << c.body;
    EXPECT_FALSE(m.actionable());
    EXPECT_TRUE(m.instance_ids.empty()) << c.body;
  }
}

// Every kind's invariants: actionable kinds name at least one instance and no reason; the others
// a reason and no instance.
void ExpectWellFormed(const InterruptionMessage& m, const std::string& input) {
  if (m.actionable()) {
    EXPECT_FALSE(m.instance_ids.empty()) << input;
    EXPECT_TRUE(m.reason.empty()) << input;
  } else {
    EXPECT_FALSE(m.reason.empty()) << input;
    EXPECT_TRUE(m.instance_ids.empty()) << input;
  }
  EXPECT_FALSE(InterruptionKindName(m.kind).empty());
}

TEST(InterruptionMessagesTest, FuzzedTruncatedAndMutatedInputsNeverCrash) {
  const std::vector<std::string> seeds = {kSpot, kRebalance, kHealth, StateChange("terminated"),
                                          kCapacityReservation};
  int parsed = 0;
  // Every truncation of every seed.
  for (const std::string& s : seeds) {
    for (size_t n = 0; n < s.size(); ++n) {
      const std::string input = s.substr(0, n);
      InterruptionMessage m = ParseInterruptionMessage(input);
      EXPECT_EQ(m.kind, InterruptionKind::kInvalid) << input;  // a prefix is never whole JSON
      ExpectWellFormed(m, input);
      ++parsed;
    }
  }
  std::mt19937 rng(20261130);
  // Byte mutations of the seeds (flips, deletions, insertions of JSON punctuation).
  const std::string punctuation = "{}[]\":,0-9aetnul\\ \x01\xff";
  for (int i = 0; i < 600; ++i) {
    std::string input = seeds[rng() % seeds.size()];
    const int edits = 1 + rng() % 4;
    for (int e = 0; e < edits && !input.empty(); ++e) {
      const size_t pos = rng() % input.size();
      switch (rng() % 3) {
        case 0:
          input[pos] = static_cast<char>(rng() % 256);
          break;
        case 1:
          input.erase(pos, 1 + rng() % 8);
          break;
        default:
          input.insert(pos, 1, punctuation[rng() % punctuation.size()]);
      }
    }
    ExpectWellFormed(ParseInterruptionMessage(input), input);
    ++parsed;
  }
  // Random bytes, and values of every JSON type swapped into each field.
  for (int i = 0; i < 200; ++i) {
    std::string input(rng() % 64, '\0');
    for (char& c : input) c = static_cast<char>(rng() % 256);
    ExpectWellFormed(ParseInterruptionMessage(input), input);
    ++parsed;
  }
  const std::vector<std::string> values = {"null",       "1",          "-2.5e300", "true",
                                           "[]",         "{}",         "\"\"",     "[\"i-1\"]",
                                           "{\"a\":{}}", "\"\\u0000\""};
  for (const std::string field :
       {"version", "id", "detail-type", "source", "time", "region", "resources", "detail",
        "instance-id", "instance-action", "state", "service", "eventTypeCategory",
        "affectedEntities", "entityValue"}) {
    for (const std::string& s : seeds) {
      const size_t at = s.find("\"" + field + "\"");
      if (at == std::string::npos) continue;
      const size_t colon = s.find(':', at + field.size() + 2);
      // The value ends at the next ',' or '}' at the same depth; swap a simple prefix instead.
      for (const std::string& v : values) {
        std::string input = s.substr(0, colon + 1) + " " + v + "," + "\"x\":" + s.substr(colon + 1);
        ExpectWellFormed(ParseInterruptionMessage(input), input);
        ++parsed;
      }
    }
  }
  EXPECT_GT(parsed, 1000);
}

}  // namespace
}  // namespace dovetail::providers::aws
