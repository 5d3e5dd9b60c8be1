// Catalog files: the AWS instance-type catalog and price tables in Dovetail's CSV format, and the
// builder that turns them into InstanceTypes with upstream Karpenter's labels, capacity, overhead
// and offerings. The AWS provider uses it for its static catalog and the kwok provider for
// `--catalog PATH`; kwok's synthetic generator writes the same format.
//
// Files (the columns of the first two are described in data/aws/README.md; a catalog directory
// holds them by these names):
//   instance-types.csv    one row per type: labels, raw vCPU/memory, max pods, extended resources,
//                         and upstream's allocatable for AL2023 (informational; never read back
//                         into the InstanceType, which computes its own).
//   on-demand-prices.csv  region,instance_type,usd_per_hour
//   spot-prices.csv       region,zone,instance_type,usd_per_hour (optional)
//   offerings.csv         region,zone,zone_id,instance_type (optional; `dovetail catalog export`
//                         writes it): the zones each type is offered in; zone_id may be blank,
//                         and a zone has the same zone_id on every row.
// Columns may come in any order; every expected column must be present exactly once and no other.
// Malformed input (header, column count, number, boolean, duplicate row) gives InvalidArgument
// naming `file:line` and the column.
//
// What BuildCatalog produces for a row, following upstream's AWS instance type provider:
//   capacity  cpu = vcpu; memory = (MiB - 64 on arm64) - ceil(p x that) MiB, p the VM memory
//             overhead (upstream's VM_MEMORY_OVERHEAD_PERCENT, 0.075 by default); pods = the
//             class's maxPods, else the ENI-limited count: max_pods, or with reserved ENIs
//             (upstream's RESERVED_ENIS) and the row's ENI data max(0, enis - reserved) x (IPv4
//             per ENI - 1) + 2 (0 when no ENI is left), or 110 for a family without ENI-limited
//             density (Windows); then at most podsPerCore x vcpu; ephemeral-storage = the root
//             volume (20Gi by default) or the RAID0 instance store; all from CapacityOptions.
//             pod-eni, efa, nvidia.com/gpu, amd.com/gpu, aws.amazon.com/neuron,
//             aws.amazon.com/neuroncore when non-zero.
//   overhead  kube-reserved cpu = 60m for the 1st core + 10m for the 2nd + 5m each for the 3rd and
//             4th + 2.5m each beyond (rounded down to whole millicores); memory = 11 x pods +
//             255Mi (pods: max_pods without reserved ENIs, as upstream, or the pods capacity for a
//             family without ENI-limited memory overhead); ephemeral-storage = 1Gi; each replaced
//             by the class's kubeReserved. System-reserved: the class's systemReserved.
//             Eviction threshold memory = 100Mi, ephemeral-storage = 10% of capacity (rounded up to
//             a byte); each replaced by the class's evictionHard memory.available and
//             nodefs.available (upstream computes percentages in doubles; so does this).
//   labels    instance-type, arch, os, region; zone and capacity-type (both offered values);
//             karpenter.k8s.aws/instance-{category,family,generation,size,cpu,cpu-manufacturer,
//             cpu-sustained-clock-speed-mhz,memory,hypervisor,encryption-in-transit-supported,
//             capability-flex,local-nvme,network-bandwidth,ebs-bandwidth,gpu-name,gpu-manufacturer,
//             gpu-count,gpu-memory,accelerator-name,accelerator-manufacturer,accelerator-count}.
//             "No label" (DoesNotExist) for a blank text column, a blank bandwidth, and a zero
//             generation, clock speed, local NVMe size, GPU/accelerator count or GPU memory (so a
//             fractional-GPU g6f has a gpu-name but no gpu-count).
//             instance-tenancy is In [default, dedicated] (resolved at launch). Labels the files
//             carry no data for are DoesNotExist: windows-build, nitro-sandbox, capacity
//             reservation and placement group labels, and zone-id unless CatalogOptions::zone_ids
//             names the zones.
//   offerings one on-demand and one spot offering per zone (CatalogOptions::zones, default the
//             region's a, b, c), in zone order, on-demand first.
//             With offerings.csv rows for the region: the zones default to the file's (sorted),
//             the zone ids to the file's, and a type is offered (and its zone label allows) only
//             the zones the file lists for it; a type without a row is left out.
//             On-demand price: the region's row in on-demand-prices.csv; a region with no rows at
//             all uses the first of fallback_price_regions that has rows (us-east-1, as upstream
//             does before it fetches live prices). A type with no price has unavailable offerings
//             (price 0).
//             Spot price: from spot-prices.csv when it was given (a missing (zone, type) row makes
//             that spot offering unavailable); otherwise the spot model below.
//
// Spot model (deterministic; identical on every platform and run):
//   spot(type, zone) = round6(on_demand(type) x f), f = 0.3 + 0.4 x (h mod 10001) / 10000,
//   h = 64-bit FNV-1a of the bytes "<type>|<zone>", round6 = rounded to 6 decimals (the precision
//   of the price files). So 0.3 <= f <= 0.7: spot is 30-70% of on-demand, varies across zones and
//   types, and is strictly cheaper than on-demand for every type priced at $0.00001/h or more.
//
// Free functions over values; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dovetail/cloudprovider/catalog.h"
#include "dovetail/cloudprovider/instance_type.h"
#include "dovetail/common/quantity.h"

