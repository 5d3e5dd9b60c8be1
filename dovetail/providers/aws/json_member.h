// The JSON look-up shared by the AWS readers of JSON documents (pricing_client.cc for Pricing API
// price lists, interruption_messages.cc for EventBridge messages).
#pragma once

#include "nlohmann/json.hpp"

namespace dovetail::providers::aws::internal {

// The member `key` of `obj` when `obj` is an object that has it; nullptr otherwise.
inline const nlohmann::json* Member(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

}  // namespace dovetail::providers::aws::internal
