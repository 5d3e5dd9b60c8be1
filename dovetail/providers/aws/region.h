// Which region Dovetail works in: the explicit setting, else AWS_REGION, else AWS_DEFAULT_REGION,
// else the instance metadata service (IMDSv2: PUT /latest/api/token with a TTL header, then GET
// /latest/meta-data/placement/region with the token). The IMDS endpoint is
// http://169.254.169.254 unless ImdsClient::Options or AWS_EC2_METADATA_SERVICE_ENDPOINT says
// otherwise; AWS_EC2_METADATA_DISABLED=true skips it. Thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dovetail/providers/aws/env.h"
#include "dovetail/providers/aws/http_transport.h"

namespace dovetail::providers::aws {

class ImdsClient {
 public:
  struct Options {
    std::string endpoint;  // empty: AWS_EC2_METADATA_SERVICE_ENDPOINT, else http://169.254.169.254
    absl::Duration token_ttl = absl::Hours(6);
  };
  ImdsClient(const HttpTransport& transport, Options options, const EnvLookup& env = ProcessEnv());

  // GET /latest/<path> with a fresh session token. Errors: Unavailable when IMDS cannot be
  // reached, NotFound for 404, PermissionDenied for 401/403 (e.g. a token the hop limit dropped).
  absl::StatusOr<std::string> Get(std::string_view path);
  absl::StatusOr<std::string> Region() { return Get("meta-data/placement/region"); }
  const std::string& endpoint() const { return endpoint_; }

 private:
  absl::StatusOr<std::string> Token();

  const HttpTransport& transport_;
  Options options_;
  std::string endpoint_;
};

// `explicit_region` (non-empty wins), the environment, then IMDS when `imds` is non-null.
// Errors: NotFound naming what was tried.
absl::StatusOr<std::string> ResolveRegion(std::string_view explicit_region, const EnvLookup& env,
                                          ImdsClient* imds);

}  // namespace dovetail::providers::aws
