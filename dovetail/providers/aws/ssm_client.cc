#include "dovetail/providers/aws/ssm_client.h"

#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"

namespace dovetail::providers::aws {

absl::StatusOr<nlohmann::json> SsmClient::Call(std::string_view action,
                                               const nlohmann::json& body) {
  AwsRequest request;
  request.method = "POST";
  request.path = "/";
  request.headers = {{"Content-Type", "application/x-amz-json-1.1"},
                     {"X-Amz-Target", Cat("AmazonSSM.", action)}};
  request.body = body.dump();
  ASSIGN_OR_RETURN(HttpResponse response, client_.Send(action, std::move(request)));
  nlohmann::json parsed = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::InternalError(Cat("ssm:", action, ": response is not JSON"));
  }
  return parsed;
}

absl::StatusOr<SsmParameter> SsmClient::GetParameter(std::string_view name, bool with_decryption) {
  ASSIGN_OR_RETURN(
      nlohmann::json response,
      Call("GetParameter", {{"Name", std::string(name)}, {"WithDecryption", with_decryption}}));
  const nlohmann::json& p = response.value("Parameter", nlohmann::json::object());
  if (!p.is_object() || !p.contains("Value") || !p["Value"].is_string()) {
    return absl::InternalError(Cat("ssm:GetParameter ", name, ": response has no Parameter.Value"));
  }
  SsmParameter out;
  out.name = p.value("Name", "");
  out.type = p.value("Type", "");
  out.value = p["Value"].get<std::string>();
  if (p.contains("Version") && p["Version"].is_number()) out.version = p["Version"].get<int64_t>();
  out.arn = p.value("ARN", "");
  return out;
}

absl::Status SsmClient::PutParameter(std::string_view name, std::string_view value,
                                     std::string_view type, bool overwrite) {
  return Call("PutParameter", {{"Name", std::string(name)},
                               {"Value", std::string(value)},
                               {"Type", std::string(type)},
                               {"Overwrite", overwrite}})
      .status();
}

}  // namespace dovetail::providers::aws
