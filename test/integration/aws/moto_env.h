// Shared setup of the moto-backed integration tests: the endpoint the fixture wrote to
// $DOVETAIL_MOTO_DIR/endpoint, reached through AWS_ENDPOINT_URL as a user would configure it.
#pragma once

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "dovetail/common/clock.h"
#include "dovetail/providers/aws/aws_client.h"
#include "dovetail/providers/aws/credentials.h"
#include "dovetail/providers/aws/endpoints.h"
#include "dovetail/providers/aws/http_transport.h"
#include "dovetail/providers/aws/sigv4.h"
#include "gtest/gtest.h"

namespace dovetail::providers::aws::testing {

inline std::string MotoEndpoint() {
  const char* dir = std::getenv("DOVETAIL_MOTO_DIR");
  if (dir == nullptr) return "";
  std::ifstream in(std::string(dir) + "/endpoint");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A client for `service` in `region` against moto, its endpoint resolved from AWS_ENDPOINT_URL.
inline std::unique_ptr<AwsClient> MotoClient(const ServiceInfo& service,
                                             const HttpTransport& transport,
                                             CredentialsProvider* credentials, const Clock& clock,
                                             const std::string& region = "us-east-1") {
  auto endpoint =
      ResolveEndpoint(service, region, {}, MapEnv({{"AWS_ENDPOINT_URL", MotoEndpoint()}}));
  EXPECT_TRUE(endpoint.ok()) << endpoint.status();
  AwsClient::Options options{
      .service = service, .region = region, .endpoint = endpoint.value_or("")};
  if (service.signing_name == "ssm" || service.signing_name == "sqs" ||
      service.signing_name == "eks") {
    options.parse_error = ParseJsonError;  // JSON-protocol services
  }
  options.max_attempts = 3;
  return std::make_unique<AwsClient>(
      AwsClient::Dependencies{.transport = transport, .credentials = credentials, .clock = clock},
      options);
}

// What one test's AWS clients share: a transport, credentials moto (and the stand-ins) accept, a
// real clock. Client() is MotoClient over them.
struct MotoConnection {
  HttpTransport transport;
  StaticCredentialsProvider credentials{
      AwsCredentials{.access_key_id = "AKIDMOTOTEST", .secret_access_key = "moto-secret"}};
  RealClock clock;
  std::unique_ptr<AwsClient> Client(const ServiceInfo& service,
                                    const std::string& region = "us-east-1") {
    return MotoClient(service, transport, &credentials, clock, region);
  }
};

}  // namespace dovetail::providers::aws::testing
