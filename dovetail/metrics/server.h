// A small HTTP endpoint for /metrics, /healthz and /readyz (cpp-httplib), run on its own threads.
// The operator serves metrics on METRICS_PORT (8080) and the probes on HEALTH_PROBE_PORT (8081),
// as upstream does, each on the address it is given (options.h). Thread-safe.
//
// Both ports face the cluster network, so every request is held to EndpointLimits before a
// handler runs, in this order: total header bytes over max_header_bytes -> 431; a method other
// than GET -> 405 (with `Allow: GET`); a body announced by Transfer-Encoding, or by a
// Content-Length over max_payload_bytes -> 413 (a bad Content-Length -> 400). cpp-httplib itself
// answers 414 to a request line over 8192 bytes and 400 to a header line over 8192 bytes. A
// connection is closed when a read waits longer than read_timeout, or when idle between
// requests for as long (in whole seconds). The socket is bound without SO_REUSEPORT, so a port
// in use is an error rather than shared with another process.
//
// What these limits cannot do: Debian ships cpp-httplib 0.11.4 compiled (libcpp-httplib), so its
// CPPHTTPLIB_* limits are fixed. The library keeps no count of header lines, so the header total
// is checked after it has read them all; and read_timeout bounds each wait for bytes, not a whole
// request, so a client that trickles bytes keeps one of the library's worker threads (at least 8)
// busy until it stops.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace httplib {
class Server;
}

namespace dovetail::metrics {

struct Response {
  int status = 200;
  std::string body;
  std::string content_type = "text/plain; charset=utf-8";
};

struct EndpointLimits {
  // A connection idle this long while a request is read is closed (also the write timeout).
  absl::Duration read_timeout = absl::Seconds(5);
  // GETs carry no body; a client announcing more than this is refused.
  size_t max_payload_bytes = size_t{4} * 1024;
  // Every header line's name, value and separators, summed.
  size_t max_header_bytes = size_t{16} * 1024;
};

class HttpEndpoint {
 public:
  explicit HttpEndpoint(EndpointLimits limits = {});
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  // Register before Start(). Served for GET only.
  void Handle(const std::string& path, std::function<Response()> handler);
  // Binds `host:port` (host: an IPv4 or IPv6 address or a name, "0.0.0.0" for every IPv4
  // interface; port 0: any free port) and serves on a thread. Returns the bound port.
  // Errors: Unavailable when the address cannot be bound.
  absl::StatusOr<int> Start(const std::string& host, int port);
  void Stop();

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace dovetail::metrics
