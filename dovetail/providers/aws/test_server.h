// An in-process HTTP server on 127.0.0.1 (cpp-httplib) for the unit tests' fault injection:
// throttling, 5xx, IMDS and paginated responses that moto does not produce. Test-only.
#pragma once

#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace dovetail::providers::aws::testing {

class TestServer {
 public:
  TestServer() = default;
  ~TestServer() { Stop(); }

  httplib::Server& server() { return server_; }
  // Binds and starts serving; returns false when the server did not come up.
  bool Start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (!server_.is_running() && absl::Now() < deadline) std::this_thread::yield();
    return server_.is_running();
  }
  void Stop() {
    if (thread_.joinable()) {
      server_.stop();
      thread_.join();
    }
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace dovetail::providers::aws::testing
