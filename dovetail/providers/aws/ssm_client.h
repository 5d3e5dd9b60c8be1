// SsmClient: the SSM calls Dovetail makes, in the AWS JSON 1.1 protocol (POST /, X-Amz-Target:
// AmazonSSM.<Action>, a JSON body and response). GetParameter resolves AMI aliases
// (/aws/service/eks/optimized-ami/.../image_id); PutParameter exists for test fixtures.
// Errors: those of AwsClient (errors.h) with the SSM code kept (ParameterNotFound => NotFound).
// Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "dovetail/providers/aws/aws_client.h"
#include "nlohmann/json.hpp"

namespace dovetail::providers::aws {

struct SsmParameter {
  std::string name;
  std::string type;  // String, StringList, SecureString
  std::string value;
  int64_t version = 0;
  std::string arn;
};

class SsmClient {
 public:
  explicit SsmClient(AwsClient& client) : client_(client) {}

  // One JSON call: `action` without the "AmazonSSM." prefix. Internal for a non-JSON response.
  absl::StatusOr<nlohmann::json> Call(std::string_view action, const nlohmann::json& body);

  // Errors: those of Call; Internal for a reply without a string Parameter.Value or with a member
  // of the wrong JSON type (Name, Type, ARN not strings, Version not an integer).
  absl::StatusOr<SsmParameter> GetParameter(std::string_view name, bool with_decryption = false);
  absl::Status PutParameter(std::string_view name, std::string_view value,
                            std::string_view type = "String", bool overwrite = true);

 private:
  AwsClient& client_;
};

}  // namespace dovetail::providers::aws
