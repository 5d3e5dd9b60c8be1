// The JSON look-up shared by the AWS readers of JSON documents (pricing_client.cc for Pricing API
// price lists, interruption_messages.cc for EventBridge messages, the credential sources that read
// JSON replies).
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace dovetail::providers::aws::internal {

// The member `key` of `obj` when `obj` is an object that has it; nullptr otherwise.
inline const nlohmann::json* Member(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// The string member `key` of `obj`; empty when it is absent or not a string.
inline std::string StringMember(const nlohmann::json& obj, const char* key) {
  const nlohmann::json* v = Member(obj, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace dovetail::providers::aws::internal
