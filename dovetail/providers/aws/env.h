// Environment lookup as a value, so credential, region and endpoint resolution can be tested
// without touching the process environment. ProcessEnv() reads getenv; MapEnv() a fixed map.
// Thread-safe as long as nothing calls setenv concurrently (Dovetail never does).
#pragma once

#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace dovetail::providers::aws {

// The value of a variable; nullopt when unset. An empty value counts as unset, as the SDKs do.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

inline EnvLookup ProcessEnv() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
}

inline EnvLookup MapEnv(std::map<std::string, std::string, std::less<>> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
}

}  // namespace dovetail::providers::aws
