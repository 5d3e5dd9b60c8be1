#include "dovetail/providers/aws/cloudprovider/fleet.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/cloudprovider/errors.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/providers/aws/errors.h"
#include "dovetail/providers/aws/sigv4.h"
#include "dovetail/scheduling/requirements.h"

namespace dovetail::providers::aws {

namespace awsv1 = apis::aws::v1;
namespace v1 = apis::v1;
namespace cp = ::dovetail::cloudprovider;
using scheduling::Requirements;

namespace {

bool IsExotic(const cp::InstanceType& type) {
  const auto labels = type.requirements().SingleValuedLabels();
  auto size = labels.find(std::string(v1::kLabelInstanceSize));
  if (size != labels.end() && size->second.find("metal") != std::string::npos) return true;
  for (std::string_view key : {v1::kLabelInstanceGpuCount, v1::kLabelInstanceAcceleratorCount}) {
    auto it = labels.find(std::string(key));
    if (it != labels.end() && it->second != "0") return true;
  }
  return false;
}

double Cheapest(const LaunchCandidate& c) {
  double best = std::numeric_limits<double>::infinity();
  for (const cp::Offering& o : c.offerings) best = std::min(best, o.price);
  return best;
}

}  // namespace

absl::StatusOr<LaunchPlan> PlanLaunch(const cp::Catalog& catalog, const v1::NodeClaim& node_claim,
                                      const std::vector<std::string>& zones,
                                      const UnavailableOfferings* unavailable) {
  absl::StatusOr<Requirements> reqs =
      Requirements::FromNodeSelectorRequirements(node_claim.spec.requirements);
  if (!reqs.ok()) return cp::CreateError("InvalidRequirements", AsStd(reqs.status().message()));
  const std::set<std::string> zone_set(zones.begin(), zones.end());
  const scheduling::Requirement ct = reqs->Get(v1::kCapacityTypeLabelKey);
  const bool spot_allowed = ct.Has(v1::kCapacityTypeSpot);
  const bool od_allowed = ct.Has(v1::kCapacityTypeOnDemand);

  // Per type, the usable offerings of each capacity type.
  std::vector<LaunchCandidate> spot, od;
  for (const cp::InstanceTypePtr& type : catalog) {
    if (!cp::RequirementsIntersect(type->requirements(), *reqs)) continue;
    if (!cp::ResourcesFit(node_claim.spec.resources.requests, type->Allocatable())) continue;
    LaunchCandidate s{type, {}}, o{type, {}};
    for (const cp::Offering& offering : type->offerings()) {
      if (!offering.available) continue;
      if (!zone_set.empty() && !zone_set.contains(offering.zone)) continue;
      if (!cp::RequirementsIntersect(offering.requirements, *reqs)) continue;
      if (unavailable != nullptr &&
          unavailable->IsUnavailable(offering.capacity_type, type->name(), offering.zone)) {
        continue;
      }
      if (offering.capacity_type == v1::kCapacityTypeSpot && spot_allowed) {
        s.offerings.push_back(offering);
      } else if (offering.capacity_type == v1::kCapacityTypeOnDemand && od_allowed) {
        o.offerings.push_back(offering);
      }
    }
    if (!s.offerings.empty()) spot.push_back(std::move(s));
    if (!o.offerings.empty()) od.push_back(std::move(o));
  }
  LaunchPlan plan;
  if (!spot.empty()) {
    plan.capacity_type = std::string(v1::kCapacityTypeSpot);
    plan.candidates = std::move(spot);
    if (!od.empty()) {
      double cheapest_od = std::numeric_limits<double>::infinity();
      for (const LaunchCandidate& c : od) cheapest_od = std::min(cheapest_od, Cheapest(c));
      for (LaunchCandidate& c : plan.candidates) {
        std::erase_if(c.offerings,
                      [&](const cp::Offering& offering) { return offering.price > cheapest_od; });
      }
      std::erase_if(plan.candidates, [](const LaunchCandidate& c) { return c.offerings.empty(); });
      if (plan.candidates.empty()) {  // every spot offering was pricier than on-demand
        plan.capacity_type = std::string(v1::kCapacityTypeOnDemand);
        plan.candidates = std::move(od);
      }
    }
  } else {
    plan.capacity_type = std::string(v1::kCapacityTypeOnDemand);
    plan.candidates = std::move(od);
  }
  if (plan.candidates.empty()) {
    return cp::InsufficientCapacityError(
        Cat("all requested instance types were unavailable for NodeClaim ",
            node_claim.metadata.name, " (", reqs->String(), ")"));
  }
  // Drop metal and accelerator types when a generic type remains.
  if (std::any_of(plan.candidates.begin(), plan.candidates.end(),
                  [](const LaunchCandidate& c) { return !IsExotic(*c.instance_type); })) {
    std::erase_if(plan.candidates,
                  [](const LaunchCandidate& c) { return IsExotic(*c.instance_type); });
  }
  std::stable_sort(plan.candidates.begin(), plan.candidates.end(),
                   [](const LaunchCandidate& a, const LaunchCandidate& b) {
                     const double pa = Cheapest(a), pb = Cheapest(b);
                     if (pa != pb) return pa < pb;
                     return a.instance_type->name() < b.instance_type->name();
                   });
  if (plan.candidates.size() > kMaxInstanceTypes) plan.candidates.resize(kMaxInstanceTypes);
  return plan;
}

std::map<std::string, std::string> SubnetPerZone(const std::vector<awsv1::Subnet>& subnets,
                                                 const std::map<std::string, int64_t>& free_ips) {
  std::map<std::string, std::string> out;
  std::map<std::string, int64_t> best;
  for (const awsv1::Subnet& s : subnets) {
    auto it = free_ips.find(s.id);
    const int64_t ips = it == free_ips.end() ? -1 : it->second;
    auto cur = best.find(s.zone);
    if (cur == best.end() || ips > cur->second) {
      best[s.zone] = ips;
      out[s.zone] = s.id;
    }
  }
  return out;
}

std::vector<FleetOverride> BuildOverrides(
    const std::vector<LaunchCandidate>& candidates,
    const std::map<std::string, std::string>& subnet_per_zone,
    const std::map<std::string, std::string>& image_per_type) {
  std::vector<FleetOverride> out;
  std::set<std::pair<std::string, std::string>> seen;
  for (const LaunchCandidate& c : candidates) {
    const std::string& name = c.instance_type->name();
    auto image = image_per_type.find(name);
    for (const cp::Offering& o : c.offerings) {
      auto subnet = subnet_per_zone.find(o.zone);
      if (subnet == subnet_per_zone.end()) continue;
      if (!seen.emplace(name, o.zone).second) continue;
      out.push_back({.instance_type = name,
                     .zone = o.zone,
                     .subnet_id = subnet->second,
                     .image_id = image == image_per_type.end() ? "" : image->second,
                     .priority = o.price});
    }
  }
  return out;
}

std::string FleetClientToken(std::string_view node_claim_uid, const FleetRequest& request) {
  FleetRequest without_token = request;
  without_token.client_token.clear();
  std::string canonical;
  for (const auto& [key, value] : CreateFleetParams(without_token)) {
    absl::StrAppend(&canonical, key, "=", value, "\n");
  }
  return Cat(node_claim_uid, "-", Sha256Hex(canonical).substr(0, 16));
}

QueryParams CreateFleetParams(const FleetRequest& r) {
  QueryParams p;
  p.emplace_back("Type", "instant");
  p.emplace_back("ClientToken", r.client_token);
  p.emplace_back("TargetCapacitySpecification.TotalTargetCapacity", "1");
  p.emplace_back("TargetCapacitySpecification.DefaultTargetCapacityType", r.capacity_type);
  if (r.capacity_type == v1::kCapacityTypeSpot) {
    p.emplace_back("SpotOptions.AllocationStrategy", "price-capacity-optimized");
  } else {
    p.emplace_back("OnDemandOptions.AllocationStrategy", "lowest-price");
  }
  for (size_t i = 0; i < r.configs.size(); ++i) {
    const std::string cp = Cat("LaunchTemplateConfigs.", i + 1, ".");
    p.emplace_back(cp + "LaunchTemplateSpecification.LaunchTemplateName",
                   r.configs[i].launch_template_name);
    p.emplace_back(cp + "LaunchTemplateSpecification.Version", "$Latest");
    for (size_t j = 0; j < r.configs[i].overrides.size(); ++j) {
      const FleetOverride& o = r.configs[i].overrides[j];
      const std::string op = Cat(cp, "Overrides.", j + 1, ".");
      p.emplace_back(op + "InstanceType", o.instance_type);
      p.emplace_back(op + "SubnetId", o.subnet_id);
      p.emplace_back(op + "AvailabilityZone", o.zone);
      if (!o.image_id.empty()) p.emplace_back(op + "ImageId", o.image_id);
      p.emplace_back(op + "Priority", absl::StrFormat("%.6f", o.priority));
    }
  }
  if (r.context.has_value()) p.emplace_back("Context", *r.context);
  std::vector<std::string> types = {"instance", "volume", "fleet"};
  for (size_t i = 0; i < types.size() && !r.tags.empty(); ++i) {
    const std::string sp = Cat("TagSpecification.", i + 1, ".");
    p.emplace_back(sp + "ResourceType", types[i]);
    size_t j = 1;
    for (const auto& [k, v] : r.tags) {
      p.emplace_back(Cat(sp, "Tag.", j, ".Key"), k);
      p.emplace_back(Cat(sp, "Tag.", j, ".Value"), v);
      ++j;
    }
  }
  return p;
}

FleetResult ParseCreateFleetResponse(const pugi::xml_node& root) {
  FleetResult out;
  out.fleet_id = Text(root, "fleetId");
  for (pugi::xml_node item : root.child("fleetInstanceSet").children("item")) {
    const pugi::xml_node ov = item.child("launchTemplateAndOverrides").child("overrides");
    for (const std::string& id : Items(item, "instanceIds")) {
      out.instances.push_back({.instance_id = id,
                               .instance_type = Text(item, "instanceType"),
                               .zone = Text(ov, "availabilityZone"),
                               .subnet_id = Text(ov, "subnetId"),
                               .lifecycle = Text(item, "lifecycle")});
    }
  }
  for (pugi::xml_node item : root.child("errorSet").children("item")) {
    const pugi::xml_node ov = item.child("launchTemplateAndOverrides").child("overrides");
    out.errors.push_back({.code = Text(item, "errorCode"),
                          .message = Text(item, "errorMessage"),
                          .instance_type = Text(ov, "instanceType"),
                          .zone = Text(ov, "availabilityZone"),
                          .subnet_id = Text(ov, "subnetId"),
                          .lifecycle = Text(item, "lifecycle")});
  }
  return out;
}

int MarkFleetErrors(const std::vector<FleetError>& errors, std::string_view capacity_type,
                    UnavailableOfferings& unavailable) {
  int marks = 0;
  for (const FleetError& e : errors) {
    if (e.code == "AuthFailure.ServiceLinkedRoleCreationNotPermitted") {
      unavailable.MarkCapacityTypeUnavailable(e.code, v1::kCapacityTypeSpot);
      ++marks;
      continue;
    }
    if (e.code == "InsufficientFreeAddressesInSubnet") continue;
    if (!IsUnfulfillableCapacityCode(e.code)) continue;
    if (e.instance_type.empty() || e.zone.empty()) continue;
    const std::string ct = e.lifecycle.empty() ? std::string(capacity_type) : e.lifecycle;
    unavailable.MarkUnavailable(e.code, ct, e.instance_type, e.zone);
    ++marks;
  }
  return marks;
}

absl::Status NoInstanceError(const std::vector<FleetError>& errors) {
  for (const FleetError& e : errors) {
    if (!IsUnfulfillableCapacityCode(e.code) &&
        e.code != "AuthFailure.ServiceLinkedRoleCreationNotPermitted") {
      return cp::CreateError(e.code, Cat("CreateFleet: ", e.code, ": ", e.message));
    }
  }
  std::vector<std::string> codes;
  codes.reserve(errors.size());
  for (const FleetError& e : errors) {
    codes.push_back(Cat(e.code, " (", e.instance_type, " in ", e.zone, ")"));
  }
  return cp::InsufficientCapacityError(
      Cat("CreateFleet launched no instance",
          codes.empty() ? std::string() : Cat(": ", absl::StrJoin(codes, ", "))));
}

std::string LaunchFailureReason(std::string_view code, std::string_view message) {
  const std::string text = Cat(code, ": ", message);
  auto has = [&text](std::string_view part) { return text.find(part) != std::string::npos; };
  // First match wins; the order is upstream's (authorisation before the rest, quotas and subnet
  // exhaustion last).
  if (has("AuthFailure.ServiceLinkedRoleCreationNotPermitted")) return "SpotSLRCreationFailed";
  if (has("UnauthorizedOperation") || has("AccessDenied") || has("AuthFailure")) {
    return has("Not authorized for images") ? "AMIAuthorizationFailure" : "Unauthorized";
  }
  struct Rule {
    std::string_view all[2];  // every non-empty part must occur
    std::string_view reason;
  };
  static constexpr Rule kRules[] = {
      {{"InvalidParameter", "belong to different networks"}, "SecurityGroupSubnetVPCMismatch"},
      {{"iamInstanceProfile.name is invalid", ""}, "InstanceProfileNameInvalid"},
      {{"InvalidLaunchTemplateId.NotFound", ""}, "LaunchTemplateNotFound"},
      {{"User data is limited to", ""}, "UserDataSizeLimitExceeded"},
      {{"InvalidAMIID.Malformed", ""}, "InvalidAMIID"},
      {{"InvalidAMIID.NotFound", ""}, "AMINotFound"},
      {{"RequestLimitExceeded", ""}, "RequestLimitExceeded"},
      {{"InternalError", ""}, "InternalError"},
      {{"not eligible for Free Tier", ""}, "FreeTierIneligible"},
      {{"MaxFleetCountExceeded", ""}, "FleetQuotaExceeded"},
      {{"PendingVerification", ""}, "AccountPendingVerification"},
      {{"MaxSpotInstanceCountExceeded", ""}, "SpotQuotaExceeded"},
      {{"VcpuLimitExceeded", ""}, "VCPULimitExceeded"},
      {{"InsufficientFreeAddressesInSubnet", ""}, "InsufficientFreeAddressesInSubnet"},
  };
  for (const Rule& rule : kRules) {
    if (has(rule.all[0]) && (rule.all[1].empty() || has(rule.all[1]))) {
      return std::string(rule.reason);
    }
  }
  return "LaunchFailed";
}

}  // namespace dovetail::providers::aws
