#include "dovetail/cloudprovider/aws_node_class_capacity.h"

#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace dovetail::cloudprovider {
namespace {

namespace awsv1 = apis::aws::v1;

constexpr int64_t kGibibyte = int64_t{1} << 30;

bool IsWindows(awsv1::AMIFamily f) {
  return f == awsv1::AMIFamily::kWindows2019 || f == awsv1::AMIFamily::kWindows2022 ||
         f == awsv1::AMIFamily::kWindows2025;
}

// The device the family's pods write to, and its default size; Custom has neither.
struct DataDevice {
  std::string_view name;
  int64_t default_bytes = 0;
};
std::optional<DataDevice> FamilyDataDevice(awsv1::AMIFamily f) {
  if (f == awsv1::AMIFamily::kCustom) return std::nullopt;
  if (f == awsv1::AMIFamily::kBottlerocket) return DataDevice{"/dev/xvdb", 20 * kGibibyte};
  if (IsWindows(f)) return DataDevice{"/dev/sda1", 50 * kGibibyte};
  return DataDevice{"/dev/xvda", 20 * kGibibyte};  // AL2, AL2023
}

std::optional<int64_t> VolumeBytes(const awsv1::BlockDeviceMapping& m) {
  if (!m.ebs.has_value() || !m.ebs->volume_size.has_value()) return std::nullopt;
  return m.ebs->volume_size->Value();
}

int64_t EphemeralStorageBytes(const awsv1::EC2NodeClassSpec& spec, awsv1::AMIFamily family) {
  const std::optional<DataDevice> device = FamilyDataDevice(family);
  const auto& mappings = spec.block_device_mappings;
  if (!mappings.empty()) {
    for (const awsv1::BlockDeviceMapping& m : mappings) {
      if (!m.root_volume) continue;
      if (std::optional<int64_t> bytes = VolumeBytes(m)) return *bytes;
      break;  // the first root volume decides; without a size, look further
    }
    if (!device.has_value()) return VolumeBytes(mappings.back()).value_or(20 * kGibibyte);
    for (const awsv1::BlockDeviceMapping& m : mappings) {
      if (m.device_name.has_value() && *m.device_name == device->name) {
        if (std::optional<int64_t> bytes = VolumeBytes(m)) return *bytes;
        break;
      }
    }
  }
  return device.has_value() ? device->default_bytes : 20 * kGibibyte;
}

absl::StatusOr<ResourceList> Reserved(const apis::core::StringMap& values, std::string_view field) {
  absl::StatusOr<ResourceList> parsed = ParseResourceList(values);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.kubelet.", std::string(field), ": ", parsed.status().message()));
  }
  return parsed;
}

}  // namespace

absl::StatusOr<CapacityOptions> NodeClassCapacity(const awsv1::EC2NodeClassSpec& spec,
                                                  const CapacityOptions& controller) {
  CapacityOptions o = controller;
  const awsv1::AMIFamily family =
      awsv1::EffectiveAMIFamily(spec).value_or(awsv1::AMIFamily::kCustom);
  o.eni_limited_pod_density = !IsWindows(family);
  o.pods_per_core_enabled = family != awsv1::AMIFamily::kBottlerocket;
  o.eni_limited_memory_overhead = family != awsv1::AMIFamily::kBottlerocket && !IsWindows(family);
  o.ephemeral_storage_bytes = EphemeralStorageBytes(spec, family);
  o.instance_store_raid0 = spec.instance_store_policy == awsv1::InstanceStorePolicy::kRAID0;
  if (!spec.network_interfaces.empty()) {
    int64_t efa = 0;
    for (const awsv1::NetworkInterface& n : spec.network_interfaces) {
      if (n.interface_type != awsv1::NetworkInterfaceType::kEfaOnly) continue;
      ++efa;
      if (n.network_card_index == 0) ++o.efa_only_enis;
    }
    o.efa_interfaces = efa;
  }
  if (spec.kubelet.has_value()) {
    const awsv1::KubeletConfiguration& k = *spec.kubelet;
    if (k.max_pods.has_value()) o.max_pods = *k.max_pods;
    if (k.pods_per_core.has_value()) o.pods_per_core = *k.pods_per_core;
    absl::StatusOr<ResourceList> kube = Reserved(k.kube_reserved, "kubeReserved");
    if (!kube.ok()) return kube.status();
    o.kube_reserved = *std::move(kube);
    absl::StatusOr<ResourceList> system = Reserved(k.system_reserved, "systemReserved");
    if (!system.ok()) return system.status();
    o.system_reserved = *std::move(system);
    for (auto [signal, out] : {std::pair{"memory.available", &o.eviction_hard_memory},
                               std::pair{"nodefs.available", &o.eviction_hard_nodefs}}) {
      auto it = k.eviction_hard.find(signal);
      if (it == k.eviction_hard.end()) continue;
      if (absl::StatusOr<int64_t> v = EvictionSignalBytes(int64_t{1} << 40, it->second); !v.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("spec.kubelet.evictionHard[", signal, "]: ", v.status().message()));
      }
      *out = it->second;
    }
  }
  return o;
}

}  // namespace dovetail::cloudprovider
