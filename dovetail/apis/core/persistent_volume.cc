#include "dovetail/apis/core/persistent_volume.h"

namespace dovetail::apis::core {
namespace {
constexpr std::string_view kVolumePhaseNames[] = {"Pending", "Available", "Bound", "Released",
                                                  "Failed"};
}  // namespace

std::span<const std::string_view> EnumNames(PersistentVolumePhase) { return kVolumePhaseNames; }

void DescribeFields(FieldCodec& c, ObjectReference& v) {
  c.Field("apiVersion", v.api_version);
  c.Field("kind", v.kind);
  c.Field("namespace", v.namespace_);
  c.Field("name", v.name);
  c.Field("uid", v.uid);
  c.Field("resourceVersion", v.resource_version);
  c.Field("fieldPath", v.field_path);
}

void DescribeFields(FieldCodec& c, HostPathVolumeSource& v) {
  c.Field("path", v.path, {.emit_empty = true});
  c.Field("type", v.type);
}

void DescribeFields(FieldCodec& c, LocalVolumeSource& v) {
  c.Field("path", v.path, {.emit_empty = true});
  c.Field("fsType", v.fs_type);
}

void DescribeFields(FieldCodec& c, CSIPersistentVolumeSource& v) {
  c.Field("driver", v.driver, {.emit_empty = true});
  c.Field("volumeHandle", v.volume_handle, {.emit_empty = true});
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, VolumeNodeAffinity& v) { c.Field("required", v.required); }

void DescribeFields(FieldCodec& c, PersistentVolumeSpec& v) {
  c.Field("capacity", v.capacity);
  c.Field("accessModes", v.access_modes);
  c.Field("claimRef", v.claim_ref);
  c.Field("storageClassName", v.storage_class_name);
  c.Field("nodeAffinity", v.node_affinity);
  c.Field("csi", v.csi);
  c.Field("hostPath", v.host_path);
  c.Field("local", v.local);
  c.Field("persistentVolumeReclaimPolicy", v.persistent_volume_reclaim_policy);
  c.Field("volumeMode", v.volume_mode);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, PersistentVolumeStatus& v) {
  c.Field("phase", v.phase);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, PersistentVolume& v) { DescribeObject(c, v); }

}  // namespace dovetail::apis::core
