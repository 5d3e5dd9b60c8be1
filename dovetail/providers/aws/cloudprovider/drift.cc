#include "dovetail/providers/aws/cloudprovider/drift.h"

#include <algorithm>
#include <set>

#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/scheduling/requirements.h"

namespace dovetail::providers::aws {

namespace awsv1 = apis::aws::v1;
namespace v1 = apis::v1;
using scheduling::Requirements;

std::string StaticDrift(const awsv1::EC2NodeClass& node_class, const v1::NodeClaim& node_claim) {
  const auto& nc = node_class.metadata.annotations;
  const auto& claim = node_claim.metadata.annotations;
  auto nc_hash = nc.find(v1::kEC2NodeClassHashAnnotationKey);
  auto claim_hash = claim.find(v1::kEC2NodeClassHashAnnotationKey);
  if (nc_hash == nc.end() || claim_hash == claim.end()) return "";
  auto nc_version = nc.find(v1::kEC2NodeClassHashVersionAnnotationKey);
  auto claim_version = claim.find(v1::kEC2NodeClassHashVersionAnnotationKey);
  const std::string a = nc_version == nc.end() ? "" : nc_version->second;
  const std::string b = claim_version == claim.end() ? "" : claim_version->second;
  if (a != b) return "";
  return nc_hash->second != claim_hash->second ? "NodeClassDrift" : "";
}

absl::StatusOr<std::string> DriftReason(const awsv1::EC2NodeClass& node_class,
                                        const v1::NodeClaim& node_claim,
                                        const InstanceFacts& instance,
                                        const ::dovetail::cloudprovider::InstanceType* type) {
  if (std::string s = StaticDrift(node_class, node_claim); !s.empty()) return s;
  const Requirements node =
      type != nullptr ? type->requirements() : Requirements::FromLabels(node_claim.metadata.labels);
  std::set<std::string> images;
  for (const awsv1::AMI& ami : node_class.status.amis) {
    absl::StatusOr<Requirements> r = Requirements::FromNodeSelectorRequirements(ami.requirements);
    if (!r.ok()) continue;
    if (::dovetail::cloudprovider::RequirementsIntersect(node, *r)) images.insert(ami.id);
  }
  if (images.empty()) {
    return absl::FailedPreconditionError(Cat("EC2NodeClass ", node_class.metadata.name,
                                             " lists no AMI for NodeClaim ",
                                             node_claim.metadata.name));
  }
  const std::string image =
      !node_claim.status.image_id.empty() ? node_claim.status.image_id : instance.image_id;
  if (!images.contains(image)) return std::string("AMIDrift");
  std::set<std::string> want,
      have(instance.security_group_ids.begin(), instance.security_group_ids.end());
  for (const awsv1::SecurityGroup& sg : node_class.status.security_groups) want.insert(sg.id);
  if (want != have) return std::string("SecurityGroupDrift");
  const bool subnet_ok =
      std::any_of(node_class.status.subnets.begin(), node_class.status.subnets.end(),
                  [&](const awsv1::Subnet& s) { return s.id == instance.subnet_id; });
  if (!subnet_ok) return std::string("SubnetDrift");
  std::string reservation;
  if (instance.capacity_reservation_id.has_value()) {
    reservation = *instance.capacity_reservation_id;
  } else if (auto it = node_claim.metadata.labels.find(v1::kLabelCapacityReservationId);
             it != node_claim.metadata.labels.end()) {
    reservation = it->second;
  }
  if (!reservation.empty() &&
      std::none_of(node_class.status.capacity_reservations.begin(),
                   node_class.status.capacity_reservations.end(),
                   [&](const awsv1::CapacityReservation& r) { return r.id == reservation; })) {
    return std::string("CapacityReservationDrift");
  }
  return std::string();
}

}  // namespace dovetail::providers::aws
