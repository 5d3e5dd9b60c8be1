// The CreateFleet side of a launch (docs/aws-provider.md), as pure functions: which instance
// types and offerings a NodeClaim may launch, the subnet per zone, the fleet overrides, the
// CreateFleet request and response, and what the fleet's errors mean (ICE-cache marks,
// InsufficientCapacity vs CreateError).
//
// Pure functions and plain data; thread-safe (MarkFleetErrors writes to the thread-safe cache).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/cloudprovider/catalog.h"
#include "dovetail/providers/aws/query_protocol.h"
#include "dovetail/providers/aws/unavailable_offerings.h"
#include "pugixml.hpp"

namespace dovetail::providers::aws {

// Upstream truncates the candidate list to this many cheapest types.
inline constexpr size_t kMaxInstanceTypes = 60;

// One instance type the launch may use and its usable offerings (available, compatible with the
// NodeClaim, of the chosen capacity type, in a zone with a subnet).
struct LaunchCandidate {
  cloudprovider::InstanceTypePtr instance_type;
  std::vector<cloudprovider::Offering> offerings;
};

struct LaunchPlan {
  std::string capacity_type;                // spot | on-demand
  std::vector<LaunchCandidate> candidates;  // cheapest first, at most kMaxInstanceTypes
};

// Filters `catalog` for `node_claim` (upstream's launch filters): the type's requirements are
// compatible with the NodeClaim's, its allocatable fits spec.resources.requests, and it has an
// available offering compatible with the requirements in one of `zones` (the zones of the node
// class's subnets; empty: any) that the ICE cache does not hold. Capacity type: spot when allowed
// and offered, else on-demand; when both are allowed, spot offerings pricier than the cheapest
// on-demand offering are dropped. Metal and accelerator types are dropped when a generic type
// remains. Errors: InsufficientCapacityError when nothing remains; CreateError
// (InvalidRequirements) for requirements that do not parse.
absl::StatusOr<LaunchPlan> PlanLaunch(const cloudprovider::Catalog& catalog,
                                      const apis::v1::NodeClaim& node_claim,
                                      const std::vector<std::string>& zones,
                                      const UnavailableOfferings* unavailable);

// The subnet per zone: the one with the most free IPs (`free_ips` by subnet id; a subnet
// without a count ranks by its position in `subnets`, which the node class controller sorts by
// free IPs).
std::map<std::string, std::string> SubnetPerZone(const std::vector<apis::aws::v1::Subnet>& subnets,
                                                 const std::map<std::string, int64_t>& free_ips);

struct FleetOverride {
  std::string instance_type;
  std::string zone;
  std::string subnet_id;
  std::string image_id;
  double priority = 0;
  bool operator==(const FleetOverride&) const = default;
};

// Overrides = candidate types x their offerings' zones, each with the zone's subnet and the
// type's image, priority = price; (type, zone) deduplicated; zones without a subnet skipped.
std::vector<FleetOverride> BuildOverrides(const std::vector<LaunchCandidate>& candidates,
                                          const std::map<std::string, std::string>& subnet_per_zone,
                                          const std::map<std::string, std::string>& image_per_type);

struct FleetLaunchTemplateConfig {
  std::string launch_template_name;
  std::vector<FleetOverride> overrides;
};

struct FleetRequest {
  std::string client_token;   // FleetClientToken(NodeClaim UID, the rest of this request)
  std::string capacity_type;  // spot | on-demand
  std::vector<FleetLaunchTemplateConfig> configs;
  std::map<std::string, std::string> tags;  // instance, volume, fleet
  std::optional<std::string> context;
};

// CreateFleet parameters: Type instant, TotalTargetCapacity 1, DefaultTargetCapacityType, spot
// price-capacity-optimized or on-demand lowest-price, the launch template configs with overrides
// ($Latest), ClientToken, TagSpecification for instance, volume and fleet.
QueryParams CreateFleetParams(const FleetRequest& request);

// CreateFleet's idempotency token for a launch of the NodeClaim `node_claim_uid` with `request`
// (its client_token ignored): the UID, "-", then 16 hex digits of the SHA-256 of the request's
// parameters (53 characters; EC2 allows 64). A retry of the same launch replays the same token,
// so EC2 returns the fleet it already made instead of launching again; a launch whose plan
// changed (the ICE cache, prices or subnets moved on) gets a new token instead of EC2's
// IdempotentParameterMismatch. A launch the changed plan would duplicate is found first by its
// instance's karpenter.sh/nodeclaim tag (aws_cloud_provider.h, Create step 2).
std::string FleetClientToken(std::string_view node_claim_uid, const FleetRequest& request);

struct FleetInstance {
  std::string instance_id;
  std::string instance_type;
  std::string zone;
  std::string subnet_id;
  std::string lifecycle;  // spot | on-demand
};

struct FleetError {
  std::string code;
  std::string message;
  std::string instance_type;
  std::string zone;
  std::string subnet_id;
  std::string lifecycle;
};

struct FleetResult {
  std::string fleet_id;
  std::vector<FleetInstance> instances;
  std::vector<FleetError> errors;
};

// Parses a CreateFleetResponse (fleetId, fleetInstanceSet, errorSet).
FleetResult ParseCreateFleetResponse(const pugi::xml_node& root);

// Marks every unfulfillable-capacity error's (capacity type, type, zone) in `unavailable`
// (InsufficientFreeAddressesInSubnet is a subnet's problem and is not an offering mark;
// AuthFailure.ServiceLinkedRoleCreationNotPermitted marks all of spot). Returns how many marks.
int MarkFleetErrors(const std::vector<FleetError>& errors, std::string_view capacity_type,
                    UnavailableOfferings& unavailable);

// The `reason` of karpenter_cloudprovider_instance_launch_failures_total for one CreateFleet error:
// upstream's launch-failure reasons (its errors.ToReasonMessage over "<code>: <message>"), e.g.
// Unauthorized, AMINotFound, VCPULimitExceeded, InsufficientFreeAddressesInSubnet; anything else,
// capacity errors such as InsufficientInstanceCapacity included, is "LaunchFailed".
std::string LaunchFailureReason(std::string_view code, std::string_view message);

// The error of a fleet that launched nothing: InsufficientCapacityError when every error was a
// capacity error (or there were none), else CreateError with the first other error's code as the
// reason.
absl::Status NoInstanceError(const std::vector<FleetError>& errors);

}  // namespace dovetail::providers::aws
