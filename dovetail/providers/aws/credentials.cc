#include "dovetail/providers/aws/credentials.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::providers::aws {
namespace {

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string HomeDir(const EnvLookup& env) { return env("HOME").value_or(""); }

}  // namespace

absl::StatusOr<AwsCredentials> EnvironmentCredentialsProvider::Get() {
  auto id = env_("AWS_ACCESS_KEY_ID");
  if (!id) return absl::NotFoundError("environment: AWS_ACCESS_KEY_ID is not set");
  auto secret = env_("AWS_SECRET_ACCESS_KEY");
  if (!secret) {
    return absl::InvalidArgumentError(
        "environment: AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
  }
  return AwsCredentials{.access_key_id = *id,
                        .secret_access_key = *secret,
                        .session_token = env_("AWS_SESSION_TOKEN").value_or(""),
                        .source = "environment"};
}

absl::StatusOr<std::map<std::string, std::string>> ReadIniSection(std::string_view text,
                                                                  std::string_view section) {
  std::map<std::string, std::string> out;
  bool in_section = false;
  bool found = false;
  for (absl::string_view raw : absl::StrSplit(AsAbsl(text), '\n')) {
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      std::string name(absl::StripAsciiWhitespace(line.substr(1, line.size() - 2)));
      // "[profile  dev]" and "[profile dev]" name the same section.
      std::vector<std::string> words = absl::StrSplit(name, ' ', absl::SkipEmpty());
      in_section = absl::StrJoin(words, " ") == AsAbsl(section);
      found |= in_section;
      continue;
    }
    if (!in_section) continue;
    auto eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    std::string key = absl::AsciiStrToLower(absl::StripAsciiWhitespace(line.substr(0, eq)));
    out[key] = std::string(absl::StripAsciiWhitespace(line.substr(eq + 1)));
  }
  if (!found) return absl::NotFoundError(Cat("no section [", section, "]"));
  return out;
}

absl::StatusOr<AwsCredentials> ProfileCredentialsProvider::Get() {
  const std::string profile =
      env_("AWS_PROFILE").value_or(env_("AWS_DEFAULT_PROFILE").value_or("default"));
  const std::string credentials_path =
      env_("AWS_SHARED_CREDENTIALS_FILE").value_or(HomeDir(env_) + "/.aws/credentials");
  const std::string config_path = env_("AWS_CONFIG_FILE").value_or(HomeDir(env_) + "/.aws/config");
  // The credentials file wins over the config file, key by key.
  std::map<std::string, std::string> merged;
  if (auto text = ReadFile(config_path)) {
    auto section = ReadIniSection(*text, profile == "default" ? "default" : "profile " + profile);
    if (section.ok()) merged = *section;
  }
  if (auto text = ReadFile(credentials_path)) {
    auto section = ReadIniSection(*text, profile);
    if (section.ok()) {
      for (auto& [k, v] : *section) merged[k] = v;
    }
  }
  auto id = merged.find("aws_access_key_id");
  if (id == merged.end() || id->second.empty()) {
    return absl::NotFoundError(Cat("profile '", profile, "': no aws_access_key_id in ",
                                   credentials_path, " or ", config_path));
  }
  auto secret = merged.find("aws_secret_access_key");
  if (secret == merged.end() || secret->second.empty()) {
    return absl::InvalidArgumentError(
        Cat("profile '", profile, "': aws_access_key_id without aws_secret_access_key"));
  }
  AwsCredentials creds{.access_key_id = id->second,
                       .secret_access_key = secret->second,
                       .source = "profile:" + profile};
  if (auto token = merged.find("aws_session_token"); token != merged.end()) {
    creds.session_token = token->second;
  }
  return creds;
}

absl::StatusOr<AwsCredentials> ChainCredentialsProvider::Get() {
  std::vector<std::string> tried;
  for (const auto& provider : providers_) {
    auto creds = provider->Get();
    if (creds.ok() || !absl::IsNotFound(creds.status())) return creds;
    tried.emplace_back(creds.status().message());
  }
  return absl::NotFoundError(Cat("no AWS credentials: ", absl::StrJoin(tried, "; ")));
}

absl::StatusOr<AwsCredentials> CachingCredentialsProvider::Get() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  auto fresh = [&](const AwsCredentials& c) {
    return !c.expiration.has_value() || now < *c.expiration - refresh_before_;
  };
  if (cached_ && fresh(*cached_)) return *cached_;
  ++fetches_;
  auto creds = inner_->Get();
  if (!creds.ok()) {
    // Keep serving credentials that have not expired yet; the next call retries the refresh.
    if (cached_ && cached_->expiration && now < *cached_->expiration) return *cached_;
    return creds.status();
  }
  cached_ = *creds;
  return *creds;
}

int CachingCredentialsProvider::fetches() const {
  absl::MutexLock lock(&mu_);
  return fetches_;
}

}  // namespace dovetail::providers::aws
