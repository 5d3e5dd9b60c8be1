#include "dovetail/providers/aws/aws_client.h"

#include <atomic>
#include <functional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/providers/aws/ec2_client.h"
#include "dovetail/providers/aws/metrics.h"
#include "dovetail/providers/aws/served_client_test.h"
#include "gtest/gtest.h"

namespace dovetail::providers::aws {
namespace {

constexpr char kThrottleBody[] =
    "<?xml version=\"1.0\"?><Response><Errors><Error><Code>RequestLimitExceeded</Code>"
    "<Message>Request limit exceeded.</Message></Error></Errors><RequestID>r-1</RequestID>"
    "</Response>";
constexpr char kAzBody[] =
    "<DescribeAvailabilityZonesResponse><availabilityZoneInfo><item><zoneName>us-east-1a"
    "</zoneName><zoneId>use1-az1</zoneId><zoneState>available</zoneState><regionName>us-east-1"
    "</regionName></item></availabilityZoneInfo></DescribeAvailabilityZonesResponse>";

class AwsClientTest : public testing::ServedClientTest {
 protected:
  void SetUp() override {
    server_.server().Post("/", [this](const httplib::Request& req, httplib::Response& res) {
      {
        absl::MutexLock lock(&mu_);
        authorizations_.push_back(req.get_header_value("Authorization"));
        bodies_.push_back(req.body);
      }
      const int n = ++requests_;
      clock_.Advance(response_time_);
      if (n <= throttle_first_) {
        res.status = 503;  // EC2 throttles with 503 RequestLimitExceeded
        res.set_content(kThrottleBody, "text/xml");
      } else if (n <= throttle_first_ + fail_5xx_) {
        res.status = 500;
        res.set_content(
            "<Response><Errors><Error><Code>InternalError</Code></Error></Errors></Response>",
            "text/xml");
      } else if (invalid_) {
        res.status = 400;
        res.set_content(
            "<Response><Errors><Error><Code>InvalidSubnetID.NotFound</Code><Message>The subnet "
            "ID 'subnet-1' does not exist</Message></Error></Errors><RequestID>r-2</RequestID>"
            "</Response>",
            "text/xml");
      } else {
        res.set_content(kAzBody, "text/xml");
      }
    });
    ASSERT_TRUE(server_.Start());
  }

  AwsClient MakeClient(int max_attempts = 5, RateLimit rate = {},
                       std::function<absl::Status()> fence = nullptr) {
    return AwsClient({.transport = transport_,
                      .credentials = &credentials_,
                      .clock = clock_,
                      .sleep =
                          [this](absl::Duration d) {
                            absl::MutexLock lock(&mu_);
                            sleeps_.push_back(d);
                            clock_.Advance(d);
                            if (on_sleep_) on_sleep_();
                          },
                      .write_fence = std::move(fence)},
                     {.service = kEc2,
                      .region = "us-east-1",
                      .endpoint = server_.url(),
                      .max_attempts = max_attempts,
                      .default_rate = rate,
                      .jitter_seed = 42});
  }

