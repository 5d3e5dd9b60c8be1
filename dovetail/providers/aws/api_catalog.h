// The instance-type catalog from the EC2 API: DescribeInstanceTypes + DescribeInstanceTypeOfferings
// (per availability zone) + DescribeAvailabilityZones (+ DescribeSpotPriceHistory) become
// cloudprovider InstanceTypes. The capacity, overhead, label and offering formulas are not here:
// every API type is converted into a cloudprovider::InstanceTypeRow and handed to
// cloudprovider::BuildCatalog (aws_catalog.h, upstream's formulas), so the static catalog and the
// API catalog cannot drift apart.
//
// What the API adds over the static files (docs/aws-provider.md, "The catalog from the API"):
//   - types: only hvm types with an x86_64 or arm64 architecture;
//   - max pods: upstream's ENI-limited count, (ENIs on the default network card) x (IPv4
//     addresses per ENI - 1) + 2; the row keeps both numbers, so that reserved ENIs
//     (ApiCatalogOptions::capacity) lower the pods capacity as upstream's RESERVED_ENIS does;
//   - zones: each type is offered only in the zones where DescribeInstanceTypeOfferings lists it
//     (and that are available availability zones): its zone requirement and its offerings cover
//     exactly those, with zone ids from DescribeAvailabilityZones;
//   - spot: per-zone prices from DescribeSpotPriceHistory (a (type, zone) without a price has an
//     unavailable spot offering); without spot data at all, BuildCatalog's spot model; types whose
//     SupportedUsageClasses lack "spot" get unavailable spot offerings;
//   - on-demand prices: the static price table (on-demand-prices.csv, us-east-1 as fallback
//     region, as upstream does before the Pricing API answers).
// Data the API does not return (the network-bandwidth label and vpc.amazonaws.com/pod-eni, which
// upstream takes from static tables) comes from the static instance-types.csv row of the same
// name when there is one.
//
// Free functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/cloudprovider/aws_catalog.h"
#include "dovetail/cloudprovider/catalog.h"
#include "dovetail/providers/aws/ec2_client.h"

namespace dovetail::providers::aws {

struct ApiCatalogInputs {
  std::vector<Ec2InstanceTypeInfo> instance_types;
  std::vector<Ec2InstanceTypeOffering> zone_offerings;  // location type availability-zone
  std::vector<Ec2AvailabilityZone> zones;
  std::optional<std::vector<Ec2SpotPrice>> spot_prices;  // nullopt: no spot data
};

struct ApiCatalogOptions {
  std::string region;
  // The static files: on-demand prices, and rows that fill what the API lacks. May be empty.
  cloudprovider::CatalogFiles static_files;
  // VM memory overhead, reserved ENIs (from the rows' ENI data), root volume size.
  cloudprovider::CapacityOptions capacity;
};

// True for the types upstream discovers: hvm and an x86_64 or arm64 architecture.
bool IsSupportedInstanceType(const Ec2InstanceTypeInfo& info);

// One API type as a catalog row (allocatable columns filled in). `static_row` may be null.
// Errors: InvalidArgument for a type without vCPUs, memory or a supported architecture.
absl::StatusOr<cloudprovider::InstanceTypeRow> InstanceTypeRowFromApi(
    const Ec2InstanceTypeInfo& info, const cloudprovider::InstanceTypeRow* static_row);

// The catalog from fetched inputs. Types offered in no available zone are left out.
absl::StatusOr<cloudprovider::Catalog> BuildApiCatalog(const ApiCatalogInputs& inputs,
                                                       const ApiCatalogOptions& options);

// Fetches the inputs. A DescribeSpotPriceHistory failure is not fatal: spot_prices stays nullopt
// and `spot_error` (when non-null) receives the error. Other failures are returned.
absl::StatusOr<ApiCatalogInputs> FetchApiCatalogInputs(Ec2Client& ec2, absl::Time now,
                                                       absl::Status* spot_error = nullptr);

}  // namespace dovetail::providers::aws
