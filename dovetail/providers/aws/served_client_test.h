// Fixtures for the unit tests whose AwsClient talks to an in-process TestServer (test_server.h).
//   ServedClientTest  owns the server, a real HTTP transport, fixed static credentials (AKID /
//                     secret) and a fake clock; Dependencies() hands the last three to an
//                     AwsClient. The derived fixture registers its handlers and starts the server.
//   QueryServerTest   a ServedClientTest whose server answers Query-protocol requests (EC2, IAM):
//                     SetUp() starts it; each request's form is recorded in forms_ and answered by
//                     Respond(), both with mu_ held.
// Test-only.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "dovetail/common/clock.h"
#include "dovetail/providers/aws/aws_client.h"
#include "dovetail/providers/aws/credentials.h"
#include "dovetail/providers/aws/http_transport.h"
#include "dovetail/providers/aws/test_server.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace dovetail::providers::aws::testing {

class ServedClientTest : public ::testing::Test {
 protected:
  AwsClient::Dependencies Dependencies() {
    return {.transport = transport_, .credentials = &credentials_, .clock = clock_};
  }

  TestServer server_;
  HttpTransport transport_;
  StaticCredentialsProvider credentials_{
      AwsCredentials{.access_key_id = "AKID", .secret_access_key = "secret"}};
  FakeClock clock_;
};

class QueryServerTest : public ServedClientTest {
 protected:
  // The fields of a form-encoded request body, URL-decoded.
  using Form = std::map<std::string, std::string>;

  void SetUp() override {
    server_.server().Post("/", [this](const httplib::Request& req, httplib::Response& res) {
      Form form = ParseForm(req.body);
      std::lock_guard<std::mutex> lock(mu_);
      forms_.push_back(form);
      Respond(form, res);
    });
    ASSERT_TRUE(server_.Start());
  }

  // Answers a request whose form is `form`. Called with mu_ held.
  virtual void Respond(Form& form, httplib::Response& res) = 0;

  std::mutex mu_;
  std::vector<Form> forms_;

 private:
  static Form ParseForm(const std::string& body) {
    Form out;
    for (absl::string_view kv : absl::StrSplit(body, '&')) {
      std::pair<std::string, std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
      out[httplib::detail::decode_url(p.first, true)] = httplib::detail::decode_url(p.second, true);
    }
    return out;
  }
};

}  // namespace dovetail::providers::aws::testing
