// How a request reaches an API server whose kubeconfig cluster entry sets `tls-server-name`: the
// connection goes to the host and port of `server`, while TLS sends the name as SNI and verifies
// the server's certificate against it (client-go puts it in tls.Config.ServerName). libcurl
// verifies against the URL's host, so the URL is rewritten to name `tls-server-name` and
// CURLOPT_CONNECT_TO sends the connection to the real address; the Host header keeps the
// original authority, as client-go sends it.
// Used by RestClient (rest_client.cc). Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace dovetail::kube {

struct TlsServerNameRoute {
  std::string url_base;     // `server` with its host replaced by the name: what libcurl fetches
  std::string connect_to;   // the CURLOPT_CONNECT_TO entry "NAME:PORT:HOST:PORT"
  std::string host_header;  // "Host: HOST[:PORT]", the authority of `server`
};

// The route for `server` (https://HOST[:PORT][/PREFIX], HOST a name, an IPv4 address or a
// bracketed IPv6 address; PORT 443 when absent) and `tls_server_name`. nullopt when there is
// nothing to do: an empty name, or a plain-http server (no TLS). Errors: InvalidArgument for a
// server URL without a host or with a bad port, and for a name that is not a DNS name or an
// IPv4 address (it must not hold ':', '/', '[', ']' or whitespace).
absl::StatusOr<std::optional<TlsServerNameRoute>> RouteForTlsServerName(
    std::string_view server, std::string_view tls_server_name);

}  // namespace dovetail::kube
