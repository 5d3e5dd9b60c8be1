#include "dovetail/apis/core/storage_class.h"

namespace dovetail::apis::core {
namespace {
constexpr std::string_view kBindingModeNames[] = {"Immediate", "WaitForFirstConsumer"};
}  // namespace

std::span<const std::string_view> EnumNames(VolumeBindingMode) { return kBindingModeNames; }

void DescribeFields(FieldCodec& c, TopologySelectorLabelRequirement& v) {
  c.Field("key", v.key, {.emit_empty = true});
  c.Field("values", v.values, {.emit_empty = true});
}

void DescribeFields(FieldCodec& c, TopologySelectorTerm& v) {
  c.Field("matchLabelExpressions", v.match_label_expressions);
}

void DescribeFields(FieldCodec& c, StorageClass& v) {
  c.Field("apiVersion", v.api_version);
  c.Field("kind", v.kind);
  c.Field("metadata", v.metadata);
  c.Field("provisioner", v.provisioner, {.emit_empty = true});
  c.Field("parameters", v.parameters);
  c.Field("reclaimPolicy", v.reclaim_policy);
  c.Field("mountOptions", v.mount_options);
  c.Field("allowVolumeExpansion", v.allow_volume_expansion);
  c.Field("volumeBindingMode", v.volume_binding_mode);
  c.Field("allowedTopologies", v.allowed_topologies);
  c.UnknownFields(v.unknown_fields);
}

}  // namespace dovetail::apis::core
