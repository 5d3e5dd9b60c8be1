// PersistentVolumeClaim (core/v1): the fields scheduling needs to find a pod's volume topology
// (storage class, bound volume, phase, selected-node annotations in metadata). Everything else is
// kept in unknown_fields. Plain data with a JSON codec (codec.h); thread-compatible.
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

// Compute resources of a container (and, reused, a PVC's storage request): requests and limits.
struct ResourceRequirements {
  ResourceList limits;
  ResourceList requests;
  nlohmann::json unknown_fields = nlohmann::json::object();  // claims, ...
};

enum class PersistentVolumeClaimPhase { kPending, kBound, kLost };

struct PersistentVolumeClaimSpec {
  std::vector<std::string> access_modes;
  std::optional<LabelSelector> selector;
  ResourceRequirements resources;
  std::string volume_name;  // the bound PersistentVolume
  // Unset means "the default class"; set to "" means "no class" (static provisioning only).
  std::optional<std::string> storage_class_name;
  std::optional<std::string> volume_mode;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct PersistentVolumeClaimStatus {
  std::optional<PersistentVolumeClaimPhase> phase;
  std::vector<std::string> access_modes;
  ResourceList capacity;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct PersistentVolumeClaim {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  PersistentVolumeClaimSpec spec;
  PersistentVolumeClaimStatus status;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

// Codec hooks (codec.h).
std::span<const std::string_view> EnumNames(PersistentVolumeClaimPhase);
void DescribeFields(FieldCodec& c, ResourceRequirements& v);
void DescribeFields(FieldCodec& c, PersistentVolumeClaimSpec& v);
void DescribeFields(FieldCodec& c, PersistentVolumeClaimStatus& v);
void DescribeFields(FieldCodec& c, PersistentVolumeClaim& v);

}  // namespace dovetail::apis::core