  std::atomic<int> requests_{0};
  absl::Duration response_time_;  // the fake clock advances this much per request
  int throttle_first_ = 0;
  int fail_5xx_ = 0;
  bool invalid_ = false;
  absl::Mutex mu_;
  std::vector<std::string> authorizations_;
  std::vector<std::string> bodies_;
  std::vector<absl::Duration> sleeps_;
  std::function<void()> on_sleep_;  // called after each backoff sleep
};

TEST_F(AwsClientTest, RetriesThrottlingWithJitteredExponentialBackoffThenSucceeds) {
  throttle_first_ = 3;
  AwsClient client = MakeClient();
  Ec2Client ec2(client);
  auto zones = ec2.DescribeAvailabilityZones();
  ASSERT_TRUE(zones.ok()) << zones.status();
  ASSERT_EQ(zones->size(), 1u);
  EXPECT_EQ((*zones)[0].zone_id, "use1-az1");
  EXPECT_EQ(requests_.load(), 4);
  EXPECT_EQ(client.Stats("DescribeAvailabilityZones"),
            (ApiStats{.calls = 1, .attempts = 4, .throttles = 3, .retries = 3, .errors = 0}));
  absl::MutexLock lock(&mu_);
  ASSERT_EQ(sleeps_.size(), 3u);
  // Full jitter under a cap that doubles: 0.5 s, 1 s, 2 s for throttles.
  for (size_t i = 0; i < sleeps_.size(); ++i) {
    EXPECT_GE(sleeps_[i], absl::ZeroDuration());
    EXPECT_LE(sleeps_[i], absl::Milliseconds(500) * (1 << i));
  }
  EXPECT_FALSE(sleeps_[0] == sleeps_[1] && sleeps_[1] == sleeps_[2]) << "no jitter";
  // Every attempt is signed afresh.
  for (const std::string& auth : authorizations_) {
    EXPECT_TRUE(absl::StartsWith(auth, "AWS4-HMAC-SHA256 Credential=AKID/")) << auth;
    EXPECT_TRUE(absl::StrContains(auth, "/us-east-1/ec2/aws4_request")) << auth;
  }
  EXPECT_TRUE(absl::StartsWith(bodies_[0], "Action=DescribeAvailabilityZones&Version=2016-11-15"));
}

TEST_F(AwsClientTest, TheWriteFenceStopsWritesAndTheirRetriesButNotReads) {
  EXPECT_TRUE(IsWriteApi("CreateFleet"));
  EXPECT_TRUE(IsWriteApi("TerminateInstances"));
  EXPECT_TRUE(IsWriteApi("DeleteMessage"));
  EXPECT_TRUE(IsWriteApi("AddRoleToInstanceProfile"));
  EXPECT_FALSE(IsWriteApi("DescribeInstances"));
  EXPECT_FALSE(IsWriteApi("GetParameter"));
  EXPECT_FALSE(IsWriteApi("ListInstanceProfiles"));
  EXPECT_FALSE(IsWriteApi("ReceiveMessage"));
  EXPECT_FALSE(IsWriteApi("AssumeRoleWithWebIdentity"));

  std::atomic<bool> leading{true};
  AwsClient client = MakeClient(5, {}, [&]() -> absl::Status {
    if (leading.load()) return absl::OkStatus();
    return absl::FailedPreconditionError("writes are disabled: not the leader");
  });
  Ec2Client ec2(client);
  // Throttled; the lease is lost while the write waits for its retry: no retry is sent.
  throttle_first_ = 100;
  {
    absl::MutexLock lock(&mu_);
    on_sleep_ = [&] { leading = false; };
  }
  auto terminated = ec2.Query("TerminateInstances", {{"InstanceId.1", "i-1"}});
  ASSERT_FALSE(terminated.ok());
  EXPECT_EQ(terminated.status().code(), absl::StatusCode::kFailedPrecondition)
      << terminated.status();
  EXPECT_EQ(requests_.load(), 1);
  // Not leading: a write sends nothing at all, a read goes out.
  throttle_first_ = 0;
  EXPECT_EQ(ec2.Query("TerminateInstances", {{"InstanceId.1", "i-1"}}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(requests_.load(), 1);
  EXPECT_TRUE(ec2.DescribeAvailabilityZones().ok());
  EXPECT_EQ(requests_.load(), 2);
}

TEST_F(AwsClientTest, GivesUpAfterMaxAttemptsKeepingTheThrottlingCode) {
  throttle_first_ = 100;
  AwsClient client = MakeClient(/*max_attempts=*/3);
  auto zones = Ec2Client(client).DescribeAvailabilityZones();
  ASSERT_FALSE(zones.ok());
  EXPECT_EQ(zones.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(AwsErrorCode(zones.status()), "RequestLimitExceeded");
  EXPECT_TRUE(absl::StrContains(zones.status().message(), "r-1")) << zones.status();
  EXPECT_EQ(requests_.load(), 3);
  EXPECT_EQ(client.Stats("DescribeAvailabilityZones"),
            (ApiStats{.calls = 1, .attempts = 3, .throttles = 3, .retries = 2, .errors = 1}));
}

// The per-API counters in the Prometheus exposition: the totals from before the export, then
// every later change; two clients of one registry share the counters.
TEST_F(AwsClientTest, ExportsTheApiCountersAsPrometheusMetrics) {
  throttle_first_ = 2;
  AwsClient client = MakeClient();
  ASSERT_TRUE(Ec2Client(client).DescribeAvailabilityZones().ok());  // 1 call, 3 attempts
  metrics::Registry registry;
  ExportAwsApiMetrics(client, registry);
  invalid_ = true;
  ASSERT_FALSE(Ec2Client(client).DescribeAvailabilityZones().ok());  // 1 call, 1 error
  AwsClient other = MakeClient();
  ExportAwsApiMetrics(other, registry);
  ASSERT_FALSE(Ec2Client(other).DescribeSubnets().ok());

  const std::string text = registry.Expose();
  const std::string az = R"({service="EC2",api="DescribeAvailabilityZones"})";
  for (const std::string& line : {
           std::string("# TYPE dovetail_aws_api_calls_total counter"),
           "dovetail_aws_api_calls_total" + az + " 2",
           "dovetail_aws_api_attempts_total" + az + " 4",
           "dovetail_aws_api_throttles_total" + az + " 2",
           "dovetail_aws_api_retries_total" + az + " 2",
           "dovetail_aws_api_errors_total" + az + " 1",
           std::string(R"(dovetail_aws_api_calls_total{service="EC2",api="DescribeSubnets"} 1)"),
           std::string(R"(dovetail_aws_api_errors_total{service="EC2",api="DescribeSubnets"} 1)"),
       }) {
    EXPECT_TRUE(absl::StrContains(text, line)) << line << "\n" << text;
  }
  // Detached: no more changes.
  client.SetStatsObserver(nullptr);
  (void)Ec2Client(client).DescribeAvailabilityZones();
  EXPECT_TRUE(absl::StrContains(registry.Expose(), "dovetail_aws_api_calls_total" + az + " 2"));
}

// upstream's aws_sdk_go_request_* families: one sample per call labelled with the status of its
// last response (attempts: their own status), durations on the client's clock, "0" when nothing
// answered.
TEST_F(AwsClientTest, ExportsUpstreamsSdkRequestMetrics) {
  throttle_first_ = 2;
  response_time_ = absl::Milliseconds(30);
  AwsClient client = MakeClient();
  metrics::Registry registry;
  ExportAwsApiMetrics(client, registry);
  ASSERT_TRUE(Ec2Client(client).DescribeAvailabilityZones().ok());  // 503, 503, 200
  absl::Duration slept;
  {
    absl::MutexLock lock(&mu_);
    for (absl::Duration d : sleeps_) slept += d;
  }
  invalid_ = true;
  ASSERT_FALSE(Ec2Client(client).DescribeSubnets({}, {"subnet-1"}).ok());  // 400, final

  const std::string text = registry.Expose();
  const std::string ok = R"(service="EC2",action="DescribeAvailabilityZones",code="200")";
  const std::string throttled = R"(service="EC2",action="DescribeAvailabilityZones",code="503")";
  const std::string bad = R"(service="EC2",action="DescribeSubnets",code="400")";
  for (const std::string& line : {
           std::string("# TYPE aws_sdk_go_request_total counter"),
           std::string("# TYPE aws_sdk_go_request_duration_seconds histogram"),
           "aws_sdk_go_request_total{" + ok + "} 1",
           "aws_sdk_go_request_attempt_total{" + throttled + "} 2",
           "aws_sdk_go_request_attempt_total{" + ok + "} 1",
           "aws_sdk_go_request_retry_count_bucket{" + ok + R"(,le="1"} 0)",
           "aws_sdk_go_request_retry_count_bucket{" + ok + R"(,le="2"} 1)",
           "aws_sdk_go_request_retry_count_sum{" + ok + "} 2",
           // Every attempt is labelled with the call's status, as upstream's middleware does.
           "aws_sdk_go_request_attempt_duration_seconds_count{" + ok + "} 3",
           "aws_sdk_go_request_attempt_duration_seconds_bucket{" + ok + R"(,le="0.03375"} 3)",
           "aws_sdk_go_request_attempt_duration_seconds_bucket{" + ok + R"(,le="0.0225"} 0)",
           "aws_sdk_go_request_duration_seconds_count{" + ok + "} 1",
           "aws_sdk_go_request_total{" + bad + "} 1",
           "aws_sdk_go_request_attempt_total{" + bad + "} 1",
           "aws_sdk_go_request_retry_count_bucket{" + bad + R"(,le="0"} 1)",
       }) {
    EXPECT_TRUE(absl::StrContains(text, line)) << line << "\n" << text;
  }
  EXPECT_FALSE(absl::StrContains(text, "aws_sdk_go_request_total{" + throttled));
  // upstream's 20 bounds, the last one 10 ms x 1.5^19.
  EXPECT_TRUE(absl::StrContains(
      text, "aws_sdk_go_request_duration_seconds_bucket{" + ok + R"(,le="22.168378200531013"} 1)"))
      << text;
  // The call's duration: three 30 ms responses plus the two backoff sleeps (a name registered
  // again is the same histogram).
  metrics::Histogram& duration =
      registry.NewHistogram(kAwsSdkDurationMetric, "", {"service", "action", "code"}, {});
  EXPECT_DOUBLE_EQ(duration.Sum({"EC2", "DescribeAvailabilityZones", "200"}),
                   absl::ToDoubleSeconds(absl::Milliseconds(90) + slept));

  // Nothing answered: code "0", for the call and each attempt.
  server_.Stop();
  AwsClient down = MakeClient(/*max_attempts=*/2);
  ExportAwsApiMetrics(down, registry);
  ASSERT_FALSE(Ec2Client(down).DescribeAvailabilityZones().ok());
  const std::string none = R"(service="EC2",action="DescribeAvailabilityZones",code="0")";
  const std::string after = registry.Expose();
  EXPECT_TRUE(absl::StrContains(after, "aws_sdk_go_request_total{" + none + "} 1")) << after;
  EXPECT_TRUE(absl::StrContains(after, "aws_sdk_go_request_attempt_total{" + none + "} 2"));
  EXPECT_TRUE(absl::StrContains(after, "aws_sdk_go_request_retry_count_sum{" + none + "} 1"));
}

TEST_F(AwsClientTest, Retries5xxWithoutCountingThrottles) {
  fail_5xx_ = 2;
  AwsClient client = MakeClient();
  ASSERT_TRUE(Ec2Client(client).DescribeAvailabilityZones().ok());
  EXPECT_EQ(client.Stats("DescribeAvailabilityZones"),
            (ApiStats{.calls = 1, .attempts = 3, .throttles = 0, .retries = 2, .errors = 0}));
  absl::MutexLock lock(&mu_);
  for (absl::Duration d : sleeps_) EXPECT_LE(d, absl::Milliseconds(100));  // base 50 ms
}

TEST_F(AwsClientTest, ClientErrorsAreFinalAndMapped) {
  invalid_ = true;
  AwsClient client = MakeClient();
  auto subnets = Ec2Client(client).DescribeSubnets({}, {"subnet-1"});
  ASSERT_FALSE(subnets.ok());
  EXPECT_EQ(subnets.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(AwsErrorCode(subnets.status()), "InvalidSubnetID.NotFound");
  EXPECT_TRUE(absl::StrContains(subnets.status().message(), "does not exist"));
  EXPECT_EQ(requests_.load(), 1);
}

TEST_F(AwsClientTest, TokenBucketSpacesCallsPerApi) {
  AwsClient client = MakeClient(5, RateLimit{.qps = 2, .burst = 2});
  Ec2Client ec2(client);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(ec2.DescribeAvailabilityZones().ok());
  {
    absl::MutexLock lock(&mu_);
    // Burst of 2, then one token every 0.5 s.
    ASSERT_EQ(sleeps_.size(), 2u);
    EXPECT_EQ(sleeps_[0], absl::Milliseconds(500));
    EXPECT_EQ(sleeps_[1], absl::Milliseconds(500));
  }
  // Another API has a bucket of its own.
  ASSERT_TRUE(ec2.Query("DescribeRegions", {}).ok());
  absl::MutexLock lock(&mu_);
  EXPECT_EQ(sleeps_.size(), 2u);
}

TEST_F(AwsClientTest, TransportFailuresAreRetriedThenUnavailable) {
  server_.Stop();
  AwsClient client = MakeClient(/*max_attempts=*/2);
  auto zones = Ec2Client(client).DescribeAvailabilityZones();
  ASSERT_FALSE(zones.ok());
  EXPECT_EQ(zones.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(client.Stats("DescribeAvailabilityZones").attempts, 2);
}

TEST_F(AwsClientTest, MissingCredentialsFailBeforeSending) {
  EnvironmentCredentialsProvider none(MapEnv({}));
  AwsClient client({.transport = transport_, .credentials = &none, .clock = clock_},
                   {.service = kEc2, .region = "us-east-1", .endpoint = server_.url()});
  auto zones = Ec2Client(client).DescribeAvailabilityZones();
  EXPECT_EQ(zones.status().code(), absl::StatusCode::kUnauthenticated) << zones.status();
  EXPECT_EQ(requests_.load(), 0);
  EXPECT_EQ(client.Stats("DescribeAvailabilityZones").errors, 1);
}

TEST(TokenBucketTest, RefillsWithTheClockUpToTheBurst) {
  FakeClock clock;
  TokenBucket bucket({.qps = 10, .burst = 3}, clock);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bucket.Reserve(), absl::ZeroDuration());
  EXPECT_EQ(bucket.Reserve(), absl::Milliseconds(100));
  clock.Advance(absl::Seconds(10));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bucket.Reserve(), absl::ZeroDuration());
  EXPECT_GT(bucket.Reserve(), absl::ZeroDuration());
}

TEST(ErrorsTest, ParsesQueryJsonAndEc2Errors) {
  HttpResponse sts{.status = 403,
                   .body =
                       "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>"
                       "<Message>no</Message></Error><RequestId>abc</RequestId></ErrorResponse>"};
  AwsErrorDetail d = ParseXmlError(sts);
  EXPECT_EQ(d.code, "AccessDenied");
  EXPECT_EQ(d.request_id, "abc");
  absl::Status s = AwsErrorStatus("sts:AssumeRoleWithWebIdentity", 403, d);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);

  HttpResponse ssm{.status = 400,
                   .body = R"({"__type":"com.amazonaws.ssm#ParameterNotFound","message":"gone"})"};
  d = ParseJsonError(ssm);
  EXPECT_EQ(d.code, "ParameterNotFound");
  EXPECT_EQ(d.message, "gone");
  EXPECT_EQ(AwsErrorStatus("ssm:GetParameter", 400, d).code(), absl::StatusCode::kNotFound);

  EXPECT_EQ(AwsErrorStatus("ec2:CreateFleet", 400, {.code = "InsufficientInstanceCapacity"}).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(AwsErrorStatus("ec2:X", 400, {.code = "InvalidParameterValue"}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AwsErrorCode(absl::NotFoundError("plain")), "");
}

}  // namespace
}  // namespace dovetail::providers::aws
