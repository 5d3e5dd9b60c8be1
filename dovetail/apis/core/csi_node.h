// CSINode (storage.k8s.io/v1): the CSI drivers installed on a node and how many volumes each can
// attach (allocatable.count), for volume attach limits on existing nodes. Plain data with a JSON
// codec (codec.h); thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/meta.h"
#include "nlohmann/json.hpp"

namespace dovetail::apis::core {

struct VolumeNodeResources {
  std::optional<int32_t> count;  // unset: unlimited
};

struct CSINodeDriver {
  std::string name;
  std::string node_id;  // nodeID
  std::vector<std::string> topology_keys;
  std::optional<VolumeNodeResources> allocatable;
};

struct CSINodeSpec {
  std::vector<CSINodeDriver> drivers;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct CSINode {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  CSINodeSpec spec;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

// Codec hooks (codec.h).
void DescribeFields(FieldCodec& c, VolumeNodeResources& v);
void DescribeFields(FieldCodec& c, CSINodeDriver& v);
void DescribeFields(FieldCodec& c, CSINodeSpec& v);
void DescribeFields(FieldCodec& c, CSINode& v);

}  // namespace dovetail::apis::core
