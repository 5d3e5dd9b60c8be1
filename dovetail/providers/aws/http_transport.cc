#include "dovetail/providers/aws/http_transport.h"

#include <curl/curl.h>

#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::providers::aws {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t WriteBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

size_t WriteHeader(char* data, size_t size, size_t n, void* user) {
  std::string_view line(data, size * n);
  auto* headers = static_cast<HeaderList*>(user);
  if (line.starts_with("HTTP/")) {
    headers->clear();  // a new response (after 100-continue or a redirect)
  } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
    headers->emplace_back(std::string(line.substr(0, colon)),
                          std::string(absl::StripAsciiWhitespace(AsAbsl(line.substr(colon + 1)))));
  }
  return size * n;
}

}  // namespace

std::string HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (absl::EqualsIgnoreCase(k, AsAbsl(name))) return v;
  }
  return "";
}

HttpTransport::HttpTransport(Options options) : options_(std::move(options)) { GlobalInit(); }

absl::StatusOr<HttpResponse> HttpTransport::Send(const AwsRequest& request) const {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");
  HttpResponse response;
  const std::string url = request.Url();
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(curl, CURLOPT_USERAGENT, options_.user_agent.c_str());
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(options_.connect_timeout)));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(options_.timeout)));
  if (!options_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options_.ca_file.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (request.method == "POST" || request.method == "PUT" || !request.body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  }
  curl_slist* headers = nullptr;
  for (const auto& [k, v] : request.headers) {
    // Host comes from the URL; curl sends it (and must, for the signature to match).
    if (absl::EqualsIgnoreCase(k, "host")) continue;
    headers = curl_slist_append(headers, absl::StrCat(k, ": ", v).c_str());
  }
  headers = curl_slist_append(headers, "Expect:");
  // curl adds "Content-Type: application/x-www-form-urlencoded" to POSTs without one.
  bool has_content_type = false;
  for (const auto& [k, v] : request.headers)
    has_content_type |= absl::EqualsIgnoreCase(k, "content-type");
  if (!has_content_type) headers = curl_slist_append(headers, "Content-Type:");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &WriteBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &WriteHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response.headers);
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  const CURLcode rc = curl_easy_perform(curl);
  long code = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) {
    return absl::UnavailableError(
        absl::StrCat(request.method, " ", url, ": ", error[0] ? error : curl_easy_strerror(rc)));
  }
  response.status = static_cast<int>(code);
  return response;
}

}  // namespace dovetail::providers::aws
