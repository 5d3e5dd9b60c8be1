#include "dovetail/providers/aws/container_credentials.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/input_limits.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/providers/aws/json_member.h"
#include "nlohmann/json.hpp"

namespace dovetail::providers::aws {
namespace {

constexpr std::string_view kEcsAgent = "http://169.254.170.2";

// The host of scheme://host[:port][/path], without brackets for IPv6.
std::string UrlHost(std::string_view url) {
  std::string_view rest = url.substr(url.find("://") + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (auto at = rest.rfind('@'); at != std::string_view::npos) rest = rest.substr(at + 1);
  if (!rest.empty() && rest.front() == '[') {
    return std::string(rest.substr(1, rest.find(']') - 1));
  }
  return std::string(rest.substr(0, rest.find(':')));
}

bool IsLoopback(std::string_view host) {
  if (host == "localhost" || host == "::1") return true;
  std::vector<absl::string_view> octets = absl::StrSplit(AsAbsl(host), '.');
  int first = 0;
  return octets.size() == 4 && absl::SimpleAtoi(octets[0], &first) && first == 127;
}

// The hosts the SDKs allow over plain http besides loopback: the ECS agent and the EKS Pod
// Identity agent (IPv4 and IPv6).
bool IsContainerAgent(std::string_view host) {
  return host == "169.254.170.2" || host == "169.254.170.23" ||
         absl::AsciiStrToLower(AsAbsl(host)) == "fd00:ec2::23";
}

absl::StatusOr<std::string> AuthorizationToken(const EnvLookup& env) {
  std::string token;
  if (auto file = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")) {
    absl::StatusOr<std::string> text =
        ReadFileAtMost(*file, kMaxAwsSharedFileBytes, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    if (!text.ok() && text.status().code() == absl::StatusCode::kInvalidArgument) {
      return text.status();  // over the size limit
    }
    if (!text.ok()) {
      return absl::FailedPreconditionError(
          Cat("container: cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE ", *file));
    }
    token = std::string(absl::StripAsciiWhitespace(*text));
  } else if (auto inline_token = env("AWS_CONTAINER_AUTHORIZATION_TOKEN")) {
    token = *inline_token;
  }
  if (absl::StrContains(token, '\r') || absl::StrContains(token, '\n')) {
    return absl::InvalidArgumentError("container: the authorization token has a line break");
  }
  return token;
}

absl::StatusOr<AwsCredentials> ParseReply(const HttpResponse& response, const std::string& url) {
  nlohmann::json doc = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (response.status != 200) {
    std::string msg = Cat("container: ", url, ": HTTP ", response.status);
    if (std::string code = internal::StringMember(doc, "code"); !code.empty())
      msg += Cat(" ", code);
    if (std::string m = internal::StringMember(doc, "message"); !m.empty()) msg += Cat(": ", m);
    if (response.status >= 400 && response.status < 500) return absl::PermissionDeniedError(msg);
    return absl::UnavailableError(msg);
  }
  AwsCredentials out{.access_key_id = internal::StringMember(doc, "AccessKeyId"),
                     .secret_access_key = internal::StringMember(doc, "SecretAccessKey"),
                     .session_token = internal::StringMember(doc, "Token"),
                     .source = Cat("container:", url)};
  if (out.access_key_id.empty() || out.secret_access_key.empty()) {
    return absl::InternalError(
        Cat("container: ", url, ": the reply has no AccessKeyId and SecretAccessKey"));
  }
  if (std::string exp = internal::StringMember(doc, "Expiration"); !exp.empty()) {
    out.expiration = ParseExpiration(exp);
    if (!out.expiration) {
      return absl::InternalError(Cat("container: ", url, ": bad Expiration '", exp, "'"));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> ContainerCredentialsUrl(const EnvLookup& env) {
  if (auto relative = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")) {
    return Cat(kEcsAgent, relative->front() == '/' ? "" : "/", *relative);
  }
  auto full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  if (!full) {
    return absl::NotFoundError(
        "container (EKS Pod Identity, ECS): AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and "
        "AWS_CONTAINER_CREDENTIALS_FULL_URI are not set");
  }
  const std::string lower = absl::AsciiStrToLower(*full);
  if (absl::StartsWith(lower, "https://")) return *full;
  if (!absl::StartsWith(lower, "http://")) {
    return absl::InvalidArgumentError(
        Cat("container: AWS_CONTAINER_CREDENTIALS_FULL_URI '", *full, "' is not an http(s) URL"));
  }
  const std::string host = UrlHost(*full);
  if (!IsLoopback(host) && !IsContainerAgent(host)) {
    return absl::InvalidArgumentError(
        Cat("container: AWS_CONTAINER_CREDENTIALS_FULL_URI '", *full,
            "': plain http is allowed only to a loopback address or the ECS/EKS agent "
            "(169.254.170.2, 169.254.170.23, fd00:ec2::23)"));
  }
  return *full;
}

ContainerCredentialsProvider::ContainerCredentialsProvider(EnvLookup env)
    : env_(std::move(env)),
      transport_(HttpTransport::Options{.connect_timeout = absl::Seconds(2),
                                        .timeout = absl::Seconds(5)}) {}

absl::StatusOr<AwsCredentials> ContainerCredentialsProvider::Get() {
  ASSIGN_OR_RETURN(std::string url, ContainerCredentialsUrl(env_));
  ASSIGN_OR_RETURN(std::string token, AuthorizationToken(env_));
  const std::string::size_type path_at = url.find('/', url.find("://") + 3);
  AwsRequest request{.method = "GET",
                     .endpoint = url.substr(0, path_at),
                     .path = path_at == std::string::npos ? "/" : url.substr(path_at)};
  if (!token.empty()) request.headers.emplace_back("Authorization", token);
  absl::Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (attempt > 0) absl::SleepFor(absl::Milliseconds(100) * attempt);
    absl::StatusOr<HttpResponse> response = transport_.Send(request);
    if (!response.ok()) {
      last = absl::UnavailableError(Cat("container: ", url, ": ", response.status().message()));
      continue;
    }
    absl::StatusOr<AwsCredentials> creds = ParseReply(*response, url);
    if (creds.ok() || !absl::IsUnavailable(creds.status())) return creds;
    last = creds.status();
  }
  return last;
}

}  // namespace dovetail::providers::aws
