#include "dovetail/providers/aws/sigv4.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace dovetail::providers::aws {
namespace {

absl::Time At(std::string_view amz_date) {  // yyyymmddThhmmssZ
  auto num = [&](size_t pos, size_t len) {
    return std::stoi(std::string(amz_date.substr(pos, len)));
  };
  return absl::FromCivil(
      absl::CivilSecond(num(0, 4), num(4, 2), num(6, 2), num(9, 2), num(11, 2), num(13, 2)),
      absl::UTCTimeZone());
}

std::string Header(const AwsRequest& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "<absent>";
}

const AwsCredentials kIamExampleCredentials{
    .access_key_id = "AKIDEXAMPLE",
    .secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"};

// AWS General Reference, "Signature Version 4 signing process": the IAM ListUsers example.
AwsRequest IamListUsers() {
  AwsRequest r;
  r.method = "GET";
  r.endpoint = "https://iam.amazonaws.com";
  r.path = "/";
  r.query = {{"Action", "ListUsers"}, {"Version", "2010-05-08"}};
  r.headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
  return r;
}

SigningParams IamParams() {
  return {.region = "us-east-1", .service = "iam", .time = At("20150830T123600Z")};
}

TEST(SigV4Test, IamListUsersCanonicalRequestMatchesThePublishedExample) {
  AwsRequest r = IamListUsers();
  r.headers.emplace_back("Host", "iam.amazonaws.com");
  r.headers.emplace_back("X-Amz-Date", "20150830T123600Z");
  std::string signed_headers;
  std::string canonical = CanonicalRequest(r, IamParams(), &signed_headers);
  EXPECT_EQ(canonical,
            "GET\n/\nAction=ListUsers&Version=2010-05-08\n"
            "content-type:application/x-www-form-urlencoded; charset=utf-8\n"
            "host:iam.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
            "content-type;host;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(signed_headers, "content-type;host;x-amz-date");
  EXPECT_EQ(Sha256Hex(canonical),
            "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59");
  EXPECT_EQ(StringToSign(canonical, IamParams()),
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/iam/aws4_request\n"
            "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59");
}

TEST(SigV4Test, IamListUsersSigningKeyMatchesThePublishedExample) {
  EXPECT_EQ(HexEncode(SigningKey(kIamExampleCredentials.secret_access_key, IamParams())),
            "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9");
}

TEST(SigV4Test, IamListUsersAuthorizationHeaderMatchesThePublishedExample) {
  AwsRequest r = IamListUsers();
  SignRequest(r, kIamExampleCredentials, IamParams());
  EXPECT_EQ(Header(r, "Host"), "iam.amazonaws.com");
  EXPECT_EQ(Header(r, "X-Amz-Date"), "20150830T123600Z");
  EXPECT_EQ(Header(r, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
            "SignedHeaders=content-type;host;x-amz-date, "
            "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
  EXPECT_EQ(Header(r, "X-Amz-Security-Token"), "<absent>");
}

TEST(SigV4Test, SigningTwiceReplacesTheAuthorizationHeader) {
  AwsRequest r = IamListUsers();
  SignRequest(r, kIamExampleCredentials, IamParams());
  SignRequest(r, kIamExampleCredentials, IamParams());
  int authorizations = 0;
  for (const auto& [k, v] : r.headers) authorizations += (k == "Authorization");
  EXPECT_EQ(authorizations, 1);
  EXPECT_TRUE(absl::StrContains(
      Header(r, "Authorization"),
      "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"));
}

// The SigV4 test suite's get-vanilla case (service "service", host example.amazonaws.com).
TEST(SigV4Test, TestSuiteGetVanilla) {
  AwsRequest r{.method = "GET", .endpoint = "https://example.amazonaws.com", .path = "/"};
  SignRequest(r, kIamExampleCredentials,
              {.region = "us-east-1", .service = "service", .time = At("20150830T123600Z")});
  EXPECT_EQ(Header(r, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=host;x-amz-date, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

const AwsCredentials kS3ExampleCredentials{
    .access_key_id = "AKIAIOSFODNN7EXAMPLE",
    .secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"};

// Amazon S3 API Reference, "Signature calculations for the Authorization header": GET Object.
TEST(SigV4Test, S3GetObjectExample) {
  AwsRequest r{
      .method = "GET", .endpoint = "https://examplebucket.s3.amazonaws.com", .path = "/test.txt"};
  r.headers = {
      {"Range", "bytes=0-9"},
      {"x-amz-content-sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}};
  SigningParams params{.region = "us-east-1",
                       .service = "s3",
                       .time = At("20130524T000000Z"),
                       .double_encode_path = false};
  r.headers.emplace_back("Host", "examplebucket.s3.amazonaws.com");
  r.headers.emplace_back("x-amz-date", "20130524T000000Z");
  std::string canonical = CanonicalRequest(r, params, nullptr);
  EXPECT_EQ(Sha256Hex(canonical),
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  EXPECT_EQ(Signature(r, kS3ExampleCredentials, params),
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

// Amazon S3 API Reference, "Authenticating requests: using query parameters": the presigned URL.
TEST(SigV4Test, S3PresignedUrlExample) {
  AwsRequest r{
      .method = "GET", .endpoint = "https://examplebucket.s3.amazonaws.com", .path = "/test.txt"};
  PresignRequest(r, kS3ExampleCredentials,
                 {.region = "us-east-1",
                  .service = "s3",
                  .time = At("20130524T000000Z"),
                  .double_encode_path = false,
                  .payload_hash = "UNSIGNED-PAYLOAD"},
                 absl::Hours(24));
  EXPECT_EQ(r.Url(),
            "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
            "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400"
            "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
            "&X-Amz-SignedHeaders=host");
}

TEST(SigV4Test, SessionTokenIsSentAndSigned) {
  AwsCredentials creds = kIamExampleCredentials;
  creds.session_token = "token/with+chars=";
  AwsRequest r = IamListUsers();
  SignRequest(r, creds, IamParams());
  EXPECT_EQ(Header(r, "X-Amz-Security-Token"), "token/with+chars=");
  EXPECT_TRUE(
      absl::StrContains(Header(r, "Authorization"),
                        "SignedHeaders=content-type;host;x-amz-date;x-amz-security-token,"));
  EXPECT_FALSE(absl::StrContains(Header(r, "Authorization"), "5d672d79c15b13162d92"));

  AwsRequest q{.method = "GET", .endpoint = "https://sqs.us-east-1.amazonaws.com", .path = "/"};
  PresignRequest(q, creds, IamParams(), absl::Minutes(5));
  EXPECT_TRUE(absl::StrContains(q.Url(), "X-Amz-Security-Token=token%2Fwith%2Bchars%3D"));
}

TEST(SigV4Test, CanonicalQuerySortsAndEncodes) {
  EXPECT_EQ(CanonicalQueryString({{"b", "x y"}, {"a", "~/*"}, {"a", "1"}}),
            "a=1&a=~%2F%2A&b=x%20y");
  EXPECT_EQ(UriEncode("/a b/c", true), "/a%20b/c");
}

TEST(SigV4Test, HostHeaderDropsDefaultPortsOnly) {
  EXPECT_EQ((AwsRequest{.endpoint = "https://ec2.us-east-1.amazonaws.com:443"}).HostHeader(),
            "ec2.us-east-1.amazonaws.com");
  EXPECT_EQ((AwsRequest{.endpoint = "http://127.0.0.1:5000"}).HostHeader(), "127.0.0.1:5000");
  EXPECT_EQ((AwsRequest{.endpoint = "http://localhost:80"}).HostHeader(), "localhost");
}

TEST(SigV4Test, HeaderValuesAreTrimmedAndDuplicatesJoined) {
  AwsRequest r{.method = "GET", .endpoint = "https://h", .path = "/"};
  r.headers = {{"X-Custom", "  a   b  "}, {"x-custom", "c"}, {"Host", "h"}};
  std::string canonical = CanonicalRequest(r, IamParams(), nullptr);
  EXPECT_TRUE(absl::StrContains(canonical, "host:h\nx-custom:a b,c\n")) << canonical;
}

}  // namespace
}  // namespace dovetail::providers::aws
