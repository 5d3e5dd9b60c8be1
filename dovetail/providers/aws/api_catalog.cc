#include "dovetail/providers/aws/api_catalog.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"

namespace dovetail::providers::aws {
namespace {

using cloudprovider::InstanceTypeRow;

std::string Lower(std::string_view s) { return absl::AsciiStrToLower(AsAbsl(s)); }

// A name as a label value, as upstream writes it: lower case, spaces as dashes
// ("RTX PRO 4500" => rtx-pro-4500).
std::string LabelName(std::string_view s) {
  std::string out = Lower(s);
  std::replace(out.begin(), out.end(), ' ', '-');
  return out;
}

bool Contains(const std::vector<std::string>& v, std::string_view x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Upstream's instance-type scheme: category = the family's leading letters; generation = the
// digits after them, skipping a "-<n>tb" infix (u-6tb1 => u, 1).
void CategoryAndGeneration(std::string_view family, std::string* category, int64_t* generation) {
  size_t i = 0;
  while (i < family.size() && std::islower(static_cast<unsigned char>(family[i]))) ++i;
  *category = std::string(family.substr(0, i));
  if (i < family.size() && family[i] == '-') {
    size_t j = i + 1;
    while (j < family.size() && std::isdigit(static_cast<unsigned char>(family[j]))) ++j;
    if (family.substr(j).starts_with("tb")) i = j + 2;
  }
  int64_t gen = 0;
  bool any = false;
  while (i < family.size() && std::isdigit(static_cast<unsigned char>(family[i]))) {
    gen = gen * 10 + (family[i] - '0');
    any = true;
    ++i;
  }
  *generation = any ? gen : 0;
}

}  // namespace

bool IsSupportedInstanceType(const Ec2InstanceTypeInfo& info) {
  return Contains(info.supported_virtualization_types, "hvm") &&
         (Contains(info.architectures, "x86_64") || Contains(info.architectures, "arm64"));
}

absl::StatusOr<InstanceTypeRow> InstanceTypeRowFromApi(const Ec2InstanceTypeInfo& info,
                                                       const InstanceTypeRow* static_row) {
  InstanceTypeRow row;
  row.name = info.instance_type;
  if (Contains(info.architectures, "x86_64")) {
    row.arch = "amd64";
  } else if (Contains(info.architectures, "arm64")) {
    row.arch = "arm64";
  } else {
    return absl::InvalidArgumentError(Cat(info.instance_type, ": no x86_64 or arm64 architecture"));
  }
  if (info.default_vcpus <= 0 || info.memory_mib <= 0) {
    return absl::InvalidArgumentError(Cat(info.instance_type, ": no vCPU or memory information"));
  }
  const size_t dot = row.name.find('.');
  row.family = row.name.substr(0, dot);
  row.size = dot == std::string::npos ? "" : row.name.substr(dot + 1);
  CategoryAndGeneration(row.family, &row.category, &row.generation);
  row.os = "linux";
  row.cpu_manufacturer = LabelName(info.manufacturer);
  row.cpu_sustained_clock_speed_mhz =
      static_cast<int64_t>(std::llround(info.sustained_clock_speed_ghz * 1000));
  row.capability_flex = row.family.ends_with("-flex");
  row.vcpu = info.default_vcpus;
  row.memory_mib = info.memory_mib;
  if (info.gpus.size() == 1) {
    const auto& g = info.gpus[0];
    row.gpu_name = LabelName(g.name);
    row.gpu_manufacturer = LabelName(g.manufacturer);
    row.gpu_count = g.count;
    row.gpu_memory_mib = g.memory_mib;
    if (row.gpu_manufacturer == "nvidia") row.nvidia_gpu = g.count;
    if (row.gpu_manufacturer == "amd") row.amd_gpu = g.count;
  }
  const auto& accelerators =
      !info.neuron_devices.empty() ? info.neuron_devices : info.inference_accelerators;
  if (accelerators.size() == 1) {
    const auto& a = accelerators[0];
    row.accelerator_name = LabelName(a.name);
    row.accelerator_manufacturer = LabelName(a.manufacturer);
    row.accelerator_count = a.count;
    if (!info.neuron_devices.empty()) {
      row.neuron = a.count;
      row.neuroncore = a.cores;
    }
  }
  row.instance_storage_gb = info.instance_storage_gb;
  if (info.instance_storage_gb > 0 && info.nvme_support != "unsupported") {
    row.local_nvme_gib = info.instance_storage_gb;
  }
  if (static_row != nullptr) {
    row.network_bandwidth_mbps = static_row->network_bandwidth_mbps;
    row.pod_eni = static_row->pod_eni;
  }
  if (info.ebs_optimized_support == "default" && info.ebs_maximum_bandwidth_mbps > 0) {
    row.ebs_bandwidth_mbps = info.ebs_maximum_bandwidth_mbps;
  }
  row.hypervisor = info.hypervisor;
  row.encryption_in_transit_supported = info.encryption_in_transit_supported;
  row.bare_metal = info.bare_metal;
  if (info.default_network_card_interfaces > 0 && info.ipv4_addresses_per_interface > 0) {
    row.enis = info.default_network_card_interfaces;
    row.ipv4_per_eni = info.ipv4_addresses_per_interface;
    row.max_pods =
        info.default_network_card_interfaces * (info.ipv4_addresses_per_interface - 1) + 2;
  } else {
    row.max_pods = static_row != nullptr ? static_row->max_pods : 110;
  }
  row.efa = info.maximum_efa_interfaces;
  cloudprovider::FillAllocatableColumns(row);
  return row;
}

absl::StatusOr<cloudprovider::Catalog> BuildApiCatalog(const ApiCatalogInputs& inputs,
                                                       const ApiCatalogOptions& options) {
  std::map<std::string, std::string> zone_ids;
  std::set<std::string> usable_zones;
  for (const auto& z : inputs.zones) {
    if (z.state == "available" && (z.zone_type.empty() || z.zone_type == "availability-zone")) {
      usable_zones.insert(z.zone_name);
      if (!z.zone_id.empty()) zone_ids[z.zone_name] = z.zone_id;
    }
  }
  absl::flat_hash_map<std::string, std::set<std::string>> type_zones;
  for (const auto& o : inputs.zone_offerings) {
    if (usable_zones.contains(o.location)) type_zones[o.instance_type].insert(o.location);
  }
  absl::flat_hash_map<std::string, const InstanceTypeRow*> static_rows;
  for (const auto& r : options.static_files.instance_types) static_rows[r.name] = &r;

  // BuildCatalog offers every type in every zone of its options: build one catalog per distinct
  // zone set, so each type's zone requirement and offerings are exactly its zones.
  std::map<std::vector<std::string>, cloudprovider::CatalogFiles> groups;
  absl::flat_hash_map<std::string, bool> supports_spot;
  for (const auto& info : inputs.instance_types) {
    if (!IsSupportedInstanceType(info)) continue;
    auto zones = type_zones.find(info.instance_type);
    if (zones == type_zones.end() || zones->second.empty()) continue;
    auto it = static_rows.find(info.instance_type);
    ASSIGN_OR_RETURN(InstanceTypeRow row,
                     InstanceTypeRowFromApi(info, it == static_rows.end() ? nullptr : it->second));
    supports_spot[row.name] = Contains(info.supported_usage_classes, "spot");
    std::vector<std::string> key(zones->second.begin(), zones->second.end());
    groups[key].instance_types.push_back(std::move(row));
  }
  std::vector<cloudprovider::SpotPriceRow> spot_rows;
  if (inputs.spot_prices) {
    std::set<std::pair<std::string, std::string>> seen;
    for (const auto& p : *inputs.spot_prices) {
      if (!seen.insert({p.instance_type, p.availability_zone}).second) continue;
      spot_rows.push_back({options.region, p.availability_zone, p.instance_type, p.price});
    }
  }

  std::vector<cloudprovider::InstanceTypePtr> all;
  for (auto& [zones, files] : groups) {
    files.on_demand_prices = options.static_files.on_demand_prices;
    if (inputs.spot_prices) {
      std::set<std::string> names;
      for (const auto& r : files.instance_types) names.insert(r.name);
      std::vector<cloudprovider::SpotPriceRow> rows;
      for (const auto& r : spot_rows) {
        if (names.contains(r.instance_type)) rows.push_back(r);
      }
      files.spot_prices = std::move(rows);
    }
    cloudprovider::CatalogOptions catalog_options{.region = options.region,
                                                  .zones = zones,
                                                  .zone_ids = zone_ids,
                                                  .capacity = options.capacity};
    ASSIGN_OR_RETURN(cloudprovider::Catalog part,
                     cloudprovider::BuildCatalog(files, catalog_options));
    for (const auto& type : part) {
      if (supports_spot[type->name()]) {
        all.push_back(type);
        continue;
      }
      std::vector<cloudprovider::Offering> offerings = type->offerings().list();
      for (auto& o : offerings) {
        if (o.capacity_type == "spot") o.available = false;
      }
      all.push_back(type->WithOfferings(cloudprovider::Offerings(std::move(offerings))));
    }
  }
  return cloudprovider::Catalog::Create(std::move(all));
}

absl::StatusOr<ApiCatalogInputs> FetchApiCatalogInputs(Ec2Client& ec2, absl::Time now,
                                                       absl::Status* spot_error) {
  ApiCatalogInputs inputs;
  ASSIGN_OR_RETURN(inputs.instance_types, ec2.DescribeInstanceTypes());
  ASSIGN_OR_RETURN(inputs.zone_offerings, ec2.DescribeInstanceTypeOfferings("availability-zone"));
  ASSIGN_OR_RETURN(inputs.zones, ec2.DescribeAvailabilityZones());
  auto spot = ec2.DescribeSpotPriceHistory(now);
  if (spot.ok()) {
    inputs.spot_prices = std::move(*spot);
  } else if (spot_error != nullptr) {
    *spot_error = spot.status();
  }
  return inputs;
}

}  // namespace dovetail::providers::aws
