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
    server_.Get("/api/v1/namespaces/default/pods/p",
                [](const httplib::Request&, httplib::Response& res) {
                  res.set_content(R"({"kind":"Pod"})", "application/json");
                });
    server_.Post("/apis/karpenter.sh/v1/nodeclaims",
                 [](const httplib::Request&, httplib::Response& res) {
                   res.status = 201;
                   res.set_content(R"({"kind":"NodeClaim"})", "application/json");
                 });
    // A write answered 429 with Retry-After; the first answer also closes `storm_gate_` (the
    // leader loses its lease while its write waits to be retried).
    server_.Post("/api/v1/namespaces/storm/configmaps", [this](const httplib::Request&,
                                                               httplib::Response& res) {
      ++count_;
      if (WriteGate* gate = storm_gate_.load(); gate != nullptr) gate->Close();
      res.status = 429;
      res.set_header("Retry-After", "0");
      res.set_content(R"({"kind":"Status","reason":"TooManyRequests"})", "application/json");
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

  std::unique_ptr<RestClient> MakeClient(RestConfig config = {},
                                         metrics::Registry* metrics = nullptr) {
    config.server = "http://127.0.0.1:" + std::to_string(port_);
    config.qps = 0;
    auto client = RestClient::Create(
        config, {.max_retries = 3,
                 .backoff = {.initial = absl::Milliseconds(1), .max = absl::Milliseconds(2)},
                 .metrics = metrics});
    EXPECT_TRUE(client.ok());
    return std::move(*client);
  }

  httplib::Server server_;
  std::atomic<WriteGate*> storm_gate_{nullptr};
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

TEST_F(RestClientTest, NoRetryOfAWriteGoesOutOnceTheGateCloses) {
  auto rest = MakeClient();
  WriteGate gate;
  Client client(*rest, &gate);
  // Open: the 429 is retried until max_retries.
  EXPECT_EQ(client.Create(resources::kConfigMaps, "storm", "{}").status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(count_.load(), 4);
  // Closed by the first answer: no retry is sent.
  count_ = 0;
  storm_gate_ = &gate;
  EXPECT_EQ(client.Create(resources::kConfigMaps, "storm", "{}").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(count_.load(), 1);
  storm_gate_ = nullptr;
}

TEST_F(RestClientTest, CountsEveryAttemptByCodeMethodAndHost) {
  metrics::Registry r;
  auto client = MakeClient({}, &r);
  ASSERT_TRUE(client->Do({.path = "/retry429"}).ok());  // two 429s, then 200
  EXPECT_FALSE(client->Do({.method = "POST", .path = "/always503"}).ok());
  const std::string host = "127.0.0.1:" + std::to_string(port_);
  metrics::Counter& rest =
      r.NewCounter("rest_client_requests_total", "", {"code", "method", "host"});
  metrics::Counter& go = r.NewCounter("client_go_request_total", "", {"code", "method"});
  EXPECT_EQ(rest.Value({"429", "GET", host}), 2);
  EXPECT_EQ(rest.Value({"200", "GET", host}), 1);
  EXPECT_EQ(rest.Value({"503", "POST", host}), 1);
  EXPECT_EQ(go.Value({"429", "GET"}), 2);
  EXPECT_EQ(go.Value({"200", "GET"}), 1);
  // No response at all: "<error>".
  RestConfig refused;
  refused.server = "http://127.0.0.1:1";
  auto dead = RestClient::Create(
      refused, {.max_retries = 1, .backoff = {.initial = absl::Milliseconds(1)}, .metrics = &r});
  ASSERT_TRUE(dead.ok());
  EXPECT_FALSE((*dead)->Do({.path = "/"}).ok());
  EXPECT_EQ(rest.Value({"<error>", "GET", "127.0.0.1:1"}), 2);
  EXPECT_EQ(go.Value({"<error>", "GET"}), 2);
}

TEST_F(RestClientTest, ObservesRequestLatencyByResource) {
  metrics::Registry r;
  auto client = MakeClient({}, &r);
  ASSERT_TRUE(client->Do({.path = "/api/v1/namespaces/default/pods/p"}).ok());
  ASSERT_TRUE(client->Do({.method = "POST", .path = "/apis/karpenter.sh/v1/nodeclaims"}).ok());
  ASSERT_TRUE(client->Do({.path = "/retry429"}).ok());  // not an API resource: not observed
  metrics::Histogram& latency =
      r.NewHistogram("client_go_request_duration_seconds", "",
                     {"verb", "group", "version", "kind", "subresource"}, {});
  EXPECT_EQ(latency.Count({"GET", "", "v1", "pods", ""}), 1u);
  EXPECT_EQ(latency.Count({"CREATE", "karpenter.sh", "v1", "nodeclaims", ""}), 1u);
  const std::string text = r.Expose();
  EXPECT_EQ(text.find("kind=\"retry429\""), std::string::npos);
  // operatorpkg's bounds: 0.001 * 1.5^i, bit for bit (test/testdata/upstream-metrics.json).
  EXPECT_NE(text.find("le=\"0.0022500000000000003\""), std::string::npos);
  EXPECT_NE(text.find("le=\"2.2168378200531005\""), std::string::npos);
}

TEST(ClientGoLatencyLabelsTest, ParsesPathsAsOperatorpkgDoes) {
  using L = std::vector<std::string>;
  EXPECT_EQ(ClientGoLatencyLabels("GET", "/api/v1/namespaces/ns/pods/p"),
            (L{"GET", "", "v1", "pods", ""}));
  EXPECT_EQ(ClientGoLatencyLabels("GET", "/api/v1/namespaces/ns/pods?limit=500"),
            (L{"LIST", "", "v1", "pods", ""}));
  EXPECT_EQ(ClientGoLatencyLabels("GET", "/api/v1/pods"), (L{"LIST", "", "v1", "pods", ""}));
  EXPECT_EQ(ClientGoLatencyLabels("POST", "/api/v1/namespaces/ns/pods/p/eviction"),
            (L{"CREATE", "", "v1", "pods", "eviction"}));
  EXPECT_EQ(ClientGoLatencyLabels("PATCH", "/apis/karpenter.sh/v1/nodeclaims/n/status"),
            (L{"PATCH", "karpenter.sh", "v1", "nodeclaims", "status"}));
  EXPECT_EQ(ClientGoLatencyLabels("PUT", "/apis/coordination.k8s.io/v1/namespaces/k/leases/l"),
            (L{"UPDATE", "coordination.k8s.io", "v1", "leases", ""}));
  EXPECT_EQ(ClientGoLatencyLabels("PUT", "/apis/karpenter.sh/v1/nodepools"),
            (L{"CREATE", "karpenter.sh", "v1", "nodepools", ""}));
  EXPECT_EQ(ClientGoLatencyLabels("DELETE", "/api/v1/nodes/n"),
            (L{"DELETE", "", "v1", "nodes", ""}));
  EXPECT_EQ(ClientGoLatencyLabels("GET", "/api/v1/namespaces/default"),
            (L{"GET", "", "v1", "namespaces", ""}));
  EXPECT_EQ(ClientGoLatencyLabels("GET", "/api/v1/namespaces"),
            (L{"LIST", "", "v1", "namespaces", ""}));
  EXPECT_EQ(ClientGoLatencyLabels("GET", "/apis/karpenter.sh/v1"), std::nullopt);  // discovery
  EXPECT_EQ(ClientGoLatencyLabels("GET", "/api/v1"), std::nullopt);
  EXPECT_EQ(ClientGoLatencyLabels("GET", "/version"), std::nullopt);
  EXPECT_EQ(ClientGoLatencyLabels("GET", ""), std::nullopt);
}

}  // namespace
}  // namespace dovetail::kube
