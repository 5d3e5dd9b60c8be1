// PersistentVolume (core/v1): node affinity, CSI driver, storage class and claim reference — what
// volume topology (which zones/nodes can use the volume) and CSI attach limits need. Everything
// else is kept in unknown_fields. Plain data with a JSON codec (codec.h); thread-compatible.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/meta.h"
#include "dovetail/common/quantity.h"
#include "nlohmann/json.hpp"

namespace dovetail::apis::core {

struct ObjectReference {
  std::string api_version;
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string field_path;
};

struct HostPathVolumeSource {
  std::string path;
  std::optional<std::string> type;
};

struct LocalVolumeSource {
  std::string path;
  std::optional<std::string> fs_type;
};

struct CSIPersistentVolumeSource {
  std::string driver;
  std::string volume_handle;
  nlohmann::json unknown_fields = nlohmann::json::object();  // fsType, volumeAttributes, secrets...
};

struct VolumeNodeAffinity {
  std::optional<NodeSelector> required;
};

enum class PersistentVolumePhase { kPending, kAvailable, kBound, kReleased, kFailed };

struct PersistentVolumeSpec {
  ResourceList capacity;
  std::vector<std::string> access_modes;
  std::optional<ObjectReference> claim_ref;
  std::string storage_class_name;
  std::optional<VolumeNodeAffinity> node_affinity;
  std::optional<CSIPersistentVolumeSource> csi;
  std::optional<HostPathVolumeSource> host_path;
  std::optional<LocalVolumeSource> local;
  std::string persistent_volume_reclaim_policy;
  std::optional<std::string> volume_mode;
  nlohmann::json unknown_fields = nlohmann::json::object();  // other volume sources, mountOptions
};

struct PersistentVolumeStatus {
  std::optional<PersistentVolumePhase> phase;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct PersistentVolume {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  PersistentVolumeSpec spec;
  PersistentVolumeStatus status;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

// Codec hooks (codec.h).
std::span<const std::string_view> EnumNames(PersistentVolumePhase);
void DescribeFields(FieldCodec& c, ObjectReference& v);
void DescribeFields(FieldCodec& c, HostPathVolumeSource& v);
void DescribeFields(FieldCodec& c, LocalVolumeSource& v);
void DescribeFields(FieldCodec& c, CSIPersistentVolumeSource& v);
void DescribeFields(FieldCodec& c, VolumeNodeAffinity& v);
void DescribeFields(FieldCodec& c, PersistentVolumeSpec& v);
void DescribeFields(FieldCodec& c, PersistentVolumeStatus& v);
void DescribeFields(FieldCodec& c, PersistentVolume& v);

}  // namespace dovetail::apis::core
