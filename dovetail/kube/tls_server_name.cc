#include "dovetail/kube/tls_server_name.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::kube {

absl::StatusOr<std::optional<TlsServerNameRoute>> RouteForTlsServerName(
    std::string_view server, std::string_view tls_server_name) {
  if (tls_server_name.empty()) return std::nullopt;
  constexpr std::string_view kHttps = "https://";
  if (server.size() < kHttps.size() ||
      absl::AsciiStrToLower(AsAbsl(server.substr(0, kHttps.size()))) != kHttps) {
    return std::nullopt;
  }
  for (const char c : tls_server_name) {
    if (c == ':' || c == '/' || c == '[' || c == ']' || absl::ascii_isspace(c)) {
      return absl::InvalidArgumentError(
          Cat("kubeconfig: tls-server-name \"", tls_server_name, "\" is not a host name"));
    }
  }
  const std::string_view rest = server.substr(kHttps.size());
  const size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  const std::string_view prefix = slash == std::string_view::npos ? "" : rest.substr(slash);
  std::string_view host = authority;
  std::string_view port_text;
  if (authority.starts_with("[")) {  // [IPv6]:port
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return absl::InvalidArgumentError(Cat("server \"", server, "\": unclosed '['"));
    }
    host = authority.substr(0, close + 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') {
        return absl::InvalidArgumentError(Cat("server \"", server, "\": bad authority"));
      }
      port_text = after.substr(1);
    }
  } else if (const size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port_text = authority.substr(colon + 1);
  }
  if (host.empty() || host == "[]") {
    return absl::InvalidArgumentError(Cat("server \"", server, "\" has no host"));
  }
  uint32_t port = 443;
  if (!port_text.empty() &&
      (!absl::SimpleAtoi(AsAbsl(port_text), &port) || port == 0 || port > 65535)) {
    return absl::InvalidArgumentError(Cat("server \"", server, "\": bad port"));
  }
  TlsServerNameRoute route;
  route.url_base = Cat("https://", tls_server_name, ":", port, prefix);
  route.connect_to = Cat(tls_server_name, ":", port, ":", host, ":", port);
  route.host_header = Cat("Host: ", authority);
  return route;
}

}  // namespace dovetail::kube
