#include "dovetail/controllers/nodeclaim/lifecycle.h"

#include <algorithm>

#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/controllers/nodeclaim/conditions.h"

namespace dovetail::controllers::nodeclaim {

namespace core = apis::core;
namespace v1 = apis::v1;

namespace {

bool SameKeyAndEffect(const core::Taint& a, const core::Taint& b) {
  return a.key == b.key && a.effect == b.effect;
}

std::string_view EffectName(uint8_t effect) {
  switch (static_cast<core::TaintEffect>(effect)) {
    case core::TaintEffect::kNoSchedule:
      return "NoSchedule";
    case core::TaintEffect::kPreferNoSchedule:
      return "PreferNoSchedule";
    case core::TaintEffect::kNoExecute:
      return "NoExecute";
  }
  return "";
}

bool IsKnownEphemeral(const kube::CompactTaint& taint) {
  if (taint.key->starts_with(v1::kEphemeralTaintKeyPrefix)) return true;
  for (const v1::EphemeralTaint& e : v1::kKnownEphemeralTaints) {
    const uint8_t effect = e.effect == v1::EphemeralTaintEffect::kNoSchedule
                               ? static_cast<uint8_t>(core::TaintEffect::kNoSchedule)
                               : static_cast<uint8_t>(core::TaintEffect::kNoExecute);
    if (*taint.key == e.key && taint.effect == effect) return true;
  }
  return false;
}

const core::Condition* Find(const v1::NodeClaim& claim, std::string_view type) {
  return v1::FindCondition(claim.status.conditions, type);
}

}  // namespace

v1::NodeClaim MergeLaunched(const v1::NodeClaim& node_claim, const v1::NodeClaim& launched) {
  v1::NodeClaim out = node_claim;
  core::StringMap labels = launched.metadata.labels;
  for (const auto& [k, v] : node_claim.metadata.labels) labels[k] = v;
  out.metadata.labels = std::move(labels);
  core::StringMap annotations = launched.metadata.annotations;
  for (const auto& [k, v] : node_claim.metadata.annotations) annotations[k] = v;
  out.metadata.annotations = std::move(annotations);
  out.status.provider_id = launched.status.provider_id;
  out.status.image_id = launched.status.image_id;
  out.status.capacity = launched.status.capacity;
  out.status.allocatable = launched.status.allocatable;
  if (!launched.status.node_name.empty()) out.status.node_name = launched.status.node_name;
  return out;
}

bool HasUnregisteredTaint(const core::Node& node) {
  return std::any_of(node.spec.taints.begin(), node.spec.taints.end(), [](const core::Taint& t) {
    return t.key == v1::kUnregisteredTaintKey && t.effect == core::TaintEffect::kNoExecute;
  });
}

bool SyncNodeForRegistration(core::Node& node, const v1::NodeClaim& node_claim) {
  bool changed = false;
  auto& finalizers = node.metadata.finalizers;
  if (std::find(finalizers.begin(), finalizers.end(), v1::kTerminationFinalizer) ==
      finalizers.end()) {
    finalizers.push_back(std::string(v1::kTerminationFinalizer));
    changed = true;
  }
  auto& owners = node.metadata.owner_references;
  if (std::none_of(owners.begin(), owners.end(), [&](const core::OwnerReference& o) {
        return o.uid == node_claim.metadata.uid;
      })) {
    owners.push_back({.api_version = std::string(v1::kApiVersion),
                      .kind = std::string(v1::kNodeClaimKind),
                      .name = node_claim.metadata.name,
                      .uid = node_claim.metadata.uid,
                      .controller = std::nullopt,
                      .block_owner_deletion = true});
    changed = true;
  }
  for (const auto* source : {&node_claim.metadata.labels, &node_claim.metadata.annotations}) {
    core::StringMap& target =
        source == &node_claim.metadata.labels ? node.metadata.labels : node.metadata.annotations;
    for (const auto& [k, v] : *source) {
      auto it = target.find(k);
      if (it == target.end() || it->second != v) {
        target[k] = v;
        changed = true;
      }
    }
  }
  auto no_sync = node.metadata.labels.find(v1::kNodeDoNotSyncTaintsLabelKey);
  if (no_sync == node.metadata.labels.end() || no_sync->second != "true") {
    for (const auto* list : {&node_claim.spec.taints, &node_claim.spec.startup_taints}) {
      for (const core::Taint& taint : *list) {
        if (std::none_of(node.spec.taints.begin(), node.spec.taints.end(),
                         [&](const core::Taint& t) { return SameKeyAndEffect(t, taint); })) {
          node.spec.taints.push_back(taint);
          changed = true;
        }
      }
    }
  }
  const size_t before = node.spec.taints.size();
  std::erase_if(node.spec.taints, [](const core::Taint& t) {
    return t.key == v1::kUnregisteredTaintKey && t.effect == core::TaintEffect::kNoExecute;
  });
  changed |= node.spec.taints.size() != before;
  std::string& registered = node.metadata.labels[std::string(v1::kNodeRegisteredLabelKey)];
  if (registered != "true") {
    registered = "true";
    changed = true;
  }
  return changed;
}

ConditionVerdict CheckInitialization(const v1::NodeClaim& node_claim, const kube::NodeInfo* node) {
  using Status = core::ConditionStatus;
  if (node == nullptr) {
    return {Status::kUnknown, std::string(kReasonNodeNotFound), "Node not registered with cluster"};
  }
  if (node->ready != Status::kTrue) {
    return {Status::kFalse, std::string(kReasonNodeNotReady), "Node status is NotReady"};
  }
  for (const core::Taint& startup : node_claim.spec.startup_taints) {
    for (const kube::CompactTaint& t : node->taints) {
      if (*t.key == startup.key && t.effect == static_cast<uint8_t>(startup.effect)) {
        return {Status::kFalse, std::string(kReasonStartupTaintsExist),
                Cat("StartupTaint \"", startup.key, ":", EffectName(t.effect), "\" still exists")};
      }
    }
  }
  for (const kube::CompactTaint& t : node->taints) {
    if (IsKnownEphemeral(t)) {
      return {Status::kFalse, std::string(kReasonKnownEphemeralTaintsExist),
              Cat("KnownEphemeralTaint \"", *t.key, ":", EffectName(t.effect), "\" still exists")};
    }
  }
  for (const auto& request : node_claim.spec.resources.requests) {
    const std::string& name = request.first;
    if (request.second.MilliValue() == 0) continue;
    const bool registered =
        std::any_of(node->allocatable.begin(), node->allocatable.end(),
                    [&](const kube::ResourceAmount& a) { return *a.name == name && a.milli > 0; });
    if (!registered) {
      return {Status::kFalse, std::string(kReasonResourceNotRegistered),
              Cat("Resource \"", name, "\" was requested but not registered")};
    }
  }
  return {Status::kTrue, "", ""};
}

LivenessVerdict CheckLiveness(const v1::NodeClaim& node_claim, absl::Time now,
                              const LivenessOptions& options) {
  LivenessVerdict verdict;
  const core::Condition* launched = Find(node_claim, kConditionLaunched);
  if (launched == nullptr || !launched->last_transition_time.has_value()) return verdict;
  if (launched->status != core::ConditionStatus::kTrue) {
    const absl::Duration left = *launched->last_transition_time + options.launch_timeout - now;
    if (left <= absl::ZeroDuration()) {
      verdict.delete_reason = "launch_timeout";
    } else {
      verdict.requeue_after = left;
    }
    return verdict;
  }
  const core::Condition* registered = Find(node_claim, kConditionRegistered);
  if (registered == nullptr || !registered->last_transition_time.has_value() ||
      registered->status == core::ConditionStatus::kTrue) {
    return verdict;
  }
  const absl::Duration left = *registered->last_transition_time + options.registration_ttl - now;
  if (left <= absl::ZeroDuration()) {
    verdict.delete_reason = "registration_timeout";
  } else {
    verdict.requeue_after = left;
  }
  return verdict;
}

std::string OwningNodePoolUid(const v1::NodeClaim& node_claim) {
  auto label = node_claim.metadata.labels.find(v1::kNodePoolLabelKey);
  if (label == node_claim.metadata.labels.end()) return {};
  for (const core::OwnerReference& owner : node_claim.metadata.owner_references) {
    if (owner.kind == "NodePool" && owner.name == label->second) return owner.uid;
  }
  return {};
}

Failure LivenessFailure(const v1::NodeClaim& node_claim) {
  const core::Condition* launched =
      v1::FindCondition(node_claim.status.conditions, kConditionLaunched);
  if (launched == nullptr || launched->status == core::ConditionStatus::kTrue) {
    return {"RegistrationFailed", "Failed to register node"};
  }
  return {launched->reason, launched->message};
}

}  // namespace dovetail::controllers::nodeclaim
