#include "dovetail/providers/aws/credentials.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/test_temp_dir.h"
#include "dovetail/providers/aws/container_credentials.h"
#include "dovetail/providers/aws/credentials_chain.h"
#include "dovetail/providers/aws/endpoints.h"
#include "dovetail/providers/aws/instance_profile_credentials.h"
#include "dovetail/providers/aws/process_credentials.h"
#include "dovetail/providers/aws/profile_credentials.h"
#include "dovetail/providers/aws/region.h"
#include "dovetail/providers/aws/test_server.h"
#include "dovetail/providers/aws/web_identity_credentials.h"
#include "gtest/gtest.h"

namespace dovetail::providers::aws {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string dir = dovetail::testing::ProcessTempDir("aws_credentials_test");
  std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(EnvironmentCredentialsTest, ReadsKeysAndSessionToken) {
  EnvironmentCredentialsProvider p(MapEnv({{"AWS_ACCESS_KEY_ID", "AKID"},
                                           {"AWS_SECRET_ACCESS_KEY", "SECRET"},
                                           {"AWS_SESSION_TOKEN", "TOKEN"}}));
  auto c = p.Get();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->access_key_id, "AKID");
  EXPECT_EQ(c->secret_access_key, "SECRET");
  EXPECT_EQ(c->session_token, "TOKEN");
  EXPECT_EQ(c->source, "environment");
}

