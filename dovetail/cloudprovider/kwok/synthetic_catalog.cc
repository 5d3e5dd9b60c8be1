#include "dovetail/cloudprovider/kwok/synthetic_catalog.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::cloudprovider::kwok {
namespace {

struct FamilySpec {
  std::string_view family;
  std::string_view category;
  std::string_view arch;
  int64_t gib_per_vcpu;
  std::vector<int64_t> vcpus;
  double base;
  double per_vcpu;
  double per_gib;
  double per_gpu;
  // GPUs per size (same length as vcpus) or empty.
  std::vector<int64_t> gpus;
};

const std::vector<FamilySpec>& Families() {
  static const auto* const kFamilies = new std::vector<FamilySpec>{
      {"t7k", "t", "amd64", 2, {1, 2, 4, 8}, 0.002, 0.010, 0.0040, 0, {}},
      {"t7gk", "t", "arm64", 2, {1, 2, 4, 8}, 0.002, 0.010, 0.0040, 0, {}},
      {"c7k", "c", "amd64", 2, {2, 4, 8, 16, 32, 48, 64, 96}, 0.004, 0.030, 0.0040, 0, {}},
      {"c7gk", "c", "arm64", 2, {2, 4, 8, 16, 32, 48, 64, 96}, 0.004, 0.030, 0.0040, 0, {}},
      {"m7k", "m", "amd64", 4, {1, 2, 4, 8, 16, 32, 48, 64, 96}, 0.004, 0.022, 0.0050, 0, {}},
      {"m7gk", "m", "arm64", 4, {1, 2, 4, 8, 16, 32, 48, 64, 96}, 0.004, 0.022, 0.0050, 0, {}},
      {"r7k", "r", "amd64", 8, {2, 4, 8, 16, 32, 48, 64, 96}, 0.004, 0.020, 0.0045, 0, {}},
      {"r7gk", "r", "arm64", 8, {2, 4, 8, 16, 32, 48, 64, 96}, 0.004, 0.020, 0.0045, 0, {}},
      {"g7k",
       "g",
       "amd64",
       4,
       {4, 8, 16, 32, 48, 96},
       0.050,
       0.022,
       0.0050,
       0.600,
       {1, 1, 1, 2, 4, 8}},
  };
  return *kFamilies;
}

constexpr int64_t kGpuMemoryMib = 16384;
constexpr std::string_view kGpuName = "kwok-gpu";
constexpr std::string_view kGpuManufacturer = "nvidia";

std::string SizeName(int64_t vcpu) {
  if (vcpu == 1) return "medium";
  if (vcpu == 2) return "large";
  if (vcpu == 4) return "xlarge";
  return absl::StrCat(vcpu / 4, "xlarge");
}

double SizeFactor(int64_t vcpu) {
  const int floor_log2 = std::bit_width(static_cast<uint64_t>(vcpu)) - 1;
  return 1.0 + 0.05 * (4 - std::min(floor_log2, 6));
}

double Round6(double v) { return std::round(v * 1e6) / 1e6; }

}  // namespace

CatalogFiles GenerateSyntheticCatalogFiles(std::string_view region) {
  CatalogFiles files;
  for (const FamilySpec& f : Families()) {
    for (size_t i = 0; i < f.vcpus.size(); ++i) {
      const int64_t vcpu = f.vcpus[i];
      const int64_t gpus = f.gpus.empty() ? 0 : f.gpus[i];
      const int64_t memory_gib = vcpu * f.gib_per_vcpu;
      InstanceTypeRow row;
      row.size = SizeName(vcpu);
      row.name = absl::StrCat(AsAbsl(f.family), ".", row.size);
      row.category = std::string(f.category);
      row.family = std::string(f.family);
      row.generation = 7;
      row.arch = std::string(f.arch);
      row.os = "linux";
      row.cpu_manufacturer = f.arch == "arm64" ? "aws" : "intel";
      row.vcpu = vcpu;
      row.memory_mib = memory_gib * 1024;
      if (gpus > 0) {
        row.gpu_name = std::string(kGpuName);
        row.gpu_manufacturer = std::string(kGpuManufacturer);
        row.gpu_count = gpus;
        row.gpu_memory_mib = kGpuMemoryMib;
        row.nvidia_gpu = gpus;
      }
      row.max_pods = std::min<int64_t>(110, 16 * vcpu);
      FillAllocatableColumns(row);

      const double arch_factor = f.arch == "arm64" ? 0.8 : 1.0;
      const double price = Round6(arch_factor * SizeFactor(vcpu) *
                                  (f.base + static_cast<double>(vcpu) * f.per_vcpu +
                                   static_cast<double>(memory_gib) * f.per_gib +
                                   static_cast<double>(gpus) * f.per_gpu));
      files.on_demand_prices.push_back({std::string(region), row.name, price});
      files.instance_types.push_back(std::move(row));
    }
  }
  std::sort(files.instance_types.begin(), files.instance_types.end(),
            [](const InstanceTypeRow& a, const InstanceTypeRow& b) { return a.name < b.name; });
  std::sort(files.on_demand_prices.begin(), files.on_demand_prices.end(),
            [](const OnDemandPriceRow& a, const OnDemandPriceRow& b) {
              return a.instance_type < b.instance_type;
            });
  return files;
}

std::vector<std::pair<std::string, std::string>> KwokLabels(const InstanceTypeRow& row) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!row.size.empty()) out.emplace_back(kLabelInstanceSize, row.size);
  if (!row.family.empty()) out.emplace_back(kLabelInstanceFamily, row.family);
  out.emplace_back(kLabelInstanceCpu, absl::StrCat(row.vcpu));
  out.emplace_back(kLabelInstanceMemory, absl::StrCat(row.memory_mib));
  return out;
}

CatalogOptions MakeCatalogOptions(const KwokCatalogOptions& options) {
  CatalogOptions out;
  out.region = options.region;
  out.zones = options.zones;
  if (out.zones.empty()) out.zones = {"test-zone-a", "test-zone-b", "test-zone-c"};
  // A catalog written for another region still has prices; the AWS data falls back to us-east-1.
  out.fallback_price_regions = {std::string(kDefaultRegion), "us-east-1"};
  out.extra_labels = KwokLabels;
  return out;
}

absl::StatusOr<Catalog> SyntheticCatalog(const KwokCatalogOptions& options) {
  return BuildCatalog(GenerateSyntheticCatalogFiles(options.region), MakeCatalogOptions(options));
}

absl::StatusOr<Catalog> LoadCatalog(const std::string& directory,
                                    const KwokCatalogOptions& options) {
  return LoadCatalogDirectory(directory, MakeCatalogOptions(options));
}

absl::Status WriteSyntheticCatalog(const std::string& directory, std::string_view region) {
  return WriteCatalogDirectory(directory, GenerateSyntheticCatalogFiles(region));
}

}  // namespace dovetail::cloudprovider::kwok
