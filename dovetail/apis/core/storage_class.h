// StorageClass (storage.k8s.io/v1): provisioner, binding mode and allowed topologies — what decides
// where an unbound PVC's volume can be provisioned. Plain data with a JSON codec (codec.h);
// thread-compatible.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/meta.h"
#include "nlohmann/json.hpp"

namespace dovetail::apis::core {

enum class VolumeBindingMode { kImmediate, kWaitForFirstConsumer };

struct TopologySelectorLabelRequirement {
  std::string key;
  std::vector<std::string> values;
};

// One alternative of allowedTopologies; its expressions are ANDed, each value list is an `In`.
struct TopologySelectorTerm {
  std::vector<TopologySelectorLabelRequirement> match_label_expressions;
};

struct StorageClass {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  std::string provisioner;
  StringMap parameters;
  std::optional<std::string> reclaim_policy;
  std::vector<std::string> mount_options;
  std::optional<bool> allow_volume_expansion;
  std::optional<VolumeBindingMode> volume_binding_mode;  // unset: Immediate
  std::vector<TopologySelectorTerm> allowed_topologies;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

// Codec hooks (codec.h).
std::span<const std::string_view> EnumNames(VolumeBindingMode);
void DescribeFields(FieldCodec& c, TopologySelectorLabelRequirement& v);
void DescribeFields(FieldCodec& c, TopologySelectorTerm& v);
void DescribeFields(FieldCodec& c, StorageClass& v);

}  // namespace dovetail::apis::core
