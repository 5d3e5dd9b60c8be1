#include "dovetail/providers/aws/json_protocol.h"

#include <utility>

#include "dovetail/common/absl_compat.h"

namespace dovetail::providers::aws {

absl::StatusOr<HttpResponse> SendJson(AwsClient& client, std::string_view version,
                                      std::string_view target_prefix, std::string_view action,
                                      const nlohmann::json& body) {
  AwsRequest request;
  request.method = "POST";
  request.path = "/";
  request.headers = {{"Content-Type", Cat("application/x-amz-json-", version)},
                     {"X-Amz-Target", Cat(target_prefix, ".", action)}};
  request.body = body.dump();
  return client.Send(action, std::move(request));
}

}  // namespace dovetail::providers::aws
