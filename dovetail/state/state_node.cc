#include "dovetail/state/state_node.h"

#include <string_view>

#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::state {

namespace v1 = apis::v1;
namespace core = apis::core;

std::string UnlaunchedNodeClaimKey(std::string_view node_claim_name) {
  return Cat("nodeclaim/", node_claim_name);
}

ResourceList ToResourceList(const std::vector<kube::ResourceAmount>& amounts) {
  ResourceList out;
  for (const kube::ResourceAmount& a : amounts) {
    const QuantityFormat format =
        (*a.name == "memory" || *a.name == "ephemeral-storage" || a.name->starts_with("hugepages-"))
            ? QuantityFormat::kBinarySI
            : QuantityFormat::kDecimalSI;
    out[*a.name] = Quantity::FromMilli(a.milli, format);
  }
  return out;
}

core::Taint ToTaint(const kube::CompactTaint& taint) {
  core::Taint out;
  out.key = *taint.key;
  out.value = taint.value;
  out.effect = static_cast<core::TaintEffect>(taint.effect);
  return out;
}

std::string StateNode::Key() const {
  std::string provider_id = ProviderId();
  if (!provider_id.empty()) return provider_id;
  if (node != nullptr) return node->meta.name;
  if (node_claim != nullptr) return UnlaunchedNodeClaimKey(node_claim->metadata.name);
  return "";
}

std::string StateNode::Name() const {
  if (node != nullptr) return node->meta.name;
  if (node_claim == nullptr) return "";
  if (!node_claim->status.node_name.empty()) return node_claim->status.node_name;
  return node_claim->metadata.name;
}

std::string StateNode::ProviderId() const {
  if (node != nullptr && !node->provider_id.empty()) return node->provider_id;
  if (node_claim != nullptr) return node_claim->status.provider_id;
  return "";
}

std::string StateNode::NodePool() const {
  if (node_claim != nullptr) {
    auto it = node_claim->metadata.labels.find(v1::kNodePoolLabelKey);
    if (it != node_claim->metadata.labels.end()) return it->second;
  }
  if (node != nullptr) {
    if (const std::string* pool = node->meta.Label(v1::kNodePoolLabelKey)) return *pool;
  }
  return "";
}

bool StateNode::Launched() const {
  return node_claim == nullptr || !node_claim->status.provider_id.empty();
}

bool StateNode::Registered() const {
  if (!Managed()) return true;
  if (node == nullptr) return false;
  const std::string* v = node->meta.Label(v1::kNodeRegisteredLabelKey);
  return v != nullptr && *v == "true";
}

bool StateNode::Initialized() const {
  if (!Managed()) return true;
  if (node == nullptr) return false;
  const std::string* v = node->meta.Label(v1::kNodeInitializedLabelKey);
  return v != nullptr && *v == "true";
}

bool StateNode::Deleting() const {
  return (node != nullptr && node->meta.deletion.has_value()) ||
         (node_claim != nullptr && node_claim->metadata.deletion_timestamp.has_value());
}

bool StateNode::Nominated(absl::Time now) const {
  return nominated_until.has_value() && now < *nominated_until;
}

core::StringMap StateNode::Labels() const {
  if (node != nullptr) {
    core::StringMap out;
    for (const kube::KeyValue& kv : node->meta.labels) out[*kv.key] = kv.value;
    return out;
  }
  if (node_claim != nullptr) return node_claim->metadata.labels;
  return {};
}

std::vector<core::Taint> StateNode::Taints() const {
  if (Managed() && !Registered()) return node_claim->spec.taints;
  std::vector<core::Taint> out;
  if (node != nullptr) {
    out.reserve(node->taints.size());
    for (const kube::CompactTaint& t : node->taints) out.push_back(ToTaint(t));
  }
  return out;
}

namespace {

// The node's values with zero or missing entries filled from the NodeClaim's estimate.
ResourceList FillZeros(ResourceList from_node, const ResourceList& from_claim) {
  for (const auto& [name, quantity] : from_claim) {
    auto it = from_node.find(name);
    if (it == from_node.end()) {
      from_node.emplace(name, quantity);
    } else if (it->second.IsZero()) {
      it->second = quantity;
    }
  }
  return from_node;
}

}  // namespace

ResourceList StateNode::Capacity() const {
  if (node == nullptr) return node_claim != nullptr ? node_claim->status.capacity : ResourceList{};
  ResourceList out = ToResourceList(node->capacity);
  if (Managed() && !Initialized()) return FillZeros(std::move(out), node_claim->status.capacity);
  return out;
}

ResourceList StateNode::Allocatable() const {
  if (node == nullptr) {
    return node_claim != nullptr ? node_claim->status.allocatable : ResourceList{};
  }
  ResourceList out = ToResourceList(node->allocatable);
  if (Managed() && !Initialized()) return FillZeros(std::move(out), node_claim->status.allocatable);
  return out;
}

std::vector<std::string> StateNode::StartupTaintKeys() const {
  std::vector<std::string> out;
  if (node_claim == nullptr) return out;
  for (const core::Taint& t : node_claim->spec.startup_taints) out.push_back(t.key);
  return out;
}

}  // namespace dovetail::state
