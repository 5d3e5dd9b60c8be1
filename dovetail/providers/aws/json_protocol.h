// The AWS JSON protocol that SQS (version 1.0), SSM and the Price List API (1.1) speak: an action
// posted to "/" as a JSON body and named by the X-Amz-Target header. Each client reads the reply
// itself. Free function; thread-safe as AwsClient is.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "dovetail/providers/aws/aws_client.h"
#include "nlohmann/json.hpp"

namespace dovetail::providers::aws {

// Sends `action` through `client` (API name = action): POST / with `body`, Content-Type
// application/x-amz-json-<version> and X-Amz-Target <target_prefix>.<action>. Returns the 2xx
// response; errors: those of AwsClient::Send.
absl::StatusOr<HttpResponse> SendJson(AwsClient& client, std::string_view version,
                                      std::string_view target_prefix, std::string_view action,
                                      const nlohmann::json& body);

}  // namespace dovetail::providers::aws
