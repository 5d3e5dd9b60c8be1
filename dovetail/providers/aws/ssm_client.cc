#include "dovetail/providers/aws/ssm_client.h"

#include <cstdint>
#include <string>
#include <utility>

#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/providers/aws/json_member.h"
#include "dovetail/providers/aws/json_protocol.h"

namespace dovetail::providers::aws {

absl::StatusOr<nlohmann::json> SsmClient::Call(std::string_view action,
                                               const nlohmann::json& body) {
  ASSIGN_OR_RETURN(HttpResponse response, SendJson(client_, "1.1", "AmazonSSM", action, body));
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
  // Every member is type-checked before it is read: nlohmann's value() and get<>() throw
  // type_error on a member of another JSON type, and a reply is not ours to trust.
  const nlohmann::json* p = internal::Member(response, "Parameter");
  if (p == nullptr || !p->is_object()) {
    return absl::InternalError(
        Cat("ssm:GetParameter ", name, ": response has no Parameter object"));
  }
  SsmParameter out;
  for (const auto& [key, field] : {std::pair<const char*, std::string*>{"Name", &out.name},
                                   {"Type", &out.type},
                                   {"Value", &out.value},
                                   {"ARN", &out.arn}}) {
    const nlohmann::json* member = internal::Member(*p, key);
    if (member == nullptr || member->is_null()) continue;
    if (!member->is_string()) {
      return absl::InternalError(Cat("ssm:GetParameter ", name, ": Parameter.", key, " is a ",
                                     member->type_name(), ", not a string"));
    }
    *field = member->get<std::string>();
  }
  if (const nlohmann::json* value = internal::Member(*p, "Value");
      value == nullptr || !value->is_string()) {
    return absl::InternalError(Cat("ssm:GetParameter ", name, ": response has no Parameter.Value"));
  }
  if (const nlohmann::json* version = internal::Member(*p, "Version");
      version != nullptr && !version->is_null()) {
    if (!version->is_number_integer()) {
      return absl::InternalError(Cat("ssm:GetParameter ", name, ": Parameter.Version is a ",
                                     version->type_name(), ", not an integer"));
    }
    out.version = version->get<int64_t>();
  }
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
