#include "dovetail/providers/aws/credentials.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "dovetail/providers/aws/endpoints.h"
#include "dovetail/providers/aws/region.h"
#include "dovetail/providers/aws/test_server.h"
#include "dovetail/providers/aws/web_identity_credentials.h"
#include "gtest/gtest.h"

namespace dovetail::providers::aws {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string dir = ::testing::TempDir() + "/aws_credentials_test";
  std::filesystem::create_directories(dir);
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

  auto nothing = MapEnv(
      {{"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"}, {"AWS_CONFIG_FILE", "/nonexistent"}});
  EXPECT_EQ(DefaultCredentialsChain(sts, clock, nothing)->Get().status().code(),
            absl::StatusCode::kNotFound);
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

}  // namespace
}  // namespace dovetail::providers::aws