namespace dovetail::cloudprovider {

// One row of instance-types.csv. Text fields are empty and counts zero when the type has no such
// label; the bandwidths are nullopt when unknown.
struct InstanceTypeRow {
  std::string name;
  std::string category;
  std::string family;
  int64_t generation = 0;
  std::string size;
  std::string arch;  // amd64 | arm64
  std::string os = "linux";
  std::string cpu_manufacturer;
  int64_t cpu_sustained_clock_speed_mhz = 0;
  bool capability_flex = false;
  int64_t vcpu = 0;
  int64_t memory_mib = 0;
  std::string gpu_name;
  std::string gpu_manufacturer;
  int64_t gpu_count = 0;
  int64_t gpu_memory_mib = 0;  // per GPU
  std::string accelerator_name;
  std::string accelerator_manufacturer;
  int64_t accelerator_count = 0;
  int64_t local_nvme_gib = 0;
  std::optional<int64_t> network_bandwidth_mbps;
  std::optional<int64_t> ebs_bandwidth_mbps;
  std::string hypervisor;
  bool encryption_in_transit_supported = false;
  bool bare_metal = false;
  int64_t max_pods = 0;
  // Not columns of the file: what DescribeInstanceTypes says of the default network card (its
  // maximum ENIs, IPv4 addresses per ENI) and of the instance store (total GB, NVMe or not); 0
  // when unknown (rows read from files; local_nvme_gib then stands for the instance store).
  int64_t enis = 0;
  int64_t ipv4_per_eni = 0;
  int64_t instance_storage_gb = 0;
  // Allocatable as recorded in the file (upstream's, for AL2023); see FillAllocatableColumns().
  int64_t allocatable_cpu_millicores = 0;
  int64_t allocatable_memory_mib = 0;
  int64_t allocatable_ephemeral_storage_gib = 0;
  int64_t pod_eni = 0;
  int64_t efa = 0;
  int64_t nvidia_gpu = 0;
  int64_t amd_gpu = 0;
  int64_t neuron = 0;
  int64_t neuroncore = 0;

