#include "dovetail/providers/aws/region.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"

namespace dovetail::providers::aws {
namespace {

absl::Status HttpError(std::string_view what, int status) {
  std::string msg = Cat("IMDS ", what, ": HTTP ", status);
  if (status == 404) return absl::NotFoundError(msg);
  if (status == 401 || status == 403) return absl::PermissionDeniedError(msg);
  return absl::UnavailableError(msg);
}

}  // namespace

ImdsClient::ImdsClient(const HttpTransport& transport, Options options, const EnvLookup& env)
    : transport_(transport), options_(std::move(options)) {
  endpoint_ = !options_.endpoint.empty()
                  ? options_.endpoint
                  : env("AWS_EC2_METADATA_SERVICE_ENDPOINT").value_or("http://169.254.169.254");
  while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
}

absl::StatusOr<std::string> ImdsClient::Token() {
  AwsRequest put{.method = "PUT", .endpoint = endpoint_, .path = "/latest/api/token"};
  put.headers = {{"X-aws-ec2-metadata-token-ttl-seconds",
                  absl::StrCat(absl::ToInt64Seconds(options_.token_ttl))}};
  ASSIGN_OR_RETURN(HttpResponse response, transport_.Send(put));
  if (response.status != 200) return HttpError("token", response.status);
  return response.body;
}

absl::StatusOr<std::string> ImdsClient::Get(std::string_view path) {
  ASSIGN_OR_RETURN(std::string token, Token());
  AwsRequest get{.method = "GET", .endpoint = endpoint_, .path = Cat("/latest/", path)};
  get.headers = {{"X-aws-ec2-metadata-token", token}};
  ASSIGN_OR_RETURN(HttpResponse response, transport_.Send(get));
  if (response.status != 200) return HttpError(path, response.status);
  return std::string(absl::StripAsciiWhitespace(response.body));
}

absl::StatusOr<std::string> ResolveRegion(std::string_view explicit_region, const EnvLookup& env,
                                          ImdsClient* imds) {
  if (!explicit_region.empty()) return std::string(explicit_region);
  if (auto r = env("AWS_REGION")) return *r;
  if (auto r = env("AWS_DEFAULT_REGION")) return *r;
  const bool disabled =
      absl::AsciiStrToLower(env("AWS_EC2_METADATA_DISABLED").value_or("")) == "true";
  if (imds == nullptr || disabled) {
    return absl::NotFoundError("no AWS region: set it, or AWS_REGION / AWS_DEFAULT_REGION");
  }
  auto region = imds->Region();
  if (!region.ok()) {
    return absl::NotFoundError(
        Cat("no AWS region: AWS_REGION / AWS_DEFAULT_REGION unset and IMDS (", imds->endpoint(),
            ") failed: ", region.status().message()));
  }
  if (region->empty()) return absl::NotFoundError("no AWS region: IMDS returned an empty region");
  return region;
}

}  // namespace dovetail::providers::aws
