// Precompiled for every product target (cmake/Precompiled.cmake): the standard, Abseil and JSON
// headers that most translation units include, directly or through dovetail/apis/core/codec.h.
// Only headers from outside the tree belong here, so an edit to Dovetail's own headers never
// rebuilds the precompiled header.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
