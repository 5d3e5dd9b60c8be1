// The AWS Query protocol (EC2's dialect and the generic one STS, IAM and SQS speak): an action
// and its parameters form-encoded into a POST body, an XML response parsed with pugixml.
// Parameter lists are flattened the EC2 way: Filter.1.Name, Filter.1.Value.1, InstanceType.1, ...
// Free functions; thread-safe as AwsClient is.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/providers/aws/aws_client.h"
#include "pugixml.hpp"

namespace dovetail::providers::aws {

using QueryParams = std::vector<std::pair<std::string, std::string>>;

struct Filter {
  std::string name;  // "tag:Name", "tag-key", "vpc-id", "location", ...
  std::vector<std::string> values;
};

// Filter.N.Name / Filter.N.Value.M (N, M from 1).
void AddFilters(QueryParams& params, const std::vector<Filter>& filters);
// <prefix>.N = value (N from 1).
void AddList(QueryParams& params, std::string_view prefix, const std::vector<std::string>& values);

// application/x-www-form-urlencoded body: Action, Version, then `params` in order.
std::string FormEncode(std::string_view action, std::string_view version,
                       const QueryParams& params);

// Sends the action through `client` (API name = action) and parses the response. Errors: those of
// AwsClient::Send; Internal for a 2xx body that is not XML. With `as`, the request is signed with
// those credentials (AwsClient::SendAs).
absl::StatusOr<std::unique_ptr<pugi::xml_document>> CallQuery(AwsClient& client,
                                                              std::string_view action,
                                                              std::string_view version,
                                                              const QueryParams& params,
                                                              const AwsCredentials* as = nullptr);

// XML helpers: the text of a child (empty when absent) and numbers parsed leniently (0 / false).
std::string Text(const pugi::xml_node& node, const char* child);
int64_t Int(const pugi::xml_node& node, const char* child);
double Double(const pugi::xml_node& node, const char* child);
bool Bool(const pugi::xml_node& node, const char* child);
// The text of every <item> under node/child (EC2's lists).
std::vector<std::string> Items(const pugi::xml_node& node, const char* child);

}  // namespace dovetail::providers::aws
