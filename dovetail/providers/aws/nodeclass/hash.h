// The EC2NodeClass hash stamped on the class (karpenter.k8s.aws/ec2nodeclass-hash and
// -hash-version) and, by the launch path, on its NodeClaims; a NodeClaim whose hash differs from
// its class's (same version) has drifted statically (reference §1.5, §2.9 NodeClassDrift).
//
// What is hashed: the spec as its JSON encoding, without the fields that never cause static drift
// (subnetSelectorTerms, securityGroupSelectorTerms, capacityReservationSelectorTerms and
// amiSelectorTerms, whose resolved values drift on their own; ipPrefixCount; the raw amiFamily),
// plus the effective AMI family (spec.amiFamily, else the alias's family). So hashed are
// placementGroupSelector, associatePublicIPAddress, userData, role, instanceProfile, tags,
// kubelet, blockDeviceMappings, instanceStorePolicy, networkInterfaces, detailedMonitoring,
// metadataOptions (with the CRD defaults applied, so an omitted block equals the default one),
// connectionTracking, context, cpuOptions and unknown spec fields. The value is the decimal
// 64-bit FNV-1a of the canonical JSON text (keys sorted).
//
// The number is Dovetail's, not upstream's, so the version is Dovetail's too
// (kNodeClassHashVersion): NodeClaims launched by Karpenter carry upstream's version and are
// re-stamped rather than drifted, as a hash-version bump does upstream.
// Pure; thread-compatible.
#pragma once

#include <string>
#include <string_view>

#include "dovetail/apis/aws/v1/ec2nodeclass.h"

namespace dovetail::providers::aws::nodeclass {

inline constexpr std::string_view kNodeClassHashVersion = "dovetail-v1";

std::string NodeClassHash(const apis::aws::v1::EC2NodeClassSpec& spec);

}  // namespace dovetail::providers::aws::nodeclass
