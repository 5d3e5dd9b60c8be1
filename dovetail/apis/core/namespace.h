// Namespace (core/v1): only its metadata (labels, for pod affinity namespaceSelector) is modelled;
// spec and status are kept in unknown_fields. Plain data with a JSON codec (codec.h);
// thread-compatible.
#pragma once

#include <string>

#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/meta.h"
#include "nlohmann/json.hpp"

namespace dovetail::apis::core {

struct Namespace {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

void DescribeFields(FieldCodec& c, Namespace& v);

}  // namespace dovetail::apis::core
