#include "dovetail/apis/core/persistent_volume_claim.h"

namespace dovetail::apis::core {
namespace {
constexpr std::string_view kClaimPhaseNames[] = {"Pending", "Bound", "Lost"};
}  // namespace

std::span<const std::string_view> EnumNames(PersistentVolumeClaimPhase) { return kClaimPhaseNames; }

void DescribeFields(FieldCodec& c, ResourceRequirements& v) {
  c.Field("limits", v.limits);
  c.Field("requests", v.requests);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, PersistentVolumeClaimSpec& v) {
  c.Field("accessModes", v.access_modes);
  c.Field("selector", v.selector);
  c.Field("resources", v.resources);
  c.Field("volumeName", v.volume_name);
  c.Field("storageClassName", v.storage_class_name);
  c.Field("volumeMode", v.volume_mode);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, PersistentVolumeClaimStatus& v) {
  c.Field("phase", v.phase);
  c.Field("accessModes", v.access_modes);
  c.Field("capacity", v.capacity);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, PersistentVolumeClaim& v) { DescribeObject(c, v); }

}  // namespace dovetail::apis::core
