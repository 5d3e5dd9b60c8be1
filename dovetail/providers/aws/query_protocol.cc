#include "dovetail/providers/aws/query_protocol.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::providers::aws {

void AddFilters(QueryParams& params, const std::vector<Filter>& filters) {
  for (size_t i = 0; i < filters.size(); ++i) {
    const std::string prefix = absl::StrCat("Filter.", i + 1);
    params.emplace_back(prefix + ".Name", filters[i].name);
    for (size_t j = 0; j < filters[i].values.size(); ++j) {
      params.emplace_back(absl::StrCat(prefix, ".Value.", j + 1), filters[i].values[j]);
    }
  }
}

void AddList(QueryParams& params, std::string_view prefix, const std::vector<std::string>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    params.emplace_back(Cat(prefix, ".", i + 1), values[i]);
  }
}

namespace {

// application/x-www-form-urlencoded as botocore writes it (Python's urlencode): RFC 3986
// unreserved characters kept, space as '+', every other byte %XX. moto verifies signatures over
// a body it re-encodes this way, and it is what the AWS SDKs send.
std::string FormValue(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == ' ') {
      out.push_back('+');
    } else {
      out += UriEncode(std::string_view(&c, 1));
    }
  }
  return out;
}

}  // namespace

std::string FormEncode(std::string_view action, std::string_view version,
                       const QueryParams& params) {
  std::string body = Cat("Action=", FormValue(action), "&Version=", FormValue(version));
  for (const auto& [k, v] : params) CatTo(&body, "&", FormValue(k), "=", FormValue(v));
  return body;
}

absl::StatusOr<std::unique_ptr<pugi::xml_document>> CallQuery(AwsClient& client,
                                                              std::string_view action,
                                                              std::string_view version,
                                                              const QueryParams& params,
                                                              const AwsCredentials* as) {
  AwsRequest request;
  request.method = "POST";
  request.path = "/";
  request.headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
  request.body = FormEncode(action, version, params);
  auto response = as != nullptr ? client.SendAs(action, std::move(request), *as)
                                : client.Send(action, std::move(request));
  if (!response.ok()) return response.status();
  auto doc = std::make_unique<pugi::xml_document>();
  pugi::xml_parse_result parsed = doc->load_buffer(response->body.data(), response->body.size());
  if (!parsed) {
    return absl::InternalError(Cat(client.options().service.signing_name, ":", action,
                                   ": response is not XML: ", parsed.description()));
  }
  return doc;
}

std::string Text(const pugi::xml_node& node, const char* child) {
  return node.child(child).text().as_string();
}

int64_t Int(const pugi::xml_node& node, const char* child) {
  return node.child(child).text().as_llong(0);
}

double Double(const pugi::xml_node& node, const char* child) {
  return node.child(child).text().as_double(0.0);
}

bool Bool(const pugi::xml_node& node, const char* child) {
  return node.child(child).text().as_bool(false);
}

std::vector<std::string> Items(const pugi::xml_node& node, const char* child) {
  std::vector<std::string> out;
  for (pugi::xml_node item : node.child(child).children("item"))
    out.emplace_back(item.text().as_string());
  return out;
}

}  // namespace dovetail::providers::aws
