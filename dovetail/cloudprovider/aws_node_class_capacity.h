// How an EC2NodeClass shapes its instance types, as upstream's instance type provider computes
// them (its facts: the AMI family's default block devices and feature flags, the kubelet
// settings that reach allocatable). The capacity formulas themselves are in aws_catalog.h; this
// only turns a class into the CapacityOptions they read:
//
//   ephemeral-storage  instanceStorePolicy RAID0: the instance store's total size (types without
//                      one fall through). Else, with blockDeviceMappings: the one marked
//                      rootVolume, if it has a size; for the Custom family the last mapping's size
//                      (20Gi without one); for the others the mapping of the family's data device
//                      if it has a size. Else the family's default: 20Gi on /dev/xvda (AL2,
//                      AL2023), 20Gi on /dev/xvdb (Bottlerocket's data volume), 50Gi on /dev/sda1
//                      (Windows), 20Gi (Custom, which has no default mapping).
//   pods               kubelet maxPods, else ENI-limited (RESERVED_ENIS and EFA-only interfaces on
//                      card 0 lowering it), or 110 on Windows; kubelet podsPerCore caps it except
//                      on Bottlerocket.
//   kube-reserved      memory from the ENI-limited count (AL2, AL2023, Custom) or from the pods
//                      capacity (Bottlerocket, Windows); kubelet kubeReserved replaces entries.
//   system-reserved    kubelet systemReserved.
//   eviction           kubelet evictionHard memory.available and nodefs.available (evictionSoft
//                      never changes allocatable).
// A class without an AMI family or alias is Custom, as upstream reads it.
//
// Pure functions; thread-safe.
#pragma once

#include "absl/status/statusor.h"
#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/cloudprovider/aws_catalog.h"

namespace dovetail::cloudprovider {

// `controller` carries the controller's settings (VM memory overhead, reserved ENIs); the class's
// fields are set on a copy. Errors: InvalidArgument naming the field for a kubeReserved or
// systemReserved quantity, or an evictionHard signal, that does not parse (the API server's
// validation normally refuses them first).
absl::StatusOr<CapacityOptions> NodeClassCapacity(const apis::aws::v1::EC2NodeClassSpec& spec,
                                                  const CapacityOptions& controller = {});

}  // namespace dovetail::cloudprovider