  bool operator==(const InstanceTypeRow&) const = default;
};

struct OnDemandPriceRow {
  std::string region;
  std::string instance_type;
  double usd_per_hour = 0.0;
  bool operator==(const OnDemandPriceRow&) const = default;
};

struct SpotPriceRow {
  std::string region;
  std::string zone;
  std::string instance_type;
  double usd_per_hour = 0.0;
  bool operator==(const SpotPriceRow&) const = default;
};

// A (zone, type) the type is offered in (offerings.csv).
struct OfferingRow {
  std::string region;
  std::string zone;
  std::string zone_id;  // may be empty
  std::string instance_type;
  bool operator==(const OfferingRow&) const = default;
};

// The contents of a catalog directory.
struct CatalogFiles {
  std::vector<InstanceTypeRow> instance_types;
  std::vector<OnDemandPriceRow> on_demand_prices;
  std::optional<std::vector<SpotPriceRow>> spot_prices;  // nullopt: use the spot model
  std::optional<std::vector<OfferingRow>> offerings;     // nullopt: every type in every zone
};

// The region offerings.csv names when it names exactly one, else empty (callers then default to
// us-east-1).
std::string OfferingsRegion(const CatalogFiles& files);

inline constexpr std::string_view kInstanceTypesFile = "instance-types.csv";
inline constexpr std::string_view kOnDemandPricesFile = "on-demand-prices.csv";
inline constexpr std::string_view kSpotPricesFile = "spot-prices.csv";
inline constexpr std::string_view kOfferingsFile = "offerings.csv";

// Parsers: `text` is the whole file, `file_name` is used in error messages. An empty trailing line
// and CRLF line ends are accepted. Errors: InvalidArgument "<file>:<line>: ..." (see above).
absl::StatusOr<std::vector<InstanceTypeRow>> ParseInstanceTypesCsv(std::string_view text,
                                                                   std::string_view file_name);
absl::StatusOr<std::vector<OnDemandPriceRow>> ParseOnDemandPricesCsv(std::string_view text,
                                                                     std::string_view file_name);
absl::StatusOr<std::vector<SpotPriceRow>> ParseSpotPricesCsv(std::string_view text,
                                                             std::string_view file_name);
absl::StatusOr<std::vector<OfferingRow>> ParseOfferingsCsv(std::string_view text,
                                                           std::string_view file_name);

// Writers: the header and one line per row, in the given order; prices with 6 decimals. Parsing the
// output gives back the same rows.
std::string FormatInstanceTypesCsv(const std::vector<InstanceTypeRow>& rows);
std::string FormatOnDemandPricesCsv(const std::vector<OnDemandPriceRow>& rows);
std::string FormatSpotPricesCsv(const std::vector<SpotPriceRow>& rows);
std::string FormatOfferingsCsv(const std::vector<OfferingRow>& rows);

// Reads instance-types.csv and on-demand-prices.csv (required) and spot-prices.csv and
// offerings.csv (if present) from `directory`. Errors: NotFound for a missing required file,
// InvalidArgument for bad content or a file over kMaxCatalogFileBytes (common/input_limits.h).
absl::StatusOr<CatalogFiles> ReadCatalogDirectory(const std::string& directory);
// Reads the files at the given paths; an empty spot path means no spot file.
absl::StatusOr<CatalogFiles> ReadCatalogFiles(const std::string& instance_types_path,
                                              const std::string& on_demand_prices_path,
                                              const std::string& spot_prices_path = "");
// Writes the files into `directory` (which must exist); spot-prices.csv and offerings.csv only
// when present.
// Errors: Internal/PermissionDenied/NotFound from the file system.
absl::Status WriteCatalogDirectory(const std::string& directory, const CatalogFiles& files);

// What changes a type's capacity and overhead beyond its row: the controller's settings
// (upstream's VM_MEMORY_OVERHEAD_PERCENT and RESERVED_ENIS) and the EC2NodeClass the type is
// launched with (aws_node_class_capacity.h fills these from one, as upstream's instance type
// provider reads it). The defaults are a class with none of these set, of the AL2023 family.
struct CapacityOptions {
  // ephemeral-storage capacity: the root volume's size, in bytes.
  int64_t ephemeral_storage_bytes = int64_t{20} << 30;
  // instanceStorePolicy RAID0: a type with an instance store has its total size (GB, 10^9 bytes)
  // as ephemeral-storage instead; types without one keep the root volume.
  bool instance_store_raid0 = false;
  double vm_memory_overhead_percent = 0.075;
  // ENIs kept out of the pod count; only rows with ENI data (enis, ipv4_per_eni) are affected.
  int64_t reserved_enis = 0;
  // The class's networkInterfaces: EFA-only interfaces on network card 0 carry no pod IPs (they
  // lower the ENI-limited count, kube-reserved's too); when the class lists interfaces, the EFA
  // capacity is its number of EFA-only ones instead of the type's maximum.
  int64_t efa_only_enis = 0;
  std::optional<int64_t> efa_interfaces;
  // The class's kubelet maxPods (replaces the ENI-limited count) and podsPerCore (caps pods at
  // podsPerCore x vCPUs where the AMI family allows it; 0 is unset).
  std::optional<int64_t> max_pods;
  std::optional<int64_t> pods_per_core;
  // The AMI family's flags (upstream's FeatureFlags): ENI-limited pod density (else 110 pods),
  // podsPerCore honoured, kube-reserved memory from the ENI-limited count (else from the pods).
  bool eni_limited_pod_density = true;
  bool pods_per_core_enabled = true;
  bool eni_limited_memory_overhead = true;
  // The class's kubelet kubeReserved (each replaces the computed value) and systemReserved.
  ResourceList kube_reserved;
  ResourceList system_reserved;
  // The class's kubelet evictionHard memory.available and nodefs.available: a quantity or a
  // percentage of capacity ("100%" is 0); empty keeps 100Mi and 10%.
  std::string eviction_hard_memory;
  std::string eviction_hard_nodefs;