TEST(EnvironmentCredentialsTest, UnsetIsNotFoundAndHalfSetIsInvalid) {
  EXPECT_EQ(EnvironmentCredentialsProvider(MapEnv({})).Get().status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(
      EnvironmentCredentialsProvider(MapEnv({{"AWS_ACCESS_KEY_ID", "A"}})).Get().status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(ProfileCredentialsTest, ReadsTheNamedProfileFromBothFiles) {
  std::string creds = WriteTemp("credentials",
                                "[default]\naws_access_key_id = DEF\naws_secret_access_key = DEFS\n"
                                "# comment\n[dev]\naws_access_key_id=DEV\n");
  std::string config = WriteTemp("config",
                                 "[profile dev]\naws_secret_access_key = DEVS\n"
                                 "aws_session_token = DEVT\nregion = eu-west-1\n");
  auto env = [&](std::string profile) {
    return MapEnv({{"AWS_SHARED_CREDENTIALS_FILE", creds},
                   {"AWS_CONFIG_FILE", config},
                   {"AWS_PROFILE", profile}});
  };
  auto def = ProfileCredentialsProvider(env("")).Get();
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ(def->access_key_id, "DEF");
  EXPECT_EQ(def->secret_access_key, "DEFS");
  EXPECT_EQ(def->source, "profile:default");
  auto dev = ProfileCredentialsProvider(env("dev")).Get();
  ASSERT_TRUE(dev.ok()) << dev.status();
  EXPECT_EQ(dev->access_key_id, "DEV");
  EXPECT_EQ(dev->secret_access_key, "DEVS");
  EXPECT_EQ(dev->session_token, "DEVT");
  EXPECT_EQ(ProfileCredentialsProvider(env("missing")).Get().status().code(),
            absl::StatusCode::kNotFound);
}

// /dev/zero never ends: read whole, as these files were, it would exhaust memory.
TEST(CredentialFileLimitsTest, FilesOverTheLimitAreInvalidArgumentNotEndlessReads) {
  EXPECT_EQ(ProfileCredentialsProvider(MapEnv({{"AWS_CONFIG_FILE", "/dev/zero"},
                                               {"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"}}))
                .Get()
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadWebIdentityToken("web identity", "/dev/zero").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ContainerCredentialsProvider(
                MapEnv({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:1/v1/credentials"},
                        {"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "/dev/zero"}}))
                .Get()
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // Missing files keep their meaning: no profile, an unreadable token.
  EXPECT_EQ(ProfileCredentialsProvider(MapEnv({{"AWS_CONFIG_FILE", "/nonexistent"},
                                               {"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"}}))
                .Get()
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadWebIdentityToken("web identity", "/nonexistent").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(ChainCredentialsTest, FallsThroughNotFoundAndStopsAtOtherErrors) {
  std::vector<std::unique_ptr<CredentialsProvider>> providers;
  providers.push_back(std::make_unique<EnvironmentCredentialsProvider>(MapEnv({})));
  providers.push_back(std::make_unique<StaticCredentialsProvider>(
      AwsCredentials{.access_key_id = "S", .secret_access_key = "K", .source = "static"}));
  auto c = ChainCredentialsProvider(std::move(providers)).Get();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->source, "static");

  std::vector<std::unique_ptr<CredentialsProvider>> broken;
  broken.push_back(
      std::make_unique<EnvironmentCredentialsProvider>(MapEnv({{"AWS_ACCESS_KEY_ID", "A"}})));
  broken.push_back(std::make_unique<StaticCredentialsProvider>(AwsCredentials{}));
  EXPECT_EQ(ChainCredentialsProvider(std::move(broken)).Get().status().code(),
            absl::StatusCode::kInvalidArgument);

  std::vector<std::unique_ptr<CredentialsProvider>> none;
  none.push_back(std::make_unique<EnvironmentCredentialsProvider>(MapEnv({})));
  EXPECT_EQ(ChainCredentialsProvider(std::move(none)).Get().status().code(),
            absl::StatusCode::kNotFound);
}

// Hands out credentials expiring `lifetime` after the clock's now, numbered by fetch.
class ExpiringProvider : public CredentialsProvider {
 public:
  ExpiringProvider(const Clock& clock, absl::Duration lifetime)
      : clock_(clock), lifetime_(lifetime) {}
  absl::StatusOr<AwsCredentials> Get() override {
    if (fail_) return absl::UnavailableError("sts down");
    ++n_;
    return AwsCredentials{.access_key_id = "K" + std::to_string(n_),
                          .secret_access_key = "S",
                          .expiration = clock_.Now() + lifetime_};
  }
  bool fail_ = false;

 private:
  const Clock& clock_;
  absl::Duration lifetime_;
  int n_ = 0;
};

TEST(CachingCredentialsTest, RefreshesFiveMinutesBeforeExpiry) {
  FakeClock clock;
  auto inner = std::make_unique<ExpiringProvider>(clock, absl::Hours(1));
  ExpiringProvider* raw = inner.get();
  CachingCredentialsProvider cache(std::move(inner), clock);
  EXPECT_EQ(cache.Get()->access_key_id, "K1");
  clock.Advance(absl::Minutes(54));
  EXPECT_EQ(cache.Get()->access_key_id, "K1");
  EXPECT_EQ(cache.fetches(), 1);
  clock.Advance(absl::Minutes(2));  // 56 min: inside the 5-minute window
  EXPECT_EQ(cache.Get()->access_key_id, "K2");
  EXPECT_EQ(cache.fetches(), 2);
  // A failed refresh keeps serving credentials that are still valid ...
  raw->fail_ = true;
  clock.Advance(absl::Minutes(56));
  EXPECT_EQ(cache.Get()->access_key_id, "K2");
  // ... but not expired ones.
  clock.Advance(absl::Minutes(5));
  EXPECT_EQ(cache.Get().status().code(), absl::StatusCode::kUnavailable);
}

TEST(WebIdentityCredentialsTest, NotConfiguredIsNotFoundAndMissingTokenFileFails) {
  HttpTransport transport;
  FakeClock clock;
  AwsClient sts({.transport = transport, .clock = clock},
                {.service = kSts, .region = "us-east-1", .endpoint = "http://127.0.0.1:1"});
  EXPECT_EQ(WebIdentityCredentialsProvider(sts, MapEnv({})).Get().status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(WebIdentityCredentialsProvider(
                sts, MapEnv({{"AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/r"},
                             {"AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent/token"}}))
                .Get()
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(DefaultCredentialsChainTest, EnvironmentBeforeFilesAndNothingIsNotFound) {
  HttpTransport transport;
  FakeClock clock;
  AwsClient sts({.transport = transport, .clock = clock},
                {.service = kSts, .region = "us-east-1", .endpoint = "http://127.0.0.1:1"});
  std::string creds = WriteTemp("chain-credentials",
                                "[default]\naws_access_key_id = FILE\naws_secret_access_key = F\n");
  auto files_only =
      MapEnv({{"AWS_SHARED_CREDENTIALS_FILE", creds}, {"AWS_CONFIG_FILE", "/nonexistent"}});
  auto from_file = DefaultCredentialsChain(sts, clock, files_only)->Get();
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  EXPECT_EQ(from_file->access_key_id, "FILE");

  auto both = MapEnv({{"AWS_SHARED_CREDENTIALS_FILE", creds},
                      {"AWS_ACCESS_KEY_ID", "ENV"},
                      {"AWS_SECRET_ACCESS_KEY", "E"}});
  EXPECT_EQ(DefaultCredentialsChain(sts, clock, both)->Get()->access_key_id, "ENV");

  // Nothing configured: NotFound naming every source and why it did not apply.
  auto nothing = MapEnv({{"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"},
                         {"AWS_CONFIG_FILE", "/nonexistent"},
                         {"AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1"}});
  auto none = DefaultCredentialsChain(sts, clock, nothing)->Get();
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  for (const char* source :
       {"environment: AWS_ACCESS_KEY_ID", "web identity: AWS_ROLE_ARN", "profile 'default'",
        "container (EKS Pod Identity, ECS)", "IMDS (http://127.0.0.1:1): not reachable"}) {
    EXPECT_TRUE(absl::StrContains(none.status().message(), source))
        << source << " in " << none.status();
  }
}

TEST(EndpointsTest, ExplicitThenServiceEnvThenGlobalEnvThenDefault) {
  EndpointOverrides explicit_ec2{{"ec2", "http://127.0.0.1:5000/"}};
  auto env = MapEnv(
      {{"AWS_ENDPOINT_URL_EC2", "http://ec2.local:1"}, {"AWS_ENDPOINT_URL", "http://all.local:2"}});
  EXPECT_EQ(*ResolveEndpoint(kEc2, "us-east-1", explicit_ec2, env), "http://127.0.0.1:5000");
  EXPECT_EQ(*ResolveEndpoint(kEc2, "us-east-1", {}, env), "http://ec2.local:1");
  EXPECT_EQ(*ResolveEndpoint(kSsm, "us-east-1", {}, env), "http://all.local:2");
  EXPECT_EQ(*ResolveEndpoint(kSsm, "eu-west-1", {}, MapEnv({})),
            "https://ssm.eu-west-1.amazonaws.com");
  EXPECT_EQ(*ResolveEndpoint(kEc2, "cn-north-1", {}, MapEnv({})),
            "https://ec2.cn-north-1.amazonaws.com.cn");
  EXPECT_EQ(*ResolveEndpoint(kIam, "eu-west-1", {}, MapEnv({})), "https://iam.amazonaws.com");
  EXPECT_EQ(*ResolveEndpoint(kPricing, "eu-west-1", {}, MapEnv({})),
            "https://api.pricing.us-east-1.amazonaws.com");
  EXPECT_EQ(*ResolveEndpoint(kEc2, "us-east-1", {},
                             MapEnv({{"AWS_ENDPOINT_URL_EC2", "http://x:1"},
                                     {"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true"}})),
            "https://ec2.us-east-1.amazonaws.com");
  EXPECT_EQ(ResolveEndpoint(kEc2, "us-east-1", {{"EC2", "ftp://x"}}, env).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveEndpoint(kEc2, "", {}, MapEnv({})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SigningRegion(kIam, "eu-west-1"), "us-east-1");
}

// IMDSv2 on an in-process server that, like EC2's, refuses GETs without a session token.
class ImdsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.server().Put(
        "/latest/api/token", [this](const httplib::Request& req, httplib::Response& res) {
          ttl_header_ = req.get_header_value("X-aws-ec2-metadata-token-ttl-seconds");
          res.set_content("TOKEN-123", "text/plain");
        });
    server_.server().Get("/latest/meta-data/placement/region",
                         [](const httplib::Request& req, httplib::Response& res) {
                           if (req.get_header_value("X-aws-ec2-metadata-token") != "TOKEN-123") {
                             res.status = 401;
                             return;
                           }
                           res.set_content("eu-central-1\n", "text/plain");
                         });
    ASSERT_TRUE(server_.Start());
  }
  testing::TestServer server_;
  HttpTransport transport_;
  std::string ttl_header_;
};

TEST_F(ImdsTest, RegionComesFromImdsV2WithAToken) {
  ImdsClient imds(transport_, {.endpoint = server_.url()});
  auto region = ResolveRegion("", MapEnv({}), &imds);
  ASSERT_TRUE(region.ok()) << region.status();
  EXPECT_EQ(*region, "eu-central-1");
  EXPECT_EQ(ttl_header_, "21600");
}

TEST_F(ImdsTest, EndpointFromEnvironmentAndPrecedence) {
  auto env = MapEnv({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", server_.url() + "/"}});
  ImdsClient imds(transport_, {}, env);
  EXPECT_EQ(*ResolveRegion("", env, &imds), "eu-central-1");
  EXPECT_EQ(*ResolveRegion("ap-south-1", env, &imds), "ap-south-1");
  EXPECT_EQ(
      *ResolveRegion("", MapEnv({{"AWS_REGION", "us-west-2"}, {"AWS_DEFAULT_REGION", "x"}}), &imds),
      "us-west-2");
  EXPECT_EQ(*ResolveRegion("", MapEnv({{"AWS_DEFAULT_REGION", "us-east-2"}}), &imds), "us-east-2");
  EXPECT_EQ(
      ResolveRegion("", MapEnv({{"AWS_EC2_METADATA_DISABLED", "true"}}), &imds).status().code(),
      absl::StatusCode::kNotFound);
  EXPECT_EQ(
      ImdsClient(transport_, {.endpoint = server_.url()}).Get("meta-data/nothing").status().code(),
      absl::StatusCode::kNotFound);
}

TEST(ImdsUnreachableTest, RegionIsNotFoundNamingTheEndpoint) {
  HttpTransport transport({.connect_timeout = absl::Seconds(1), .timeout = absl::Seconds(2)});
  ImdsClient imds(transport, {.endpoint = "http://127.0.0.1:1"});
  auto region = ResolveRegion("", MapEnv({}), &imds);
  EXPECT_EQ(region.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(region.status().message().find("127.0.0.1:1"), std::string::npos);
}

// The EKS Pod Identity agent: a loopback stand-in that serves credentials at /v1/credentials only
// to requests carrying the expected Authorization token, numbered by fetch and expiring
// `lifetime` after `clock`'s now.
class PodIdentityAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.server().Get("/v1/credentials", [this](const httplib::Request& req,
                                                   httplib::Response& res) {
      absl::MutexLock lock(&mu_);
      seen_tokens_.push_back(req.get_header_value("Authorization"));
      if (fail_next_ > 0) {
        --fail_next_;
        res.status = 500;
        return;
      }
      if (req.get_header_value("Authorization") != expected_token_) {
        res.status = 403;
        res.set_content(R"({"code":"AccessDeniedException","message":"bad token"})",
                        "application/json");
        return;
      }
      ++served_;
      res.set_content(
          Cat(R"({"AccessKeyId":"ASIAPOD)", served_, R"(","SecretAccessKey":"pod-secret",)",
              R"("Token":"pod-session","AccountId":"123456789012","Expiration":")",
              absl::FormatTime(absl::RFC3339_sec, clock_.Now() + lifetime_, absl::UTCTimeZone()),
              R"("})"),
          "application/json");
    });
    ASSERT_TRUE(server_.Start());
    token_file_ = WriteTemp("pod-identity-token", "eks-pod-identity-token-1\n");
  }
  EnvLookup Env(std::map<std::string, std::string, std::less<>> extra = {}) {
    extra.emplace("AWS_CONTAINER_CREDENTIALS_FULL_URI", server_.url() + "/v1/credentials");
    extra.emplace("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token_file_);
    return MapEnv(std::move(extra));
  }

  FakeClock clock_{absl::Now()};
  absl::Duration lifetime_ = absl::Hours(6);
  testing::TestServer server_;
  std::string token_file_;
  absl::Mutex mu_;
  std::string expected_token_ ABSL_GUARDED_BY(mu_) = "eks-pod-identity-token-1";
  std::vector<std::string> seen_tokens_ ABSL_GUARDED_BY(mu_);
  int served_ ABSL_GUARDED_BY(mu_) = 0;
  int fail_next_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST_F(PodIdentityAgentTest, CredentialsComeWithTheTokenFromTheFile) {
  auto c = ContainerCredentialsProvider(Env()).Get();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->access_key_id, "ASIAPOD1");
  EXPECT_EQ(c->secret_access_key, "pod-secret");
  EXPECT_EQ(c->session_token, "pod-session");
  ASSERT_TRUE(c->expiration.has_value());
  EXPECT_EQ(absl::ToUnixSeconds(*c->expiration),
            absl::ToUnixSeconds(clock_.Now() + absl::Hours(6)));
  EXPECT_EQ(c->source, "container:" + server_.url() + "/v1/credentials");
  absl::MutexLock lock(&mu_);
  EXPECT_EQ(seen_tokens_, std::vector<std::string>{"eks-pod-identity-token-1"});
}

TEST_F(PodIdentityAgentTest, TheTokenFileIsReadAgainAndWinsOverTheInlineToken) {
  ContainerCredentialsProvider provider(Env({{"AWS_CONTAINER_AUTHORIZATION_TOKEN", "inline"}}));
  ASSERT_TRUE(provider.Get().ok());
  // EKS rotates the projected token: the next fetch presents the new one.
  WriteTemp("pod-identity-token", "eks-pod-identity-token-2");
  {
    absl::MutexLock lock(&mu_);
    expected_token_ = "eks-pod-identity-token-2";
  }
  ASSERT_TRUE(provider.Get().ok());
  // Without the file, the inline token is sent.
  auto inline_only =
      MapEnv({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", server_.url() + "/v1/credentials"},
              {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "inline"}});
  EXPECT_EQ(ContainerCredentialsProvider(inline_only).Get().status().code(),
            absl::StatusCode::kPermissionDenied);
  absl::MutexLock lock(&mu_);
  EXPECT_EQ(seen_tokens_, (std::vector<std::string>{"eks-pod-identity-token-1",
                                                    "eks-pod-identity-token-2", "inline"}));
}

TEST_F(PodIdentityAgentTest, ARefusedTokenIsPermissionDeniedWithTheAgentsMessage) {
  {
    absl::MutexLock lock(&mu_);
    expected_token_ = "another";
  }
  auto c = ContainerCredentialsProvider(Env()).Get();
  EXPECT_EQ(c.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(absl::StrContains(c.status().message(), "AccessDeniedException: bad token"))
      << c.status();
}

TEST_F(PodIdentityAgentTest, AServerErrorIsRetried) {
  {
    absl::MutexLock lock(&mu_);
    fail_next_ = 2;
  }
  auto c = ContainerCredentialsProvider(Env()).Get();
  ASSERT_TRUE(c.ok()) << c.status();
  {
    absl::MutexLock lock(&mu_);
    EXPECT_EQ(seen_tokens_.size(), 3u);
    fail_next_ = 3;
  }
  EXPECT_EQ(ContainerCredentialsProvider(Env()).Get().status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(PodIdentityAgentTest, TheChainRefreshesBeforeTheCredentialsExpire) {
  lifetime_ = absl::Minutes(15);
  HttpTransport transport;
  AwsClient sts({.transport = transport, .clock = clock_},
                {.service = kSts, .region = "us-east-1", .endpoint = "http://127.0.0.1:1"});
  // Pod Identity sets only the container variables: the chain passes over the environment, web
  // identity and the (absent) shared files to the agent.
  auto chain = DefaultCredentialsChain(
      sts, clock_,
      Env({{"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"}, {"AWS_CONFIG_FILE", "/nonexistent"}}));
  EXPECT_EQ(chain->Get()->access_key_id, "ASIAPOD1");
  clock_.Advance(absl::Minutes(9));
  EXPECT_EQ(chain->Get()->access_key_id, "ASIAPOD1");
  clock_.Advance(absl::Minutes(2));  // 11 of 15 minutes: inside the 5-minute refresh window
  EXPECT_EQ(chain->Get()->access_key_id, "ASIAPOD2");
  clock_.Advance(absl::Minutes(16));  // past the second expiry
  EXPECT_EQ(chain->Get()->access_key_id, "ASIAPOD3");
}

TEST(ContainerCredentialsUrlTest, RelativeUrisGoToTheEcsAgentAndPlainHttpOnlyToAgentsOrLoopback) {
  auto url = [](std::map<std::string, std::string, std::less<>> env) {
    return ContainerCredentialsUrl(MapEnv(std::move(env)));
  };
  EXPECT_EQ(*url({{"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/abc"}}),
            "http://169.254.170.2/v2/credentials/abc");
  EXPECT_EQ(*url({{"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/rel"},
                  {"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1/full"}}),
            "http://169.254.170.2/rel");
  for (const char* ok :
       {"http://169.254.170.23/v1/credentials", "http://[fd00:ec2::23]/v1/credentials",
        "http://169.254.170.2/creds", "http://127.0.0.1:8080/c", "http://localhost/c",
        "http://[::1]:80/c", "https://creds.example.com/c"}) {
    EXPECT_EQ(*url({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", ok}}), ok);
  }
  for (const char* refused :
       {"http://creds.example.com/c", "http://169.254.169.254/c", "ftp://127.0.0.1/c"}) {
    EXPECT_EQ(url({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", refused}}).status().code(),
              absl::StatusCode::kInvalidArgument)
        << refused;
  }
  EXPECT_EQ(url({}).status().code(), absl::StatusCode::kNotFound);
}

// IMDS serving an instance role, refusing GETs without the session token as EC2 does.
class InstanceRoleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.server().Put("/latest/api/token", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("IMDS-TOKEN", "text/plain");
    });
    auto guarded = [this](std::string body) {
      return [this, body](const httplib::Request& req, httplib::Response& res) {
        if (req.get_header_value("X-aws-ec2-metadata-token") != "IMDS-TOKEN") {
          res.status = 401;
          return;
        }
        if (!has_role_) {
          res.status = 404;
          return;
        }
        res.set_content(body, "text/plain");
      };
    };
    server_.server().Get("/latest/meta-data/iam/security-credentials/",
                         guarded("KarpenterNodeRole-dovetail\n"));
    server_.server().Get("/latest/meta-data/iam/security-credentials/KarpenterNodeRole-dovetail",
                         guarded(R"({"Code":"Success","Type":"AWS-HMAC","AccessKeyId":"ASIAIMDS",)"
                                 R"("SecretAccessKey":"imds-secret","Token":"imds-session",)"
                                 R"("Expiration":"2026-12-05T12:00:00Z"})"));
    ASSERT_TRUE(server_.Start());
  }
  testing::TestServer server_;
  std::atomic<bool> has_role_ = true;
};

TEST_F(InstanceRoleTest, CredentialsOfTheInstanceRoleOverImdsV2) {
  auto env = MapEnv({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", server_.url()}});
  auto c = InstanceProfileCredentialsProvider(env).Get();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->access_key_id, "ASIAIMDS");
  EXPECT_EQ(c->secret_access_key, "imds-secret");
  EXPECT_EQ(c->session_token, "imds-session");
  EXPECT_EQ(c->source, "imds:KarpenterNodeRole-dovetail");
  EXPECT_EQ(c->expiration, absl::FromUnixSeconds(1796472000));  // 2026-12-05T12:00:00Z
}

TEST_F(InstanceRoleTest, NoRoleDisabledOrUnreachableIsNotFound) {
  has_role_ = false;
  auto env = MapEnv({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", server_.url()}});
  auto none = InstanceProfileCredentialsProvider(env).Get();
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(none.status().message(), "no IAM role")) << none.status();
  has_role_ = true;
  EXPECT_EQ(InstanceProfileCredentialsProvider(
                MapEnv({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", server_.url()},
                        {"AWS_EC2_METADATA_DISABLED", "true"}}))
                .Get()
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  auto unreachable = InstanceProfileCredentialsProvider(
                         MapEnv({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1"}}))
                         .Get();
  EXPECT_EQ(unreachable.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(unreachable.status().message(), "hop limit"))
      << unreachable.status();
}

TEST_F(InstanceRoleTest, TheInstanceRoleIsTheChainsLastSource) {
  HttpTransport transport;
  FakeClock clock;
  AwsClient sts({.transport = transport, .clock = clock},
                {.service = kSts, .region = "us-east-1", .endpoint = "http://127.0.0.1:1"});
  auto c = DefaultCredentialsChain(sts, clock,
                                   MapEnv({{"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"},
                                           {"AWS_CONFIG_FILE", "/nonexistent"},
                                           {"AWS_EC2_METADATA_SERVICE_ENDPOINT", server_.url()}}))
               ->Get();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->source, "imds:KarpenterNodeRole-dovetail");
}

TEST(ProcessCredentialsTest, ReadsVersionOneJsonFromTheCommand) {
  auto c = ProcessCredentialsProvider(
               R"(printf '{"Version": 1, "AccessKeyId": "AKPROC", "SecretAccessKey": "s",)"
               R"( "SessionToken": "t", "Expiration": "2026-12-05T12:00:00Z"}')",
               "profile:proc")
               .Get();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->access_key_id, "AKPROC");
  EXPECT_EQ(c->session_token, "t");
  EXPECT_EQ(c->source, "profile:proc");
  EXPECT_EQ(c->expiration, absl::FromUnixSeconds(1796472000));
}

TEST(ProcessCredentialsTest, FailuresAndBadOutputAreErrors) {
  EXPECT_EQ(ProcessCredentialsProvider("exit 2", "p").Get().status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(ProcessCredentialsProvider("echo not json", "p").Get().status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ProcessCredentialsProvider(
                R"(echo '{"Version": 2, "AccessKeyId": "A", "SecretAccessKey": "s"}')", "p")
                .Get()
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      ProcessCredentialsProvider("sleep 30", "p", absl::Milliseconds(200)).Get().status().code(),
      absl::StatusCode::kUnavailable);
}

TEST(ProfileCredentialsTest, CredentialProcessAndConfigurationErrors) {
  std::string config = WriteTemp(
      "profiles-config",
      "[profile proc]\n"
      R"(credential_process = printf '{"Version":1,"AccessKeyId":"AKP","SecretAccessKey":"s"}')"
      "\n"
      "[profile nosource]\nrole_arn = arn:aws:iam::123456789012:role/r\n"
      "[profile a]\nrole_arn = arn:aws:iam::123456789012:role/a\nsource_profile = b\n"
      "[profile b]\nrole_arn = arn:aws:iam::123456789012:role/b\nsource_profile = a\n"
      "[profile mfa]\nrole_arn = arn:aws:iam::123456789012:role/r\nsource_profile = proc\n"
      "mfa_serial = arn:aws:iam::123456789012:mfa/u\n"
      "[profile missing-source]\nrole_arn = arn:aws:iam::123456789012:role/r\n"
      "source_profile = nowhere\n"
      "[profile both]\nrole_arn = arn:aws:iam::123456789012:role/r\nsource_profile = proc\n"
      "credential_source = Environment\n"
      "[profile badsource]\nrole_arn = arn:aws:iam::123456789012:role/r\n"
      "credential_source = Somewhere\n"
      "[profile short]\nrole_arn = arn:aws:iam::123456789012:role/r\nsource_profile = proc\n"
      "duration_seconds = 60\n"
      "[profile empty]\nregion = us-east-1\n");
  HttpTransport transport;
  FakeClock clock;
  AwsClient sts({.transport = transport, .clock = clock},
                {.service = kSts, .region = "us-east-1", .endpoint = "http://127.0.0.1:1"});
  auto get = [&](const std::string& profile, AwsClient* client) {
    return ProfileCredentialsProvider(MapEnv({{"AWS_CONFIG_FILE", config},
                                              {"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"},
                                              {"AWS_PROFILE", profile}}),
                                      client)
        .Get();
  };
  auto proc = get("proc", &sts);
  ASSERT_TRUE(proc.ok()) << proc.status();
  EXPECT_EQ(proc->access_key_id, "AKP");
  EXPECT_EQ(proc->source, "profile:proc");
  for (const char* bad : {"nosource", "mfa", "missing-source", "both", "badsource", "short"}) {
    EXPECT_EQ(get(bad, &sts).status().code(), absl::StatusCode::kInvalidArgument)
        << bad << ": " << get(bad, &sts).status();
  }
  auto cycle = get("a", &sts);
  EXPECT_EQ(cycle.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(cycle.status().message(), "a -> b -> a")) << cycle.status();
  EXPECT_EQ(get("mfa", nullptr).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(get("short", nullptr).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(get("nosource", nullptr).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(get("empty", &sts).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace dovetail::providers::aws
