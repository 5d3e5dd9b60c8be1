#include "dovetail/metrics/server.h"

#include "absl/strings/str_cat.h"
#include "httplib.h"

namespace dovetail::metrics {

HttpEndpoint::HttpEndpoint() : server_(std::make_unique<httplib::Server>()) {}

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
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return bound;
}

void HttpEndpoint::Stop() {
  if (thread_.joinable()) {
    server_->stop();
    thread_.join();
  }
}

}  // namespace dovetail::metrics
