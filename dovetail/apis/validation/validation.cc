// NodePool and NodeClaim validation (EC2NodeClass is in ec2nodeclass_validation.cc, manifests in
// manifest_validation.cc).

#include "dovetail/apis/validation/validation.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/label_syntax.h"
#include "dovetail/apis/validation/cron.h"
#include "dovetail/apis/validation/internal.h"
#include "dovetail/common/duration.h"

namespace dovetail::apis::validation {
namespace {

using internal::Child;
using internal::ErrorList;
using internal::Item;
using internal::Quote;

constexpr int32_t kMinWeight = 1;
constexpr int32_t kMaxWeight = 100;
constexpr size_t kMaxBudgets = 50;
constexpr size_t kMaxBudgetReasons = 50;
constexpr size_t kMaxTemplateLabels = 100;
constexpr std::string_view kNodesLimit = "nodes";

bool IsDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// ^((100|[0-9]{1,2})%|[0-9]+)$
bool IsBudgetNodes(std::string_view text) {
  if (text.ends_with('%')) {
    text.remove_suffix(1);
    return text == "100" || (IsDigits(text) && text.size() <= 2);
  }
  return IsDigits(text);
}

void ValidateNodeClassRef(const std::optional<v1::NodeClassReference>& ref, std::string_view path,
                          ErrorList& errors) {
  if (!ref.has_value()) {
    errors.Add(std::string(path), "is required: name the node class (group, kind and name)");
    return;
  }
  if (ref->group.empty()) {
    errors.Add(Child(path, "group"), "must not be empty (e.g. karpenter.k8s.aws)");
  } else if (ref->group.find('/') != std::string::npos) {
    errors.Add(Child(path, "group"),
               Cat("must be an API group without a version (no '/'), got ", Quote(ref->group)),
               ref->group);
  }
  if (ref->kind.empty()) errors.Add(Child(path, "kind"), "must not be empty (e.g. EC2NodeClass)");
  if (ref->name.empty()) errors.Add(Child(path, "name"), "name may not be empty");
}

void ValidateTemplateLabels(const core::StringMap& labels, std::string_view path,
                            ErrorList& errors) {
  if (labels.size() > kMaxTemplateLabels) {
    errors.Add(std::string(path),
               Cat("must have at most ", kMaxTemplateLabels, " labels, got ", labels.size()));
  }
  for (const auto& [key, value] : labels) {
    const std::string at = Child(path, key);
    if (std::optional<std::string> problem =
            internal::LabelKeyProblem(key, /*forbid_nodepool=*/true)) {
      errors.Add(at, *problem, key);
    }
    if (absl::Status s = apis::core::ValidateLabelValue(value); !s.ok()) {
      errors.Add(at, std::string(AsStd(s.message())), value);
    }
  }
}

void ValidateBudget(const v1::Budget& budget, std::string_view path, ErrorList& errors) {
  if (budget.nodes.has_value() && !IsBudgetNodes(*budget.nodes)) {
    errors.Add(Child(path, "nodes"),
               Cat("must be a number of nodes (\"5\") or a percentage from 0% to 100% (\"10%\"), "
                   "got ",
                   Quote(*budget.nodes)),
               *budget.nodes);
  }
  if (budget.schedule.has_value()) {
    if (absl::StatusOr<CronSchedule> cron = ParseCronSchedule(*budget.schedule); !cron.ok()) {
      errors.Add(Child(path, "schedule"),
                 Cat("must be a cron schedule (5 fields or @daily, @hourly, ...): ",
                     AsStd(cron.status().message())),
                 *budget.schedule);
    }
  }
  if (budget.duration.has_value()) {
    const std::string& d = *budget.duration;
    if (!IsBudgetDurationPattern(d)) {
      errors.Add(Child(path, "duration"),
                 Cat("must be whole hours and/or minutes such as 8h, 30m or 1h30m (no seconds "
                     "or days), got ",
                     Quote(d)),
                 d);
    } else if (!ParseGoDuration(d).ok()) {
      errors.Add(Child(path, "duration"), Cat("duration ", Quote(d), " is too long"), d);
    }
  }
  if (budget.schedule.has_value() != budget.duration.has_value()) {
    errors.Add(std::string(path),
               budget.schedule.has_value()
                   ? "'schedule' must be set with 'duration': a scheduled budget needs a duration"
                   : "'schedule' must be set with 'duration': a budget with a duration needs a "
                     "schedule");
  }
  if (budget.reasons.size() > kMaxBudgetReasons) {
    errors.Add(Child(path, "reasons"),
               Cat("must have at most ", kMaxBudgetReasons, " items, got ", budget.reasons.size()));
  }
  std::set<v1::DisruptionReason> seen;
  for (size_t i = 0; i < budget.reasons.size(); ++i) {
    if (!seen.insert(budget.reasons[i]).second) {
      errors.Add(Item(Child(path, "reasons"), i),
                 Cat("duplicate reason ", Quote(core::EnumName(budget.reasons[i]))),
                 std::string(core::EnumName(budget.reasons[i])));
    }
  }
}

void ValidateDisruption(const v1::Disruption& disruption, std::string_view path,
                        ErrorList& errors) {
  internal::ValidateKarpenterDuration(disruption.consolidate_after, Child(path, "consolidateAfter"),
                                      /*allow_never=*/true, errors);
  if (!disruption.budgets.has_value()) return;
  const std::string budgets = Child(path, "budgets");
  if (disruption.budgets->size() > kMaxBudgets) {
    errors.Add(budgets,
               Cat("must have at most ", kMaxBudgets, " items, got ", disruption.budgets->size()));
  }
  for (size_t i = 0; i < disruption.budgets->size(); ++i) {
    ValidateBudget((*disruption.budgets)[i], Item(budgets, i), errors);
  }
}

// Checks shared by NodePool templates and NodeClaims.
void ValidateDurations(const std::optional<std::string>& expire_after,
                       const std::optional<std::string>& termination_grace_period,
                       std::string_view path, ErrorList& errors) {
  internal::ValidateKarpenterDuration(expire_after, Child(path, "expireAfter"),
                                      /*allow_never=*/true, errors);
  internal::ValidateKarpenterDuration(termination_grace_period,
                                      Child(path, "terminationGracePeriod"),
                                      /*allow_never=*/false, errors);
}

}  // namespace

std::string ToString(const FieldError& error) {
  return error.field.empty() ? error.message : Cat(error.field, ": ", error.message);
}

std::vector<FieldError> ValidateNodePool(const v1::NodePool& pool) {
  ErrorList errors;
  internal::ValidateObjectMeta(pool.metadata, "metadata", errors);
  const v1::NodePoolSpec& spec = pool.spec;

  const v1::NodeClaimTemplate& tmpl = spec.template_;
  ValidateTemplateLabels(tmpl.metadata.labels, "spec.template.metadata.labels", errors);
  const std::string tspec = "spec.template.spec";
  internal::ValidateRequirements(tmpl.spec.requirements, Child(tspec, "requirements"),
                                 /*forbid_nodepool=*/true, errors);
  internal::ValidateTaints(tmpl.spec.taints, tmpl.spec.startup_taints, tspec, errors);
  ValidateNodeClassRef(tmpl.spec.node_class_ref, Child(tspec, "nodeClassRef"), errors);
  ValidateDurations(tmpl.spec.expire_after, tmpl.spec.termination_grace_period, tspec, errors);

  if (spec.disruption.has_value()) ValidateDisruption(*spec.disruption, "spec.disruption", errors);

  if (spec.weight.has_value() && (*spec.weight < kMinWeight || *spec.weight > kMaxWeight)) {
    errors.Add("spec.weight",
               Cat("must be between ", kMinWeight, " and ", kMaxWeight, ", got ", *spec.weight),
               Cat(*spec.weight));
  }
  if (spec.replicas.has_value()) {
    if (*spec.replicas < 0) {
      errors.Add("spec.replicas", Cat("must be greater than or equal to 0, got ", *spec.replicas),
                 Cat(*spec.replicas));
    }
    if (spec.weight.has_value()) {
      errors.Add("spec.weight",
                 "'weight' is not supported on static NodePools (spec.replicas is set): static "
                 "pools are not ranked; remove one of the two",
                 Cat(*spec.weight));
    }
    for (const auto& [resource, quantity] : spec.limits) {
      if (resource == kNodesLimit) continue;
      errors.Add("spec.limits",
                 Cat("only 'limits.nodes' is supported on static NodePools (spec.replicas is "
                     "set), got limit ",
                     Quote(resource)),
                 resource);
    }
  }
  return std::move(errors).Take();
}

std::vector<FieldError> ValidateNodeClaim(const v1::NodeClaim& claim) {
  ErrorList errors;
  internal::ValidateObjectMeta(claim.metadata, "metadata", errors);
  const v1::NodeClaimSpec& spec = claim.spec;
  internal::ValidateRequirements(spec.requirements, "spec.requirements",
                                 /*forbid_nodepool=*/false, errors);
  internal::ValidateTaints(spec.taints, spec.startup_taints, "spec", errors);
  ValidateNodeClassRef(spec.node_class_ref, "spec.nodeClassRef", errors);
  ValidateDurations(spec.expire_after, spec.termination_grace_period, "spec", errors);
  return std::move(errors).Take();
}

std::vector<FieldError> ValidateNodePoolUpdate(const v1::NodePool& old_pool,
                                               const v1::NodePool& updated) {
  ErrorList errors;
  errors.Append(ValidateNodePool(updated));
  const auto& old_ref = old_pool.spec.template_.spec.node_class_ref;
  const auto& new_ref = updated.spec.template_.spec.node_class_ref;
  if (old_ref.has_value() && new_ref.has_value()) {
    const std::string path = "spec.template.spec.nodeClassRef";
    if (old_ref->group != new_ref->group) {
      errors.Add(Child(path, "group"),
                 Cat("nodeClassRef.group is immutable: was ", Quote(old_ref->group), ", now ",
                     Quote(new_ref->group), "; create a new NodePool instead"),
                 new_ref->group);
    }
    if (old_ref->kind != new_ref->kind) {
      errors.Add(Child(path, "kind"),
                 Cat("nodeClassRef.kind is immutable: was ", Quote(old_ref->kind), ", now ",
                     Quote(new_ref->kind), "; create a new NodePool instead"),
                 new_ref->kind);
    }
  }
  if (old_pool.spec.replicas.has_value() != updated.spec.replicas.has_value()) {
    errors.Add("spec.replicas",
               old_pool.spec.replicas.has_value()
                   ? "cannot unset replicas: a static NodePool cannot become dynamic; create a "
                     "new NodePool instead"
                   : "cannot set replicas: a dynamic NodePool cannot become static; create a new "
                     "NodePool instead");
  }
  return std::move(errors).Take();
}

std::vector<FieldError> ValidateNodeClaimUpdate(const v1::NodeClaim& old_claim,
                                                const v1::NodeClaim& updated) {
  ErrorList errors;
  errors.Append(ValidateNodeClaim(updated));
  // Compare what the API server stores: both sides with CRD defaults applied.
  v1::NodeClaim before = old_claim;
  v1::NodeClaim after = updated;
  v1::ApplyDefaults(before);
  v1::ApplyDefaults(after);
  if (core::EncodeJson(before.spec) != core::EncodeJson(after.spec)) {
    errors.Add("spec", "spec is immutable: a NodeClaim's spec cannot change after creation");
  }
  return std::move(errors).Take();
}

}  // namespace dovetail::apis::validation
