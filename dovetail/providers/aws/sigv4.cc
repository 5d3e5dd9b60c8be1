#include "dovetail/providers/aws/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::providers::aws {
namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";

bool IsUnreserved(unsigned char c) {
  return std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~';
}

// Lower-case name; value trimmed with inner runs of spaces collapsed to one.
std::string CanonicalHeaderValue(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

bool IsUnsignedHeader(std::string_view lower_name) {
  return lower_name == "authorization" || lower_name == "user-agent" || lower_name == "expect" ||
         lower_name == "content-length" || lower_name == "x-amzn-trace-id";
}

void RemoveHeader(HeaderList& headers, std::string_view name) {
  std::erase_if(headers,
                [&](const auto& h) { return absl::EqualsIgnoreCase(h.first, AsAbsl(name)); });
}

bool HasHeader(const HeaderList& headers, std::string_view name) {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto& h) { return absl::EqualsIgnoreCase(h.first, AsAbsl(name)); });
}

}  // namespace

std::string AwsRequest::Url() const {
  std::string url = endpoint + path;
  if (!query.empty()) url += "?" + CanonicalQueryString(query);
  return url;
}

std::string AwsRequest::HostHeader() const {
  std::string_view rest = endpoint;
  bool https = true;
  if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
  } else if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
    https = false;
  }
  if (auto slash = rest.find('/'); slash != std::string_view::npos) rest = rest.substr(0, slash);
  if (auto colon = rest.rfind(':'); colon != std::string_view::npos && rest.back() != ']') {
    std::string_view port = rest.substr(colon + 1);
    if ((https && port == "443") || (!https && port == "80")) rest = rest.substr(0, colon);
  }
  return std::string(rest);
}

std::string UriEncode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (IsUnreserved(c) || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

std::string HexEncode(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xF]);
  }
  return out;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return HexEncode(std::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string AmzDate(absl::Time t) {
  return absl::FormatTime("%Y%m%dT%H%M%SZ", t, absl::UTCTimeZone());
}
std::string AmzDay(absl::Time t) { return absl::FormatTime("%Y%m%d", t, absl::UTCTimeZone()); }

std::string CanonicalQueryString(const std::vector<std::pair<std::string, std::string>>& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(query.size());
  for (const auto& [k, v] : query) encoded.emplace_back(UriEncode(k), UriEncode(v));
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [k, v] : encoded) {
    if (!out.empty()) out.push_back('&');
    out += k;
    out.push_back('=');
    out += v;
  }
  return out;
}

std::string CanonicalRequest(const AwsRequest& request, const SigningParams& params,
                             std::string* signed_headers) {
  std::map<std::string, std::string> headers;
  for (const auto& [name, value] : request.headers) {
    std::string lower = absl::AsciiStrToLower(AsAbsl(name));
    if (IsUnsignedHeader(lower)) continue;
    std::string canonical = CanonicalHeaderValue(value);
    auto [it, inserted] = headers.emplace(lower, canonical);
    if (!inserted) it->second += "," + canonical;
  }
  std::string canonical_headers;
  std::string names;
  for (const auto& [name, value] : headers) {
    CatTo(&canonical_headers, name, ":", value, "\n");
    if (!names.empty()) names.push_back(';');
    names += name;
  }
  std::string path = request.path.empty() ? "/" : request.path;
  if (params.double_encode_path) path = UriEncode(path, /*keep_slash=*/true);
  std::string payload = params.payload_hash ? *params.payload_hash : Sha256Hex(request.body);
  if (signed_headers != nullptr) *signed_headers = names;
  return Cat(request.method, "\n", path, "\n", CanonicalQueryString(request.query), "\n",
             canonical_headers, "\n", names, "\n", payload);
}

std::string CredentialScope(const SigningParams& params) {
  return Cat(AmzDay(params.time), "/", params.region, "/", params.service, "/aws4_request");
}

std::string StringToSign(std::string_view canonical_request, const SigningParams& params) {
  return Cat(kAlgorithm, "\n", AmzDate(params.time), "\n", CredentialScope(params), "\n",
             Sha256Hex(canonical_request));
}

std::string SigningKey(std::string_view secret_access_key, const SigningParams& params) {
  std::string k_date = HmacSha256(Cat("AWS4", secret_access_key), AmzDay(params.time));
  std::string k_region = HmacSha256(k_date, params.region);
  std::string k_service = HmacSha256(k_region, params.service);
  return HmacSha256(k_service, "aws4_request");
}

std::string Signature(const AwsRequest& request, const AwsCredentials& credentials,
                      const SigningParams& params) {
  std::string canonical = CanonicalRequest(request, params, nullptr);
  return HexEncode(HmacSha256(SigningKey(credentials.secret_access_key, params),
                              StringToSign(canonical, params)));
}

void SignRequest(AwsRequest& request, const AwsCredentials& credentials,
                 const SigningParams& params) {
  RemoveHeader(request.headers, "Authorization");
  RemoveHeader(request.headers, "X-Amz-Date");
  RemoveHeader(request.headers, "X-Amz-Security-Token");
  if (!HasHeader(request.headers, "Host"))
    request.headers.emplace_back("Host", request.HostHeader());
  request.headers.emplace_back("X-Amz-Date", AmzDate(params.time));
  if (!credentials.session_token.empty()) {
    request.headers.emplace_back("X-Amz-Security-Token", credentials.session_token);
  }
  std::string signed_headers;
  std::string canonical = CanonicalRequest(request, params, &signed_headers);
  std::string signature = HexEncode(HmacSha256(SigningKey(credentials.secret_access_key, params),
                                               StringToSign(canonical, params)));
  request.headers.emplace_back(
      "Authorization",
      Cat(kAlgorithm, " Credential=", credentials.access_key_id, "/", CredentialScope(params),
          ", SignedHeaders=", signed_headers, ", Signature=", signature));
}

void PresignRequest(AwsRequest& request, const AwsCredentials& credentials,
                    const SigningParams& params, absl::Duration expires) {
  if (!HasHeader(request.headers, "Host"))
    request.headers.emplace_back("Host", request.HostHeader());
  std::string signed_headers;
  CanonicalRequest(request, params, &signed_headers);  // only for the header list
  request.query.emplace_back("X-Amz-Algorithm", std::string(kAlgorithm));
  request.query.emplace_back("X-Amz-Credential",
                             Cat(credentials.access_key_id, "/", CredentialScope(params)));
  request.query.emplace_back("X-Amz-Date", AmzDate(params.time));
  request.query.emplace_back("X-Amz-Expires", absl::StrCat(absl::ToInt64Seconds(expires)));
  request.query.emplace_back("X-Amz-SignedHeaders", signed_headers);
  if (!credentials.session_token.empty()) {
    request.query.emplace_back("X-Amz-Security-Token", credentials.session_token);
  }
  request.query.emplace_back("X-Amz-Signature", Signature(request, credentials, params));
}

}  // namespace dovetail::providers::aws
