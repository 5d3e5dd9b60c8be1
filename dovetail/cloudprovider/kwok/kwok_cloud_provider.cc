#include "dovetail/cloudprovider/kwok/kwok_cloud_provider.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/str_format.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/typed_client.h"
#include "dovetail/scheduling/requirements.h"

namespace dovetail::cloudprovider::kwok {

namespace core = apis::core;
namespace v1 = apis::v1;
using scheduling::Requirements;

namespace {

// Upstream's ten kwok partitions; the index comes from FNV-1a of the node name.
std::string Partition(std::string_view name) {
  uint64_t h = 14695981039346656037ull;
  for (const char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return Cat("partition-", std::string(1, static_cast<char>('a' + h % 10)));
}

void Assign(core::StringMap& into, const core::StringMap& from) {
  for (const auto& [k, v] : from) into[k] = v;
}

}  // namespace

absl::StatusOr<Launch> ChooseLaunch(const Catalog& catalog, const v1::NodeClaim& node_claim) {
  absl::StatusOr<Requirements> requirements =
      Requirements::FromNodeSelectorRequirements(node_claim.spec.requirements);
  if (!requirements.ok()) {
    return CreateError("InvalidRequirements", AsStd(requirements.status().message()));
  }
  std::vector<const InstanceTypePtr*> candidates;
  const scheduling::Requirement* names = requirements->Find(v1::kLabelInstanceType);
  for (const InstanceTypePtr& type : catalog) {
    if (names != nullptr && !names->Has(type->name())) continue;
    candidates.push_back(&type);
  }
  const InstanceTypePtr* best_type = nullptr;
  const Offering* best_offering = nullptr;
  for (const InstanceTypePtr* type : candidates) {
    if (!RequirementsIntersect((*type)->requirements(), *requirements)) continue;
    if (!ResourcesFit(node_claim.spec.resources.requests, (*type)->Allocatable())) continue;
    const Offering* offering = (*type)->CheapestOffering(*requirements);
    if (offering == nullptr) continue;
    if (best_offering == nullptr || offering->price < best_offering->price) {
      best_type = type;
      best_offering = offering;
    }
  }
  if (best_offering == nullptr) {
    return InsufficientCapacityError(Cat("no available offering of ", candidates.size(),
                                         " candidate instance type(s) satisfies NodeClaim ",
                                         node_claim.metadata.name, " (", requirements->String(),
                                         ")"));
  }
  return Launch{*best_type, *best_offering};
}

core::Node BuildNode(const v1::NodeClaim& node_claim, const Launch& launch) {
  const std::string& name = node_claim.metadata.name;
  core::Node node;
  node.api_version = "v1";
  node.kind = "Node";
  node.metadata.name = name;

  core::StringMap& labels = node.metadata.labels;
  labels = node_claim.metadata.labels;
  auto requirements = Requirements::FromNodeSelectorRequirements(node_claim.spec.requirements);
  if (requirements.ok()) Assign(labels, requirements->SingleValuedLabels());
  labels[std::string(v1::kLabelInstanceType)] = launch.instance_type->name();
  Assign(labels, launch.instance_type->requirements().SingleValuedLabels());
  Assign(labels, launch.offering.requirements.SingleValuedLabels());
  labels[std::string(v1::kCapacityTypeLabelKey)] = launch.offering.capacity_type;
  labels[std::string(v1::kLabelTopologyZone)] = launch.offering.zone;
  labels[std::string(v1::kLabelHostname)] = name;
  labels[std::string(kKwokNodeKey)] = std::string(kKwokNodeValue);
  labels[std::string(kPartitionLabelKey)] = Partition(name);
  labels[std::string(kNodeViewerPriceLabelKey)] = absl::StrFormat("%f", launch.offering.price);

  node.metadata.annotations = node_claim.metadata.annotations;
  node.metadata.annotations[std::string(kKwokNodeKey)] = std::string(kKwokNodeValue);
  node.metadata.annotations[std::string(kNodeClaimUidAnnotationKey)] = node_claim.metadata.uid;

  node.spec.provider_id = Cat(kProviderIdPrefix, name);
  node.spec.taints = node_claim.spec.taints;
  for (const core::Taint& t : node_claim.spec.startup_taints) node.spec.taints.push_back(t);
  const bool has_unregistered =
      std::any_of(node.spec.taints.begin(), node.spec.taints.end(), [](const core::Taint& t) {
        return t.key == v1::kUnregisteredTaintKey && t.effect == core::TaintEffect::kNoExecute;
      });
  if (!has_unregistered) {
    node.spec.taints.push_back(
        {.key = std::string(v1::kUnregisteredTaintKey), .effect = core::TaintEffect::kNoExecute});
  }
  node.status.capacity = launch.instance_type->capacity();
  node.status.allocatable = launch.instance_type->Allocatable();
  return node;
}

v1::NodeClaim NodeClaimFromNode(const core::Node& node) {
  v1::NodeClaim claim;
  claim.api_version = std::string(v1::kApiVersion);
  claim.kind = std::string(v1::kNodeClaimKind);
  claim.metadata.name = node.metadata.name;
  claim.metadata.labels = node.metadata.labels;
  claim.metadata.annotations = node.metadata.annotations;
  if (auto uid = node.metadata.annotations.find(kNodeClaimUidAnnotationKey);
      uid != node.metadata.annotations.end()) {
    claim.metadata.uid = uid->second;
  }
  claim.metadata.creation_timestamp = node.metadata.creation_timestamp;
  claim.status.provider_id = node.spec.provider_id;
  claim.status.node_name = node.metadata.name;
  claim.status.capacity = node.status.capacity;
  claim.status.allocatable = node.status.allocatable;
  return claim;
}

absl::StatusOr<std::string> NodeNameFromProviderId(std::string_view provider_id) {
  if (!provider_id.starts_with(kProviderIdPrefix) ||
      provider_id.size() == kProviderIdPrefix.size()) {
    return absl::InvalidArgumentError(
        Cat("provider id \"", provider_id, "\" is not of the form kwok://<node name>"));
  }
  return std::string(provider_id.substr(kProviderIdPrefix.size()));
}

absl::StatusOr<core::Node> KwokCloudProvider::GetLiveNode(std::string_view name,
                                                          std::string_view gone) {
  absl::StatusOr<core::Node> node = GetNode(name);
  if (!node.ok()) {
    if (kube::IsNotFound(node.status()))
      return NodeClaimNotFoundError(Cat("node ", name, " ", gone));
    return node.status();
  }
  if (node->metadata.deletion_timestamp.has_value()) {
    return NodeClaimNotFoundError(Cat("node ", name, " is terminated"));
  }
  return node;
}

absl::StatusOr<core::Node> KwokCloudProvider::GetNode(std::string_view name) {
  kube::TypedClient<core::Node> nodes(client_, kube::resources::kNodes);
  return nodes.Get("", name);
}

absl::StatusOr<v1::NodeClaim> KwokCloudProvider::Create(const v1::NodeClaim& node_claim) {
  ASSIGN_OR_RETURN(const Launch launch, ChooseLaunch(catalog_, node_claim));
  const core::Node wanted = BuildNode(node_claim, launch);
  kube::TypedClient<core::Node> nodes(client_, kube::resources::kNodes);
  absl::StatusOr<core::Node> node = nodes.Create(wanted);
  if (!node.ok() && kube::IsAlreadyExists(node.status())) {
    // Launched before (a retry after a lost answer, or a restart): return that machine.
    node = GetNode(wanted.metadata.name);
    if (!node.ok()) return node.status();
    auto uid = node->metadata.annotations.find(kNodeClaimUidAnnotationKey);
    if (uid == node->metadata.annotations.end() || uid->second != node_claim.metadata.uid) {
      return absl::AlreadyExistsError(Cat("node ", wanted.metadata.name,
                                          " exists and was not launched for NodeClaim "
                                          "UID ",
                                          node_claim.metadata.uid));
    }
    if (node->metadata.deletion_timestamp.has_value()) {
      return absl::AlreadyExistsError(
          Cat("node ", wanted.metadata.name, " of this NodeClaim is being deleted"));
    }
  }
  if (!node.ok()) return node.status();
  v1::NodeClaim launched = node_claim;
  const v1::NodeClaim machine = NodeClaimFromNode(*node);
  Assign(launched.metadata.labels, machine.metadata.labels);
  launched.status.provider_id = machine.status.provider_id;
  launched.status.capacity = machine.status.capacity;
  launched.status.allocatable = machine.status.allocatable;
  return launched;
}

absl::Status KwokCloudProvider::Delete(const v1::NodeClaim& node_claim) {
  if (node_claim.status.provider_id.empty()) {
    return NodeClaimNotFoundError(
        Cat("NodeClaim ", node_claim.metadata.name, " was never launched"));
  }
  ASSIGN_OR_RETURN(const std::string name, NodeNameFromProviderId(node_claim.status.provider_id));
  ASSIGN_OR_RETURN(const core::Node node, GetLiveNode(name, "is gone"));
  auto uid = node.metadata.annotations.find(kNodeClaimUidAnnotationKey);
  if (uid != node.metadata.annotations.end() && !node_claim.metadata.uid.empty() &&
      uid->second != node_claim.metadata.uid) {
    return NodeClaimNotFoundError(
        Cat("node ", name, " belongs to another NodeClaim; this one's is gone"));
  }
  kube::TypedClient<core::Node> nodes(client_, kube::resources::kNodes);
  absl::Status deleted = nodes.Delete("", name, {.precondition_uid = node.metadata.uid});
  if (kube::IsNotFound(deleted)) {
    return NodeClaimNotFoundError(Cat("node ", name, " is gone"));
  }
  return deleted;
}

absl::StatusOr<v1::NodeClaim> KwokCloudProvider::Get(std::string_view provider_id) {
  ASSIGN_OR_RETURN(const std::string name, NodeNameFromProviderId(provider_id));
  ASSIGN_OR_RETURN(const core::Node node, GetLiveNode(name, "not found"));
  return NodeClaimFromNode(node);
}

absl::StatusOr<std::vector<v1::NodeClaim>> KwokCloudProvider::List() {
  kube::TypedClient<core::Node> nodes(client_, kube::resources::kNodes);
  ASSIGN_OR_RETURN(const std::vector<core::Node> listed,
                   nodes.List("", {.label_selector = Cat(kKwokNodeKey, "=", kKwokNodeValue)}));
  std::vector<v1::NodeClaim> out;
  for (const core::Node& node : listed) {
    if (!node.spec.provider_id.starts_with(kProviderIdPrefix)) continue;
    if (node.metadata.deletion_timestamp.has_value()) continue;
    out.push_back(NodeClaimFromNode(node));
  }
  std::sort(out.begin(), out.end(), [](const v1::NodeClaim& a, const v1::NodeClaim& b) {
    return a.status.provider_id < b.status.provider_id;
  });
  return out;
}

absl::StatusOr<Catalog> KwokCloudProvider::GetInstanceTypes(const v1::NodePool&) {
  return catalog_;
}

absl::StatusOr<std::string> KwokCloudProvider::IsDrifted(const v1::NodeClaim&) {
  return std::string();
}

std::vector<RepairPolicy> KwokCloudProvider::RepairPolicies() const {
  return {
      {.condition_type = "Ready",
       .condition_status = core::ConditionStatus::kFalse,
       .toleration = absl::Minutes(10)},
      {.condition_type = "Ready",
       .condition_status = core::ConditionStatus::kUnknown,
       .toleration = absl::Minutes(10)},
  };
}

}  // namespace dovetail::cloudprovider::kwok
