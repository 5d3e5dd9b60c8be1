// A small HTTP endpoint for /metrics, /healthz and /readyz (cpp-httplib), run on its own thread.
// The operator serves metrics on METRICS_PORT (8080) and the probes on HEALTH_PROBE_PORT (8081),
// as upstream does. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}

namespace dovetail::metrics {

struct Response {
  int status = 200;
  std::string body;
  std::string content_type = "text/plain; charset=utf-8";
};

class HttpEndpoint {
 public:
  HttpEndpoint();
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  // Register before Start().
  void Handle(const std::string& path, std::function<Response()> handler);
  // Binds `host:port` (port 0: any free port) and serves on a thread. Returns the bound port.
  // Errors: Unavailable when the port cannot be bound.
  absl::StatusOr<int> Start(const std::string& host, int port);
  void Stop();

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace dovetail::metrics
