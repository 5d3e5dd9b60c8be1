// The kwok provider's instance-type catalog: a built-in synthetic catalog (no real cloud behind
// it), or any catalog directory in the aws_catalog.h format (`--catalog PATH`). The kwok
// CloudProvider calls it at start-up; tests and benchmarks use it for a realistic, deterministic
// set of types. Pure functions of their options (the same output on every run and platform);
// thread-safe.
//
// Synthetic families (name = family.size, as on AWS, so AWS NodePools' instance-category /
// -family / -size / -cpu / -memory selectors work unchanged):
//   family  category  arch   GiB/vCPU  vCPU sizes                      notes
//   t7k     t         amd64  2         1 2 4 8                         burstable, cheapest
//   c7k     c         amd64  2         2 4 8 16 32 48 64 96            compute optimised
//   m7k     m         amd64  4         1 2 4 8 16 32 48 64 96          general purpose
//   r7k     r         amd64  8         2 4 8 16 32 48 64 96            memory optimised
//   t7gk, c7gk, m7gk, r7gk             the same shapes on arm64, 20% cheaper
//   g7k     g         amd64  4         4 8 16 32 48 96                 nvidia.com/gpu: 1 1 1 2 4 8
// Size names: 1 vCPU = medium, 2 = large, 4 = xlarge, n >= 8 = (n/4)xlarge. Generation 7; the
// trailing "k" keeps the names distinct from real EC2 types.
//
// Other columns: max pods = min(110, 16 x vCPU); cpu manufacturer intel (amd64) / aws (arm64);
// GPU name "kwok-gpu", manufacturer nvidia, 16 GiB per GPU. Capacity, overhead and allocatable
// follow aws_catalog.h, so a kwok node looks like an AL2023 node of the same shape.
//
// On-demand price (USD/hour), rounded to 6 decimals:
//   arch_factor x size_factor x (base + vCPU x per_vcpu + GiB x per_gib + GPUs x per_gpu)
//   family  base   per_vcpu  per_gib  per_gpu
//   t       0.002  0.010     0.0040   -
//   c       0.004  0.030     0.0040   -
//   m       0.004  0.022     0.0050   -
//   r       0.004  0.020     0.0045   -
//   g       0.050  0.022     0.0050   0.600
//   arch_factor = 1.0 (amd64), 0.8 (arm64)
//   size_factor = 1 + 0.05 x (4 - floor(log2 vCPU)): +20% at 1 vCPU down to -10% at 64 vCPU and
//   up, so small nodes cost more per vCPU than big ones and prices are not linear in size.
// Spot: the aws_catalog.h spot model (30-70% of on-demand, varying by type and zone).
//
// Labels: those of aws_catalog.h plus upstream's kwok labels
// karpenter.kwok.sh/instance-{size,family,cpu,memory}, with the values of the AWS labels. Region
// "test-region" and zones test-zone-a/b/c unless configured.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dovetail/cloudprovider/aws_catalog.h"
#include "dovetail/cloudprovider/catalog.h"

namespace dovetail::cloudprovider::kwok {

inline constexpr std::string_view kLabelInstanceSize = "karpenter.kwok.sh/instance-size";
inline constexpr std::string_view kLabelInstanceFamily = "karpenter.kwok.sh/instance-family";
inline constexpr std::string_view kLabelInstanceCpu = "karpenter.kwok.sh/instance-cpu";
inline constexpr std::string_view kLabelInstanceMemory = "karpenter.kwok.sh/instance-memory";

inline constexpr std::string_view kDefaultRegion = "test-region";

struct KwokCatalogOptions {
  std::string region = std::string(kDefaultRegion);
  // Empty means test-zone-a, test-zone-b, test-zone-c.
  std::vector<std::string> zones;
};

// The synthetic catalog's files (no spot file: spot comes from the model), rows sorted by name and
// prices for `region`.
CatalogFiles GenerateSyntheticCatalogFiles(std::string_view region = kDefaultRegion);

// The karpenter.kwok.sh/* labels of a row.
std::vector<std::pair<std::string, std::string>> KwokLabels(const InstanceTypeRow& row);

// BuildCatalog options for kwok: region, zones (defaults applied) and the kwok labels.
CatalogOptions MakeCatalogOptions(const KwokCatalogOptions& options);

// The built-in synthetic catalog.
absl::StatusOr<Catalog> SyntheticCatalog(const KwokCatalogOptions& options = {});
// A catalog directory (aws_catalog.h format), e.g. one written by WriteSyntheticCatalog or the
// AWS data. Errors: as LoadCatalogDirectory.
absl::StatusOr<Catalog> LoadCatalog(const std::string& directory,
                                    const KwokCatalogOptions& options = {});
// Writes the synthetic catalog's files into `directory` (which must exist).
absl::Status WriteSyntheticCatalog(const std::string& directory,
                                   std::string_view region = kDefaultRegion);

}  // namespace dovetail::cloudprovider::kwok
