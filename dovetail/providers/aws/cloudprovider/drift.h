// Provider drift of a launched NodeClaim against its EC2NodeClass (docs/aws-provider.md), pure:
//   NodeClassDrift      the node class's karpenter.k8s.aws/ec2nodeclass-hash annotation differs
//                       from the NodeClaim's copy (both present, same hash version);
//   AMIDrift            the instance's image is not among the status.amis whose requirements
//                       fit the instance type;
//   SecurityGroupDrift  the instance's security groups differ from status.securityGroups (as sets);
//   SubnetDrift         the instance's subnet is not in status.subnets;
//   CapacityReservationDrift
//                       the instance was launched into a capacity reservation (its
//                       CapacityReservationId when known, else the NodeClaim's
//                       karpenter.k8s.aws/capacity-reservation-id label) that is no longer in
//                       status.capacityReservations (expired, cancelled, or no longer selected).
// The hash is checked first (no instance needed), then AMI, security groups, subnet, capacity
// reservation.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/cloudprovider/instance_type.h"

namespace dovetail::providers::aws {

struct InstanceFacts {
  std::string image_id;
  std::string subnet_id;
  std::vector<std::string> security_group_ids;
  // The instance's CapacityReservationId from DescribeInstances: "" when it runs outside any
  // reservation; unset when not described, and the NodeClaim's capacity-reservation-id label is
  // used instead.
  std::optional<std::string> capacity_reservation_id;
};

// "NodeClassDrift" when the static hash differs, else "".
std::string StaticDrift(const apis::aws::v1::EC2NodeClass& node_class,
                        const apis::v1::NodeClaim& node_claim);

// The drift reason or "". `instance_type` (may be null) supplies the requirements the AMIs are
// matched against; without it the NodeClaim's labels are used. Errors: FailedPrecondition when
// the node class lists no AMI for the instance (drift cannot be decided).
absl::StatusOr<std::string> DriftReason(
    const apis::aws::v1::EC2NodeClass& node_class, const apis::v1::NodeClaim& node_claim,
    const InstanceFacts& instance, const ::dovetail::cloudprovider::InstanceType* instance_type);

}  // namespace dovetail::providers::aws
