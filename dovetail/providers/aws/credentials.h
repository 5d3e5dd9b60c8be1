// AWS credentials: the provider interface, the environment source, the chain and the cache. The
// other sources have a file each, and credentials_chain.h puts them in the SDKs' default order.
// ChainCredentialsProvider tries providers in order: a provider that has no credentials to offer
// answers NotFound and the next one is asked; any other error stops the chain.
// CachingCredentialsProvider keeps the last credentials until `refresh_before` ahead of their
// expiration, then fetches again (a failed refresh keeps serving unexpired credentials).
//
// Get() may block on I/O (files, STS). All providers are thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/common/clock.h"
#include "dovetail/providers/aws/env.h"
#include "dovetail/providers/aws/sigv4.h"

namespace dovetail::providers::aws {

class CredentialsProvider {
 public:
  virtual ~CredentialsProvider() = default;
  // Credentials, or NotFound when this source is not configured; other errors (unreadable file,
  // STS failure) are returned as they are.
  virtual absl::StatusOr<AwsCredentials> Get() = 0;
};

class StaticCredentialsProvider final : public CredentialsProvider {
 public:
  explicit StaticCredentialsProvider(AwsCredentials credentials)
      : credentials_(std::move(credentials)) {}
  absl::StatusOr<AwsCredentials> Get() override { return credentials_; }

 private:
  const AwsCredentials credentials_;
};

class EnvironmentCredentialsProvider final : public CredentialsProvider {
 public:
  explicit EnvironmentCredentialsProvider(EnvLookup env = ProcessEnv()) : env_(std::move(env)) {}
  // NotFound without AWS_ACCESS_KEY_ID; InvalidArgument with a key id but no secret.
  absl::StatusOr<AwsCredentials> Get() override;

 private:
  EnvLookup env_;
};

// The Expiration of a credentials reply (RFC 3339: "2026-12-05T06:00:00Z"); nullopt when it does
// not parse.
std::optional<absl::Time> ParseExpiration(std::string_view text);

class ChainCredentialsProvider final : public CredentialsProvider {
 public:
  explicit ChainCredentialsProvider(std::vector<std::unique_ptr<CredentialsProvider>> providers)
      : providers_(std::move(providers)) {}
  // NotFound naming every source when none has credentials.
  absl::StatusOr<AwsCredentials> Get() override;

 private:
  std::vector<std::unique_ptr<CredentialsProvider>> providers_;
};

class CachingCredentialsProvider final : public CredentialsProvider {
 public:
  CachingCredentialsProvider(std::unique_ptr<CredentialsProvider> inner, const Clock& clock,
                             absl::Duration refresh_before = absl::Minutes(5))
      : inner_(std::move(inner)), clock_(clock), refresh_before_(refresh_before) {}
  absl::StatusOr<AwsCredentials> Get() override;
  // How often the inner provider was asked (for tests and metrics).
  int fetches() const;

 private:
  std::unique_ptr<CredentialsProvider> inner_;
  const Clock& clock_;
  const absl::Duration refresh_before_;
  mutable absl::Mutex mu_;
  std::optional<AwsCredentials> cached_ ABSL_GUARDED_BY(mu_);
  int fetches_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace dovetail::providers::aws
