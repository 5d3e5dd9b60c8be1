#include "dovetail/controllers/nodeclaim/disruption_conditions.h"

#include <algorithm>
#include <string>

#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/duration.h"
#include "dovetail/controllers/nodeclaim/conditions.h"
#include "dovetail/scheduling/requirements.h"
#include "dovetail/state/pod_predicates.h"

namespace dovetail::controllers::nodeclaim {

namespace core = apis::core;
namespace v1 = apis::v1;

namespace {

const std::string* Find(const core::StringMap& map, std::string_view key) {
  auto it = map.find(std::string(key));
  return it == map.end() ? nullptr : &it->second;
}

}  // namespace

bool IsPodEvent(const kube::PodInfo* old_pod, const kube::PodInfo& pod) {
  if (pod.node_name.empty()) return false;
  if (old_pod == nullptr) return true;
  const bool bound = old_pod->node_name.empty();
  const bool terminal = !state::IsTerminal(*old_pod) && state::IsTerminal(pod);
  const bool terminating = !state::IsTerminating(*old_pod) && state::IsTerminating(pod);
  return bound || terminal || terminating;
}

bool PodEventDue(const v1::NodeClaim& node_claim, absl::Time now, absl::Duration dedupe) {
  const std::optional<absl::Time>& last = node_claim.status.last_pod_event_time;
  return !last.has_value() || now - *last >= dedupe;
}

absl::StatusOr<ConsolidatableVerdict> EvaluateConsolidatable(const v1::NodeClaim& node_claim,
                                                             const v1::NodePool& node_pool,
                                                             absl::Time now) {
  std::string_view text = v1::kDefaultConsolidateAfter;
  if (node_pool.spec.disruption.has_value() &&
      node_pool.spec.disruption->consolidate_after.has_value()) {
    text = *node_pool.spec.disruption->consolidate_after;
  }
  absl::StatusOr<std::optional<absl::Duration>> after = ParseNillableDuration(text);
  if (!after.ok()) {
    return absl::InvalidArgumentError(Cat("NodePool ", node_pool.metadata.name,
                                          ": consolidateAfter: ", after.status().message()));
  }
  if (!after->has_value()) return ConsolidatableVerdict{};
  const core::Condition* initialized =
      v1::FindCondition(node_claim.status.conditions, kConditionInitialized);
  if (initialized == nullptr || initialized->status != core::ConditionStatus::kTrue) {
    return ConsolidatableVerdict{};
  }
  std::optional<absl::Time> since = node_claim.status.last_pod_event_time;
  if (!since.has_value()) since = initialized->last_transition_time;
  if (!since.has_value()) return ConsolidatableVerdict{.consolidatable = true};
  const absl::Time at = *since + **after;
  if (now >= at) return ConsolidatableVerdict{.consolidatable = true};
  return ConsolidatableVerdict{.consolidatable = false, .requeue_after = at - now};
}

NodePoolHashStamp HashStampOf(const v1::NodePool& node_pool) {
  NodePoolHashStamp stamp;
  const core::StringMap& annotations = node_pool.metadata.annotations;
  if (const std::string* hash = Find(annotations, v1::kNodePoolHashAnnotationKey)) {
    stamp.hash = *hash;
  }
  if (const std::string* version = Find(annotations, v1::kNodePoolHashVersionAnnotationKey)) {
    stamp.version = *version;
  }
  return stamp;
}

std::string_view StaticDrift(const v1::NodeClaim& node_claim, const NodePoolHashStamp& stamp) {
  const core::StringMap& annotations = node_claim.metadata.annotations;
  const std::string* hash = Find(annotations, v1::kNodePoolHashAnnotationKey);
  const std::string* version = Find(annotations, v1::kNodePoolHashVersionAnnotationKey);
  if (hash == nullptr || version == nullptr || stamp.hash.empty() || stamp.version.empty()) {
    return "";
  }
  if (*version != stamp.version) return "";
  return *hash != stamp.hash ? kReasonNodePoolDrifted : std::string_view();
}

absl::StatusOr<std::string_view> RequirementsDrift(const v1::NodeClaim& node_claim,
                                                   const v1::NodePool& node_pool) {
  absl::StatusOr<scheduling::Requirements> pool =
      scheduling::Requirements::FromNodeSelectorRequirements(
          node_pool.spec.template_.spec.requirements);
  if (!pool.ok()) {
    return absl::InvalidArgumentError(
        Cat("NodePool ", node_pool.metadata.name, ": requirements: ", pool.status().message()));
  }
  const scheduling::Requirements labels =
      scheduling::Requirements::FromLabels(node_claim.metadata.labels);
  if (!labels.Compatible(*pool, scheduling::AllowUndefined::kNone).ok()) {
    return kReasonRequirementsDrifted;
  }
  return std::string_view();
}

bool InstanceTypeCheckDue(const v1::NodeClaim& node_claim, std::optional<absl::Time> last_found,
                          absl::Time now) {
  const std::optional<absl::Time>& created = node_claim.metadata.creation_timestamp;
  if (!created.has_value() || now - *created < kInstanceTypeCheckMinAge) return false;
  return !last_found.has_value() || now - *last_found >= kInstanceTypeCheckInterval;
}

std::string_view InstanceTypeDrift(const v1::NodeClaim& node_claim,
                                   const cloudprovider::Catalog& catalog) {
  const std::string* name = Find(node_claim.metadata.labels, v1::kLabelInstanceType);
  if (name == nullptr) return "";
  const cloudprovider::InstanceType* type = catalog.Find(*name);
  if (type == nullptr) return kReasonInstanceTypeNotFound;
  scheduling::Requirements labels =
      scheduling::Requirements::FromLabels(node_claim.metadata.labels);
  if (type->offerings().HasCompatible(labels)) return "";
  const std::string* capacity_type = Find(node_claim.metadata.labels, v1::kCapacityTypeLabelKey);
  if (capacity_type != nullptr && *capacity_type == v1::kCapacityTypeReserved) {
    labels.Remove(v1::kCapacityTypeLabelKey);
    labels.Remove(v1::kLabelCapacityReservationId);
    (void)labels.Add(
        core::NodeSelectorRequirement{.key = std::string(v1::kCapacityTypeLabelKey),
                                      .op = core::SelectorOperator::kIn,
                                      .values = {std::string(v1::kCapacityTypeOnDemand)}});
    if (type->offerings().HasCompatible(labels)) return "";
  }
  return kReasonInstanceTypeNotFound;
}

bool RemoveCondition(std::vector<core::Condition>& conditions, std::string_view type) {
  const size_t before = conditions.size();
  std::erase_if(conditions, [type](const core::Condition& c) { return c.type == type; });
  return conditions.size() != before;
}

bool ApplyConsolidatable(v1::NodeClaim& node_claim, bool consolidatable, absl::Time now) {
  if (!consolidatable)
    return RemoveCondition(node_claim.status.conditions, kConditionConsolidatable);
  Conditions conditions(node_claim.status.conditions, node_claim.metadata.generation, now);
  return conditions.SetTrue(kConditionConsolidatable);
}

bool ApplyDrifted(v1::NodeClaim& node_claim, std::string_view reason, absl::Time now) {
  if (reason.empty()) return RemoveCondition(node_claim.status.conditions, kConditionDrifted);
  Conditions conditions(node_claim.status.conditions, node_claim.metadata.generation, now);
  return conditions.Set(kConditionDrifted, core::ConditionStatus::kTrue, reason, reason);
}

absl::StatusOr<ExpirationVerdict> EvaluateExpiration(const v1::NodeClaim& node_claim,
                                                     absl::Time now) {
  if (!node_claim.spec.expire_after.has_value()) return ExpirationVerdict{};
  absl::StatusOr<std::optional<absl::Duration>> after =
      ParseNillableDuration(*node_claim.spec.expire_after);
  if (!after.ok()) {
    return absl::InvalidArgumentError(
        Cat("NodeClaim ", node_claim.metadata.name, ": expireAfter: ", after.status().message()));
  }
  if (!after->has_value() || !node_claim.metadata.creation_timestamp.has_value()) {
    return ExpirationVerdict{};
  }
  const absl::Time at = *node_claim.metadata.creation_timestamp + **after;
  if (now >= at) return ExpirationVerdict{.expired = true};
  return ExpirationVerdict{.expired = false, .requeue_after = at - now};
}

}  // namespace dovetail::controllers::nodeclaim
