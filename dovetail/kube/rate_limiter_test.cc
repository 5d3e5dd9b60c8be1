#include "dovetail/kube/rate_limiter.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "dovetail/common/clock.h"
#include "dovetail/kube/credentials.h"
#include "dovetail/kube/errors.h"
#include "gtest/gtest.h"

namespace dovetail::kube {
namespace {

TEST(TokenBucketTest, AllowsBurstThenSpacesRequestsAtQps) {
  FakeClock clock;
  TokenBucket bucket(/*qps=*/10, /*burst=*/3, clock);
  EXPECT_EQ(bucket.Reserve(), absl::ZeroDuration());
  EXPECT_EQ(bucket.Reserve(), absl::ZeroDuration());
  EXPECT_EQ(bucket.Reserve(), absl::ZeroDuration());
  EXPECT_EQ(bucket.Reserve(), absl::Milliseconds(100));
  EXPECT_EQ(bucket.Reserve(), absl::Milliseconds(200));
  clock.Advance(absl::Seconds(1));  // refills, never above burst
  EXPECT_EQ(bucket.Reserve(), absl::ZeroDuration());
}

TEST(TokenBucketTest, WaitGivesUpWhenTheTokenComesAfterTheDeadline) {
  FakeClock clock;
  TokenBucket bucket(/*qps=*/1, /*burst=*/1, clock);
  ASSERT_TRUE(bucket.Wait(clock.Now()).ok());
  EXPECT_EQ(bucket.Wait(clock.Now() + absl::Milliseconds(10)).code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(TokenBucketTest, NonPositiveQpsNeverThrottles) {
  FakeClock clock;
  TokenBucket bucket(0, 1, clock);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(bucket.Reserve(), absl::ZeroDuration());
}

TEST(BackoffTest, DoublesUpToTheCapAndResets) {
  Backoff backoff(
      {.initial = absl::Milliseconds(10), .max = absl::Milliseconds(35), .factor = 2, .jitter = 0});
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(10));
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(20));
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(35));
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(35));
  backoff.Reset();
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(10));
}

TEST(ErrorsTest, MapsKubernetesStatusToCodesAndPredicates) {
  const absl::Status conflict = StatusFromHttp(
      409, R"({"kind":"Status","reason":"Conflict","message":"the object has been modified"})");
  EXPECT_EQ(conflict.code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(IsConflict(conflict));
  EXPECT_FALSE(kube::IsAlreadyExists(conflict));
  const absl::Status exists =
      StatusFromHttp(409, R"({"kind":"Status","reason":"AlreadyExists","message":"x"})");
  EXPECT_EQ(exists.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(kube::IsAlreadyExists(exists));
  EXPECT_FALSE(IsConflict(exists));
  EXPECT_TRUE(IsGone(StatusFromHttp(410, R"({"kind":"Status","reason":"Expired"})")));
  EXPECT_TRUE(IsTooManyRequests(StatusFromHttp(429, "")));
  EXPECT_TRUE(kube::IsNotFound(StatusFromHttp(404, "not json")));
  EXPECT_EQ(StatusFromHttp(503, "").code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(HttpCodeOf(absl::UnavailableError("x")), 0);
}

// A Status whose fields have other types (a proxy's body, a tampered watch ERROR event) reads as
// one without them instead of throwing (found by test/fuzz/watch_stream_fuzzer: "kind": 5 threw
// out of the informer's thread).
TEST(ErrorsTest, StatusFieldsOfTheWrongTypeReadAsAbsent) {
  absl::Status status;
  ASSERT_NO_THROW(status = StatusFromHttp(410, R"({"kind":5,"reason":"Expired"})"));
  EXPECT_EQ(ReasonOf(status), "");  // not a Status: its reason is not read
  EXPECT_EQ(HttpCodeOf(status), 410);
  ASSERT_NO_THROW(status = StatusFromHttp(409, R"({"kind":"Status","reason":1,"message":[]})"));
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  ASSERT_NO_THROW(status = StatusFromHttp(500, R"([1,2])"));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
}

TEST(ExecCredentialTest, RunsThePluginAndReadsTokenAndExpiry) {
  ExecConfig exec{.command = "/bin/sh",
                  .args = {"-c",
                           "test -n \"$KUBERNETES_EXEC_INFO\" && echo "
                           "'{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
                           "\"ExecCredential\",\"status\":{\"token\":\"'$TOKEN'\","
                           "\"expirationTimestamp\":\"2030-01-01T00:00:00Z\"}}'"},
                  .env = {{"TOKEN", "from-plugin"}}};
  auto result = RunExecCredentialPlugin(exec);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->first.bearer_token, "from-plugin");
  ASSERT_TRUE(result->second.has_value());
  EXPECT_EQ(*result->second,
            absl::FromCivil(absl::CivilSecond(2030, 1, 1, 0, 0, 0), absl::UTCTimeZone()));
}

TEST(ExecCredentialTest, FailingPluginIsAnError) {
  EXPECT_FALSE(RunExecCredentialPlugin({.command = "/bin/false"}).ok());
  EXPECT_EQ(RunExecCredentialPlugin({.command = "/bin/echo", .args = {"{}"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dovetail::kube

namespace dovetail::kube {
namespace {

TEST(CredentialProviderTest, RereadsARotatedTokenFileAfterTheRefreshInterval) {
  const std::string path = "/tmp/dovetail_rotating_token_" + std::to_string(getpid());
  std::ofstream(path) << "first\n";
  FakeClock clock;
  RestConfig config;
  config.token_file = path;
  CredentialProvider provider(config, clock, absl::Minutes(1));
  ASSERT_EQ(provider.Get()->bearer_token, "first");
  std::ofstream(path, std::ios::trunc) << "second";
  EXPECT_EQ(provider.Get()->bearer_token, "first");
  clock.Advance(absl::Minutes(1));
  EXPECT_EQ(provider.Get()->bearer_token, "second");
  std::ofstream(path, std::ios::trunc) << "third";
  provider.Invalidate();  // as after a 401
  EXPECT_EQ(provider.Get()->bearer_token, "third");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace dovetail::kube
