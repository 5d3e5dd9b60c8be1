#include "dovetail/kube/leader_election.h"

#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "dovetail/common/clock.h"
#include "dovetail/metrics/registry.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace dovetail::kube {
namespace {

constexpr char kLeasePath[] = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/lease-a";

// An API server holding at most one Lease (kube-system/lease-a): GET, POST and PUT.
class FakeLeaseServer {
 public:
  FakeLeaseServer() {
    server_.Get(kLeasePath, [this](const httplib::Request&, httplib::Response& res) {
      absl::MutexLock lock(&mu_);
      if (!lease_.has_value()) {
        res.status = 404;
        res.set_content(R"({"kind":"Status","reason":"NotFound","message":"not found"})",
                        "application/json");
        return;
      }
      res.set_content(*lease_, "application/json");
    });
    server_.Post("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
                 [this](const httplib::Request& req, httplib::Response& res) {
                   absl::MutexLock lock(&mu_);
                   lease_ = req.body;
                   res.status = 201;
                   res.set_content(req.body, "application/json");
                 });
    server_.Put(kLeasePath, [this](const httplib::Request& req, httplib::Response& res) {
      absl::MutexLock lock(&mu_);
      lease_ = req.body;
      res.set_content(req.body, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (!server_.is_running() && absl::Now() < deadline) std::this_thread::yield();
  }
  ~FakeLeaseServer() {
    server_.stop();
    thread_.join();
  }
  std::unique_ptr<RestClient> Client() {
    RestConfig config;
    config.server = "http://127.0.0.1:" + std::to_string(port_);
    config.qps = 0;
    return *RestClient::Create(config);
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  absl::Mutex mu_;
  std::optional<std::string> lease_ ABSL_GUARDED_BY(mu_);
};

TEST(LeaderElectionMetricsTest, MasterStatusFollowsLeadership) {
  FakeLeaseServer server;
  metrics::Registry r;
  RealClock clock;
  LeaderElectionConfig config;
  config.lease_name = "lease-a";
  config.identity = "me";
  config.retry_period = absl::Milliseconds(100);
  config.metrics = &r;
  absl::Mutex mu;
  bool started = false;
  LeaderCallbacks callbacks;
  callbacks.on_started_leading = [&] {
    absl::MutexLock lock(&mu);
    started = true;
  };
  metrics::Gauge& status = r.NewGauge("leader_election_master_status", "", {"name"});
  LeaderElector elector(server.Client(), config, clock, nullptr, std::move(callbacks));
  EXPECT_EQ(
      r.Expose().find("leader_election_master_status{name=\"lease-a\"} 0\n") != std::string::npos,
      true);
  elector.Start();
  {
    absl::MutexLock lock(&mu);
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&started), absl::Seconds(30)));
  }
  EXPECT_EQ(status.Value({"lease-a"}), 1);
  elector.Stop();
  EXPECT_EQ(status.Value({"lease-a"}), 0);
}

TEST(LeaderElectionStatusTest, ReportsLeadingAndTheLastRenewalOnTheElectorsClock) {
  FakeLeaseServer server;
  FakeClock clock(absl::FromUnixSeconds(1'000'000));
  LeaderElectionConfig config;
  config.lease_name = "lease-a";
  config.identity = "me";
  config.lease_duration = absl::Seconds(30);
  config.renew_deadline = absl::Seconds(20);
  config.retry_period = absl::Milliseconds(100);
  absl::Mutex mu;
  bool started = false;
  LeaderCallbacks callbacks;
  callbacks.on_started_leading = [&] {
    absl::MutexLock lock(&mu);
    started = true;
  };
  LeaderElector elector(server.Client(), config, clock, nullptr, std::move(callbacks));
  LeaderStatus before = elector.Status();
  EXPECT_FALSE(before.leading);
  EXPECT_EQ(before.last_renewal, absl::InfinitePast());
  EXPECT_EQ(before.lease_duration, absl::Seconds(30));
  elector.Start();
  {
    absl::MutexLock lock(&mu);
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&started), absl::Seconds(30)));
  }
  LeaderStatus leading = elector.Status();
  EXPECT_TRUE(leading.leading);
  EXPECT_EQ(leading.last_renewal, absl::FromUnixSeconds(1'000'000));  // the clock never moved
  elector.Stop();
  EXPECT_FALSE(elector.Status().leading);
}

}  // namespace
}  // namespace dovetail::kube
