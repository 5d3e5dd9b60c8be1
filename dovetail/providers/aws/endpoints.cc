#include "dovetail/providers/aws/endpoints.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::providers::aws {
namespace {

absl::StatusOr<std::string> Normalize(std::string url, std::string_view from) {
  if (!url.starts_with("http://") && !url.starts_with("https://")) {
    return absl::InvalidArgumentError(Cat(from, ": endpoint '", url, "' is not an http(s) URL"));
  }
  while (url.size() > 8 && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace

absl::StatusOr<std::string> ResolveEndpoint(const ServiceInfo& service, std::string_view region,
                                            const EndpointOverrides& overrides,
                                            const EnvLookup& env) {
  for (const auto& [id, url] : overrides) {
    if (absl::EqualsIgnoreCase(id, AsAbsl(service.service_id)) && !url.empty()) {
      return Normalize(url, Cat("endpoint override for ", service.service_id));
    }
  }
  const bool ignore_env =
      absl::AsciiStrToLower(env("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS").value_or("")) == "true";
  if (!ignore_env) {
    std::string var =
        absl::StrReplaceAll(absl::AsciiStrToUpper(AsAbsl(service.service_id)), {{" ", "_"}});
    var = "AWS_ENDPOINT_URL_" + var;
    if (auto url = env(var)) return Normalize(*url, var);
    if (auto url = env("AWS_ENDPOINT_URL")) return Normalize(*url, "AWS_ENDPOINT_URL");
  }
  const std::string_view suffix =
      region.starts_with("cn-") ? ".amazonaws.com.cn" : ".amazonaws.com";
  if (service.signing_name == "iam") {
    if (region.starts_with("cn-")) return std::string("https://iam.cn-north-1.amazonaws.com.cn");
    if (region.starts_with("us-gov-")) return std::string("https://iam.us-gov.amazonaws.com");
    return std::string("https://iam.amazonaws.com");
  }
  if (region.empty()) {
    return absl::InvalidArgumentError(Cat("no region for the ", service.service_id, " endpoint"));
  }
  if (service.signing_name == "pricing") {
    return Cat("https://", service.prefix, ".", SigningRegion(service, region), suffix);
  }
  return Cat("https://", service.prefix, ".", region, suffix);
}

std::string SigningRegion(const ServiceInfo& service, std::string_view region) {
  if (service.signing_name == "iam") {
    if (region.starts_with("cn-")) return "cn-north-1";
    if (region.starts_with("us-gov-")) return "us-gov-west-1";
    return "us-east-1";
  }
  if (service.signing_name == "pricing") {
    if (region.starts_with("cn-")) return "cn-northwest-1";
    if (region.starts_with("ap-south")) return "ap-south-1";
    return "us-east-1";
  }
  return std::string(region);
}

}  // namespace dovetail::providers::aws
