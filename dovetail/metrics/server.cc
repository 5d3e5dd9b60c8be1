#include "dovetail/metrics/server.h"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dovetail/common/thread_entry.h"
#include "httplib.h"

namespace dovetail::metrics {
namespace {

// The bytes of the header lines as sent: name, ": ", value, CRLF.
size_t HeaderBytes(const httplib::Headers& headers) {
  size_t total = 0;
  for (const auto& [name, value] : headers) total += name.size() + value.size() + 4;
  return total;
}

httplib::Server::HandlerResponse Refuse(httplib::Response& res, int status,
                                        const std::string& why) {
  res.status = status;
  res.set_content(why, "text/plain; charset=utf-8");
  return httplib::Server::HandlerResponse::Handled;
}

}  // namespace

HttpEndpoint::HttpEndpoint(EndpointLimits limits) : server_(std::make_unique<httplib::Server>()) {
  const auto timeout = std::chrono::microseconds(absl::ToInt64Microseconds(limits.read_timeout));
  server_->set_read_timeout(timeout);
  server_->set_write_timeout(timeout);
  // An idle keep-alive connection (also one answered 400 for a request that stalled) is closed
  // after as long, in the whole seconds the library counts.
  server_->set_keep_alive_timeout(
      std::max<time_t>(1, absl::ToInt64Seconds(absl::Ceil(limits.read_timeout, absl::Seconds(1)))));
  server_->set_payload_max_length(limits.max_payload_bytes);
  // The library's default adds SO_REUSEPORT, with which a second process binds the same port and
  // takes a share of its connections; SO_REUSEADDR alone still allows a quick restart.
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  server_->set_pre_routing_handler([limits](const httplib::Request& req, httplib::Response& res) {
    if (HeaderBytes(req.headers) > limits.max_header_bytes) {
      return Refuse(res, 431,
                    absl::StrCat("request headers over ", limits.max_header_bytes, " bytes\n"));
    }
    if (req.method != "GET") {
      res.set_header("Allow", "GET");
      return Refuse(res, 405, "only GET is served\n");
    }
    if (req.has_header("Transfer-Encoding")) {
      return Refuse(res, 413, "a GET carries no body\n");
    }
    if (req.has_header("Content-Length")) {
      uint64_t length = 0;
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(req.get_header_value("Content-Length")),
                            &length)) {
        return Refuse(res, 400, "bad Content-Length\n");
      }
      if (length > limits.max_payload_bytes) {
        return Refuse(res, 413,
                      absl::StrCat("request body over ", limits.max_payload_bytes, " bytes\n"));
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
}

HttpEndpoint::~HttpEndpoint() { Stop(); }

void HttpEndpoint::Handle(const std::string& path, std::function<Response()> handler) {
  server_->Get(path,
               [handler = std::move(handler)](const httplib::Request&, httplib::Response& res) {
                 Response r = handler();
                 res.status = r.status;
                 res.set_content(r.body, r.content_type.c_str());
               });
}

absl::StatusOr<int> HttpEndpoint::Start(const std::string& host, int port) {
  int bound = port;
  if (port == 0) {
    bound = server_->bind_to_any_port(host);
    if (bound < 0) return absl::UnavailableError(absl::StrCat("cannot bind ", host, ":*"));
  } else if (!server_->bind_to_port(host, port)) {
    return absl::UnavailableError(absl::StrCat("cannot bind ", host, ":", port));
  }
  auto exited = std::make_shared<std::atomic<bool>>(false);
  thread_ = StartThread("http-endpoint", [this, exited] {
    server_->listen_after_bind();
    *exited = true;
  });
  // Until the thread listens, server_->stop() is a no-op: a Stop() right after Start() would
  // wait forever for a thread that then serves.
  while (!server_->is_running() && !*exited) absl::SleepFor(absl::Milliseconds(1));
  return bound;
}

void HttpEndpoint::Stop() {
  if (thread_.joinable()) {
    server_->stop();
    thread_.join();
  }
}

}  // namespace dovetail::metrics
