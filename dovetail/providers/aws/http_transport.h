// HttpTransport: sends one AwsRequest over HTTP(S) with libcurl and returns the status, headers
// and body; no retries, no signing (AwsClient adds those). A transport failure (DNS, connect,
// timeout, TLS) is kUnavailable; any HTTP status, 5xx included, is a successful Send.
// Thread-safe: every Send uses its own curl handle.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dovetail/providers/aws/sigv4.h"

namespace dovetail::providers::aws {

struct HttpResponse {
  int status = 0;
  HeaderList headers;  // names as received
  std::string body;

  // The first header named `name` (case-insensitive); empty when absent.
  std::string Header(std::string_view name) const;
};

class HttpTransport {
 public:
  struct Options {
    absl::Duration connect_timeout = absl::Seconds(5);
    absl::Duration timeout = absl::Seconds(30);
    std::string user_agent = "dovetail";
    std::string ca_file;  // empty: the system trust store
  };
  HttpTransport() : HttpTransport(Options{}) {}
  explicit HttpTransport(Options options);

  absl::StatusOr<HttpResponse> Send(const AwsRequest& request) const;

 private:
  Options options_;
};

}  // namespace dovetail::providers::aws
