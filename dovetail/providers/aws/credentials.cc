#include "dovetail/providers/aws/credentials.h"

#include "absl/strings/str_join.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::providers::aws {

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

std::optional<absl::Time> ParseExpiration(std::string_view text) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, AsAbsl(text), &t, &err)) return std::nullopt;
  return t;
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
