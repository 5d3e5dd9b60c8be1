#include "dovetail/solver/plan_validator.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dovetail/apis/core/pod_requests.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/saturating.h"
#include "dovetail/scheduling/label_selector.h"
#include "dovetail/scheduling/requirements.h"
#include "dovetail/scheduling/taints.h"
#include "dovetail/solver/plan_validator/validator.h"

namespace dovetail::solver {

namespace plan_validator {

std::vector<Violation> Validator::Run() {
  for (const auto& p : in_.pools) pools_.emplace(p.name, &p);
  for (const auto& ds : in_.daemon_sets) {
    daemons_.push_back(ds.pod != nullptr ? Resolve(ds.pod, false) : PodInfo{});
  }
  CheckAccounting();
  BuildExistingNodes();
  BuildClaims();
  PlacePods();
  CheckNodes();
  CheckVariants();
  CheckAntiAffinity();
  CheckDomainsPinned();
  Replay();
  CheckLimitsAndPrice();
  return std::move(out_);
}

}  // namespace plan_validator

std::string_view ViolationKindName(ViolationKind kind) {
  switch (kind) {
    case ViolationKind::kPodMissing:
      return "PodMissing";
    case ViolationKind::kPodDuplicated:
      return "PodDuplicated";
    case ViolationKind::kUnknownPod:
      return "UnknownPod";
    case ViolationKind::kUnknownNode:
      return "UnknownNode";
    case ViolationKind::kMissingReason:
      return "MissingReason";
    case ViolationKind::kUnknownPool:
      return "UnknownPool";
    case ViolationKind::kInstanceType:
      return "InstanceType";
    case ViolationKind::kOffering:
      return "Offering";
    case ViolationKind::kPrice:
      return "Price";
    case ViolationKind::kNodeMetadata:
      return "NodeMetadata";
    case ViolationKind::kMinValues:
      return "MinValues";
    case ViolationKind::kLimits:
      return "Limits";
    case ViolationKind::kEmptyNodeClaim:
      return "EmptyNodeClaim";
    case ViolationKind::kRequests:
      return "Requests";
    case ViolationKind::kResources:
      return "Resources";
    case ViolationKind::kNodeAffinity:
      return "NodeAffinity";
    case ViolationKind::kTaints:
      return "Taints";
    case ViolationKind::kVolumeTopology:
      return "VolumeTopology";
    case ViolationKind::kHostPorts:
      return "HostPorts";
    case ViolationKind::kPodAffinity:
      return "PodAffinity";
    case ViolationKind::kPodAntiAffinity:
      return "PodAntiAffinity";
    case ViolationKind::kTopologySpread:
      return "TopologySpread";
    case ViolationKind::kTopologyDomain:
      return "TopologyDomain";
  }
  return "Unknown";
}

std::string Violation::ToString() const {
  return absl::StrCat(std::string(ViolationKindName(kind)), " ", subject, ": ", message);
}

std::vector<Violation> ValidatePlan(const Input& input, const Plan& plan) {
  return plan_validator::Validator(input, plan).Run();
}

}  // namespace dovetail::solver
