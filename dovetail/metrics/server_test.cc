#include "dovetail/metrics/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::metrics {
namespace {

using ::testing::HasSubstr;

// A client socket to 127.0.0.1:port that gives up reading after 30 s.
class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    timeval timeout{.tv_sec = 30, .tv_usec = 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawConnection() { close(fd_); }
  bool connected() const { return connected_; }

  // Sends all of `bytes`; false when the peer is gone (a refused request may be closed early).
  bool Send(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads until the peer closes, the 30 s receive timeout passes, or `until` appears.
  std::string Read(const std::string& until = "\r\n\r\n") {
    std::string out;
    char buf[4096];
    while (out.find(until) == std::string::npos) {
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  // True when the peer closed the connection (recv returns 0) before the receive timeout.
  bool ClosedByPeer() {
    char buf[4096];
    while (true) {
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n == 0) return true;
      if (n < 0) return false;
    }
  }

 private:
  int fd_;
  bool connected_ = false;
};

// The status code of a raw HTTP response; 0 when there is none.
int StatusOf(const std::string& response) {
  int status = 0;
  if (response.size() < 12 || !absl::SimpleAtoi(response.substr(9, 3), &status)) return 0;
  return status;
}

class HttpEndpointLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override { Serve(EndpointLimits{}); }

  void Serve(EndpointLimits limits) {
    endpoint_ = std::make_unique<HttpEndpoint>(limits);
    endpoint_->Handle("/metrics", [] { return Response{200, "metric 1\n"}; });
    absl::StatusOr<int> port = endpoint_->Start("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.status();
    port_ = *port;
  }

  // One request on a fresh connection; the status code of its answer.
  int Request(const std::string& bytes) {
    RawConnection c(port_);
    EXPECT_TRUE(c.connected());
    c.Send(bytes);
    return StatusOf(c.Read());
  }

  std::unique_ptr<HttpEndpoint> endpoint_;
  int port_ = 0;
};

TEST_F(HttpEndpointLimitsTest, ServesAPlainGet) {
  RawConnection c(port_);
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  const std::string response = c.Read("metric 1\n");
  EXPECT_EQ(StatusOf(response), 200);
  EXPECT_THAT(response, HasSubstr("metric 1\n"));
}

TEST_F(HttpEndpointLimitsTest, RefusesEveryMethodButGet) {
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"}) {
    RawConnection c(port_);
    ASSERT_TRUE(c.connected());
    c.Send(absl::StrCat(method, " /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"));
    const std::string response = c.Read();
    EXPECT_EQ(StatusOf(response), 405) << method;
    EXPECT_THAT(response, HasSubstr("Allow: GET")) << method;
  }
}

TEST_F(HttpEndpointLimitsTest, RefusesAGetWithABodyOverTheLimit) {
  EXPECT_EQ(Request("GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 4097\r\n\r\n"), 413);
  EXPECT_EQ(Request("GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n"),
            413);
  EXPECT_EQ(Request("GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"), 413);
  EXPECT_EQ(Request("GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: twelve\r\n\r\n"), 400);
  // Up to the limit the request is served (the library leaves the body unread).
  EXPECT_EQ(Request(absl::StrCat("GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 4096\r\n\r\n",
                                 std::string(4096, 'b'))),
            200);
}

TEST_F(HttpEndpointLimitsTest, RefusesHeadersOverSixteenKibibytesInTotal) {
  std::string many;
  for (int i = 0; i < 40; ++i)
    absl::StrAppend(&many, "X-Filler-", i, ": ", std::string(500, 'h'), "\r\n");
  EXPECT_EQ(Request(absl::StrCat("GET /metrics HTTP/1.1\r\nHost: x\r\n", many, "\r\n")), 431);
  std::string some;
  for (int i = 0; i < 20; ++i)
    absl::StrAppend(&some, "X-Filler-", i, ": ", std::string(500, 'h'), "\r\n");
  EXPECT_EQ(Request(absl::StrCat("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n", some,
                                 "\r\n")),
            200);
}

TEST_F(HttpEndpointLimitsTest, TheLibraryRefusesAUriOverEightKibibytes) {
  EXPECT_EQ(Request(absl::StrCat("GET /metrics?", std::string(9000, 'q'),
                                 " HTTP/1.1\r\nHost: x\r\n\r\n")),
            414);
  EXPECT_EQ(Request(absl::StrCat("GET /metrics?", std::string(7000, 'q'),
                                 " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")),
            200);
}

TEST_F(HttpEndpointLimitsTest, ClosesAConnectionThatStopsSendingMidRequest) {
  Serve(EndpointLimits{.read_timeout = absl::Milliseconds(200)});
  RawConnection c(port_);
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send("GET /metrics HTTP/1.1\r\nHost: x\r\n"));  // and never the blank line
  EXPECT_TRUE(c.ClosedByPeer());  // long before the client's own 30 s receive timeout
}

TEST_F(HttpEndpointLimitsTest, StartFailsOnAPortTaken) {
  HttpEndpoint other;
  // Taken by the fixture's endpoint (no SO_REUSEPORT sharing).
  absl::StatusOr<int> port = other.Start("127.0.0.1", port_);
  EXPECT_EQ(port.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace dovetail::metrics
