// AWS Signature Version 4: canonical request, string to sign, signing key and signature, applied
// as an Authorization header or as presigned query parameters, with session tokens.
//
// Written by hand (no Debian package signs AWS requests) and kept small; it is checked against
// AWS's published examples in sigv4_test.cc. SHA-256 and HMAC come from OpenSSL.
//
// AwsRequest is the transport-level request every AWS client builds: the signer reads and extends
// its headers or query. Free functions over values; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace dovetail::providers::aws {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;             // empty: long-term credentials
  std::optional<absl::Time> expiration;  // nullopt: does not expire
  std::string source;                    // "environment", "profile:<name>", "web-identity", ...
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// One HTTP request to an AWS endpoint. `endpoint` is scheme://host[:port] (no path); `path` is the
// URI path as sent (already percent-encoded, "/" for the query protocols); `query` holds decoded
// names and values, percent-encoded when the URL is built.
struct AwsRequest {
  std::string method = "POST";
  std::string endpoint;
  std::string path = "/";
  std::vector<std::pair<std::string, std::string>> query;
  HeaderList headers;
  std::string body;

  // endpoint + path + ("?" + canonical query, when there is one).
  std::string Url() const;
  // The Host header value for `endpoint`: host, plus ":port" unless it is the scheme's default.
  std::string HostHeader() const;
};

struct SigningParams {
  std::string region;
  std::string service;  // signing name: ec2, ssm, sts, iam, sqs, pricing, s3, ...
  absl::Time time;
  // S3 signs the path as sent; every other service URI-encodes it once more.
  bool double_encode_path = true;
  // Overrides the hex SHA-256 of the body (e.g. "UNSIGNED-PAYLOAD" for presigned S3 URLs).
  std::optional<std::string> payload_hash;
};

// RFC 3986 percent-encoding as SigV4 specifies it: unreserved characters A-Z a-z 0-9 - _ . ~ kept,
// every other byte as %XX (upper-case hex); '/' kept when `keep_slash`.
std::string UriEncode(std::string_view s, bool keep_slash = false);
std::string Sha256Hex(std::string_view data);
std::string HmacSha256(std::string_view key, std::string_view data);  // raw bytes
std::string HexEncode(std::string_view bytes);

// 20150830T123600Z and 20150830.
std::string AmzDate(absl::Time t);
std::string AmzDay(absl::Time t);

// The pieces, exposed for the published test vectors. `signed_headers` receives the ';'-joined
// lower-case header names.
std::string CanonicalQueryString(const std::vector<std::pair<std::string, std::string>>& query);
std::string CanonicalRequest(const AwsRequest& request, const SigningParams& params,
                             std::string* signed_headers);
std::string CredentialScope(const SigningParams& params);
std::string StringToSign(std::string_view canonical_request, const SigningParams& params);
std::string SigningKey(std::string_view secret_access_key, const SigningParams& params);  // raw
std::string Signature(const AwsRequest& request, const AwsCredentials& credentials,
                      const SigningParams& params);

// Header auth: adds Host (if absent), X-Amz-Date, X-Amz-Security-Token (with a session token)
// and, unless the request already has it and the service needs it, nothing else; then the
// Authorization header. Existing Authorization / X-Amz-Date headers are replaced.
void SignRequest(AwsRequest& request, const AwsCredentials& credentials,
                 const SigningParams& params);

// Query auth (presigned URL): adds X-Amz-Algorithm, -Credential, -Date, -Expires,
// -SignedHeaders, -Security-Token (with a session token) and finally X-Amz-Signature to the
// query. Signs the Host header and any headers already on the request.
void PresignRequest(AwsRequest& request, const AwsCredentials& credentials,
                    const SigningParams& params, absl::Duration expires);

}  // namespace dovetail::providers::aws
