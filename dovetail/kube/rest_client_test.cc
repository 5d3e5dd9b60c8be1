#include "dovetail/kube/rest_client.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "dovetail/kube/client.h"
#include "dovetail/kube/errors.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace dovetail::kube {
namespace {

class RestClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Get("/retry429", [this](const httplib::Request&, httplib::Response& res) {
      if (++count_ <= 2) {
        res.status = 429;
        res.set_header("Retry-After", "0");
        res.set_content(R"({"kind":"Status","reason":"TooManyRequests"})", "application/json");
        return;
      }
      res.set_content(R"({"ok":true})", "application/json");
    });
    server_.Get("/always503", [this](const httplib::Request&, httplib::Response& res) {
      ++count_;
      res.status = 503;
    });
    server_.Post("/always503", [this](const httplib::Request&, httplib::Response& res) {
      ++count_;
      res.status = 503;
    });
    server_.Get("/auth", [this](const httplib::Request& req, httplib::Response& res) {
      ++count_;
      res.set_content(req.get_header_value("Authorization"), "text/plain");
    });
    server_.Get("/conflict", [](const httplib::Request&, httplib::Response& res) {
      res.status = 409;
      res.set_content(R"({"kind":"Status","reason":"Conflict","message":"modified"})",
                      "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the accept loop runs would be lost: wait until it runs.
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (!server_.is_running() && absl::Now() < deadline) std::this_thread::yield();
    ASSERT_TRUE(server_.is_running());
  }
  void TearDown() override {
    server_.stop();
    thread_.join();
  }

  std::unique_ptr<RestClient> MakeClient(RestConfig config = {}) {
    config.server = "http://127.0.0.1:" + std::to_string(port_);
    config.qps = 0;
    auto client = RestClient::Create(
        config, {.max_retries = 3,
                 .backoff = {.initial = absl::Milliseconds(1), .max = absl::Milliseconds(2)}});
    EXPECT_TRUE(client.ok());
    return std::move(*client);
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> count_{0};
};

TEST_F(RestClientTest, RetriesTooManyRequestsHonouringRetryAfter) {
  auto client = MakeClient();
  auto response = client->Do({.path = "/retry429"});
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->body, R"({"ok":true})");
  EXPECT_EQ(count_.load(), 3);
  EXPECT_EQ(client->stats().retries, 2);
}

TEST_F(RestClientTest, RetriesServerErrorsOnGetButNotOnPostWithoutRetryAfter) {
  auto client = MakeClient();
  EXPECT_EQ(client->Do({.path = "/always503"}).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(count_.load(), 4);  // 1 + max_retries
  count_ = 0;
  EXPECT_EQ(client->Do({.method = "POST", .path = "/always503", .body = "{}"}).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(count_.load(), 1);
}

TEST_F(RestClientTest, ReturnsConflictsToTheCallerUnretried) {
  auto client = MakeClient();
  absl::Status status = client->Do({.path = "/conflict"}).status();
  EXPECT_TRUE(IsConflict(status)) << status;
}

TEST_F(RestClientTest, SendsTheBearerTokenFromTheExecPlugin) {
  RestConfig config;
  config.exec =
      ExecConfig{.command = "/bin/echo",
                 .args = {R"({"kind":"ExecCredential","status":{"token":"plugin-token"}})"}};
  auto client = MakeClient(config);
  auto response = client->Do({.path = "/auth"});
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->body, "Bearer plugin-token");
}

TEST_F(RestClientTest, ConnectionRefusedIsUnavailable) {
  RestConfig config;
  config.server = "http://127.0.0.1:1";
  auto client =
      RestClient::Create(config, {.max_retries = 1, .backoff = {.initial = absl::Milliseconds(1)}});
  ASSERT_TRUE(client.ok());
  EXPECT_EQ((*client)->Do({.path = "/"}).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(RestClientTest, ClosedWriteGateBlocksWritesButNotReads) {
  auto rest = MakeClient();
  WriteGate gate;
  gate.Close();
  Client client(*rest, &gate);
  EXPECT_EQ(client.Create(resources::kConfigMaps, "ns", "{}").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(count_.load(), 0);
  FakeClock clock;
  WriteGate timed(&clock);
  timed.OpenUntil(clock.Now() + absl::Seconds(1));
  EXPECT_TRUE(timed.is_open());
  clock.Advance(absl::Seconds(1));
  EXPECT_FALSE(timed.is_open());
}

}  // namespace
}  // namespace dovetail::kube
