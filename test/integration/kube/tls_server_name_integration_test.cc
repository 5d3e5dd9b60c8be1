// tls-server-name against the real kube-apiserver of the fixture. Its serving certificate names
// 127.0.0.1, localhost and kubernetes (tools/k8s/cluster.py), not 127.0.0.2; a TCP relay on
// 127.0.0.2 forwards to the API server, so a server URL of https://127.0.0.2:PORT reaches it
// under an address the certificate does not name. With tls-server-name naming one it does, the
// client must connect and verify; without it, or with a name not in the certificate, it must
// refuse.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "dovetail/kube/rest_client.h"
#include "gtest/gtest.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::kube {
namespace {

// Relays TCP connections accepted on 127.0.0.2 to a target port on 127.0.0.1, bytes unchanged
// (TLS passes through end to end). Test-only.
class TcpRelay {
 public:
  explicit TcpRelay(int target_port) : target_port_(target_port) {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.2", &addr.sin_addr);
    EXPECT_EQ(bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(listener_, 16), 0);
    socklen_t len = sizeof(addr);
    getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }

  ~TcpRelay() {
    stop_ = true;
    accept_thread_.join();
    close(listener_);
    absl::MutexLock lock(&mu_);
    for (std::thread& t : pipes_) t.join();
  }

  int port() const { return port_; }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd pfd{.fd = listener_, .events = POLLIN, .revents = 0};
      if (poll(&pfd, 1, 100) <= 0) continue;
      const int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      const int upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<uint16_t>(target_port_));
      inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
      if (connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        close(client);
        close(upstream);
        continue;
      }
      absl::MutexLock lock(&mu_);
      pipes_.emplace_back([this, client, upstream] { Pipe(client, upstream); });
    }
  }

  // Copies both ways until either side closes or the relay stops.
  void Pipe(int a, int b) {
    char buffer[16384];
    while (!stop_) {
      pollfd fds[2] = {{.fd = a, .events = POLLIN, .revents = 0},
                       {.fd = b, .events = POLLIN, .revents = 0}};
      if (poll(fds, 2, 100) <= 0) continue;
      bool open = true;
      for (int i = 0; i < 2 && open; ++i) {
        if (fds[i].revents == 0) continue;
        const ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
        if (n <= 0) {
          open = false;
          break;
        }
        const int to = i == 0 ? b : a;
        for (ssize_t sent = 0; sent < n;) {
          const ssize_t w = write(to, buffer + sent, static_cast<size_t>(n - sent));
          if (w <= 0) {
            open = false;
            break;
          }
          sent += w;
        }
      }
      if (!open) break;
    }
    close(a);
    close(b);
  }

  const int target_port_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread accept_thread_;
  absl::Mutex mu_;
  std::vector<std::thread> pipes_ ABSL_GUARDED_BY(mu_);
};

class TlsServerNameIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fixture_ = testing::KubeconfigFromEnv();
    const size_t colon = fixture_.server.rfind(':');
    ASSERT_NE(colon, std::string::npos) << fixture_.server;
    int api_port = 0;
    ASSERT_TRUE(absl::SimpleAtoi(fixture_.server.substr(colon + 1), &api_port)) << fixture_.server;
    relay_ = std::make_unique<TcpRelay>(api_port);
  }

  // The fixture's credentials and CA, the server reached through the relay.
  RestConfig ThroughRelay(std::string tls_server_name) const {
    RestConfig config = fixture_;
    config.server = absl::StrCat("https://127.0.0.2:", relay_->port());
    config.tls_server_name = std::move(tls_server_name);
    return config;
  }

  static absl::StatusOr<HttpResponse> GetVersion(const RestConfig& config) {
    auto client = RestClient::Create(config, {.max_retries = 0});
    if (!client.ok()) return client.status();
    return (*client)->Do({.method = "GET", .path = "/version"});
  }

  RestConfig fixture_;
  std::unique_ptr<TcpRelay> relay_;
};

TEST_F(TlsServerNameIntegrationTest, VerifiesTheCertificateAgainstTheNamedHost) {
  for (const char* name : {"kubernetes", "localhost"}) {
    auto response = GetVersion(ThroughRelay(name));
    ASSERT_TRUE(response.ok()) << name << ": " << response.status();
    EXPECT_EQ(response->code, 200);
    EXPECT_NE(response->body.find("gitVersion"), std::string::npos) << response->body;
  }
}

TEST_F(TlsServerNameIntegrationTest, WithoutItTheAddressNotInTheCertificateIsRefused) {
  auto response = GetVersion(ThroughRelay(""));
  ASSERT_FALSE(response.ok()) << "the relay address 127.0.0.2 passed verification";
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable) << response.status();
  // Refused by certificate verification against the URL's host, not by a failed relay.
  EXPECT_NE(response.status().message().find("target host name '127.0.0.2'"), std::string::npos)
      << response.status();
}

TEST_F(TlsServerNameIntegrationTest, ANameNotInTheCertificateIsRefused) {
  auto response = GetVersion(ThroughRelay("not-in-the-certificate.example"));
  ASSERT_FALSE(response.ok()) << "a name absent from the certificate passed verification";
  EXPECT_NE(response.status().message().find("target host name 'not-in-the-certificate.example'"),
            std::string::npos)
      << response.status();
}

TEST_F(TlsServerNameIntegrationTest, IsReadFromTheKubeconfigClusterEntry) {
  const std::string kubeconfig = absl::StrCat(R"(
apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters:
- name: k
  cluster:
    server: https://127.0.0.2:)",
                                              relay_->port(), R"(
    tls-server-name: kubernetes
users: [{name: u, user: {}}]
)");
  auto parsed = ParseKubeconfig(kubeconfig, "");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->tls_server_name, "kubernetes");
  RestConfig config = *parsed;
  config.ca_pem = fixture_.ca_pem;
  config.client_cert_pem = fixture_.client_cert_pem;
  config.client_key_pem = fixture_.client_key_pem;
  config.bearer_token = fixture_.bearer_token;
  auto response = GetVersion(config);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->code, 200);
}

}  // namespace
}  // namespace dovetail::kube