  bool operator==(const CapacityOptions&) const = default;
};

struct CatalogOptions {
  std::string region = "us-east-1";
  // Zones to offer every type in; empty means region + "a", "b", "c".
  std::vector<std::string> zones;
  // Optional zone -> zone id (topology.k8s.aws/zone-id); when it names every zone, offerings and
  // instance types carry the zone-id label.
  std::map<std::string, std::string> zone_ids;
  // Where on-demand prices come from when the files have none for `region`: the first of these
  // regions that has any.
  std::vector<std::string> fallback_price_regions = {"us-east-1"};
  CapacityOptions capacity;
  // Provider-specific labels added to every type (kwok adds karpenter.kwok.sh/*), as key/value
  // pairs, each becoming `In [value]`. May be empty.
  std::function<std::vector<std::pair<std::string, std::string>>(const InstanceTypeRow&)>
      extra_labels;
};

// Builds the catalog (sorted by name). Errors: InvalidArgument for a duplicate instance type, an
// empty region, a duplicate zone, or a row that cannot describe a machine (vcpu or memory <= 0).
absl::StatusOr<Catalog> BuildCatalog(const CatalogFiles& files, const CatalogOptions& options);
// ReadCatalogDirectory + BuildCatalog.
absl::StatusOr<Catalog> LoadCatalogDirectory(const std::string& directory,
                                             const CatalogOptions& options);

// The formulas, exposed for tests and for the kwok generator.
ResourceList ComputeCapacity(const InstanceTypeRow& row, const CapacityOptions& options = {});
InstanceTypeOverhead ComputeOverhead(const InstanceTypeRow& row, const ResourceList& capacity,
                                     const CapacityOptions& options = {});
// Machine memory as the node reports it: MiB minus 64 on arm64, minus ceil(overhead x the rest)
// computed in doubles as upstream computes it (so the two agree to the MiB).
int64_t MemoryCapacityMib(int64_t memory_mib, std::string_view arch,
                          double vm_memory_overhead_percent = 0.075);
// The ENI-limited pod count: max_pods, or with `reserved_enis` when the row has ENI data.
int64_t PodsCapacity(const InstanceTypeRow& row, int64_t reserved_enis);
// An eviction threshold of `capacity` bytes: "N%" is ceil(capacity / 100 x N) ("100%" is 0),
// anything else a quantity. Errors: InvalidArgument.
absl::StatusOr<int64_t> EvictionSignalBytes(int64_t capacity, std::string_view signal);
int64_t KubeReservedCpuMillicores(int64_t vcpu);
// Sets row.allocatable_* to what BuildCatalog's Allocatable() gives for the row with the default
// CapacityOptions (the file's informational columns).
void FillAllocatableColumns(InstanceTypeRow& row);
// The spot model (see above).
double SpotPriceFactor(std::string_view instance_type, std::string_view zone);
double ModelSpotPrice(std::string_view instance_type, std::string_view zone, double on_demand);

}  // namespace dovetail::cloudprovider
