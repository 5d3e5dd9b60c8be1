#include "dovetail/providers/aws/nodeclass/nodeclass_controller.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/hash/drift_hash.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/log.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/kube/typed_client.h"
#include "dovetail/providers/aws/errors.h"
#include "dovetail/providers/aws/metrics.h"
#include "dovetail/providers/aws/nodeclass/conditions.h"
#include "dovetail/providers/aws/nodeclass/launch_templates.h"
#include "nlohmann/json.hpp"

namespace dovetail::providers::aws::nodeclass {

namespace core = apis::core;
namespace v1 = apis::v1;

namespace {

constexpr char kLogger[] = "nodeclass";
constexpr size_t kMaxMessage = 300;

std::string Truncate(std::string_view message) {
  return std::string(message.substr(0, std::min(message.size(), kMaxMessage)));
}

// Conditions carry metav1.Time, which has whole seconds.
absl::Time WholeSeconds(absl::Time t) { return absl::FromUnixSeconds(absl::ToUnixSeconds(t)); }

bool HasFinalizer(const core::ObjectMeta& meta) {
  return std::find(meta.finalizers.begin(), meta.finalizers.end(), v1::kAwsTerminationFinalizer) !=
         meta.finalizers.end();
}

// The class a NodeClaim references, if it is an EC2NodeClass.
const std::string* NodeClassOf(const v1::NodeClaim& claim) {
  const auto& ref = claim.spec.node_class_ref;
  if (!ref.has_value() || ref->kind != awsv1::kEC2NodeClassKind) return nullptr;
  if (!ref->group.empty() && ref->group != "karpenter.k8s.aws") return nullptr;
  return &ref->name;
}

// What of a class the controller acts on (its status is its own output).
bool Changed(const awsv1::EC2NodeClass& before, const awsv1::EC2NodeClass& after) {
  return before.metadata.generation != after.metadata.generation ||
         before.metadata.uid != after.metadata.uid ||
         before.metadata.deletion_timestamp != after.metadata.deletion_timestamp ||
         before.metadata.finalizers != after.metadata.finalizers ||
         before.metadata.annotations != after.metadata.annotations;
}

// Keys users may not set in spec.tags (Karpenter's own).
std::string RestrictedTag(const core::StringMap& tags) {
  for (const auto& [key, value] : tags) {
    if (key.empty()) return "the empty key";
    if (key.starts_with(v1::kTagClusterPrefix) || key == v1::kTagNodePool ||
        key == v1::kTagNodeClaim || key == v1::kTagNodeClass || key == v1::kTagEksClusterName) {
      return key;
    }
  }
  return "";
}

std::string ErrorMessage(const absl::Status& status) {
  const std::string code = AwsErrorCode(status);
  return Truncate(code.empty() ? std::string(status.message()) : Cat(code, ": ", status.message()));
}

}  // namespace

NodeClassController::NodeClassController(const controllers::Dependencies& deps, Ec2Client& ec2,
                                         SsmClient& ssm, IamClient& iam, NodeClassOptions options)
    : deps_(deps),
      options_(std::move(options)),
      ec2_(ec2),
      resolver_(ec2, ssm, {.ssm_path_prefix = options_.ssm_path_prefix}),
      profiles_(iam, deps.clock,
                {.cluster_name = options_.cluster_name,
                 .region = options_.region,
                 .grace = options_.instance_profile_grace}),
      node_classes_(deps.client, kube::resources::kEC2NodeClasses, {},
                    options_.informer_options.WithReporting(deps.metrics, deps.undecodable)),
      queue_(options_.queue.WithMetrics(Name(), deps.metrics), options_.workers,
             [this](const std::string& key) { return Reconcile(key); }) {
  using ClassPtr = std::shared_ptr<const awsv1::EC2NodeClass>;
  registrations_.push_back(node_classes_.AddHandler({
      .on_add = [this](const ClassPtr& c) { Enqueue(c->metadata.name); },
      .on_update =
          [this](const ClassPtr& before, const ClassPtr& after) {
            if (Changed(*before, *after)) Enqueue(after->metadata.name);
          },
      .on_delete = nullptr,
  }));
  using ClaimPtr = std::shared_ptr<const v1::NodeClaim>;
  registrations_.push_back(deps_.informers.node_claims().AddHandler({
      .on_add = nullptr,
      .on_update = nullptr,
      .on_delete =
          [this](const ClaimPtr& claim) {
            const std::string* name = NodeClassOf(*claim);
            if (name == nullptr) return;
            auto node_class = node_classes_.store().Get(*name);
            if (node_class != nullptr && node_class->metadata.deletion_timestamp.has_value()) {
              Enqueue(*name);
            }
          },
  }));
}

NodeClassController::~NodeClassController() {
  Stop();
  node_classes_.Stop();
}

void NodeClassController::Start() {
  queue_.Start([this](kube::WorkQueue& queue) {
    for (const auto& c : node_classes_.store().List()) queue.Add(c->metadata.name);
  });
  node_classes_.Start();
}

void NodeClassController::Stop() { queue_.Stop(); }

void NodeClassController::RecordEvent(const awsv1::EC2NodeClass& node_class, std::string_view type,
                                      std::string_view reason, std::string_view message) {
  // Dropped or failed events never fail a reconcile.
  (void)deps_.events.Record({.api_version = std::string(awsv1::kApiVersion),
                             .kind = std::string(awsv1::kEC2NodeClassKind),
                             .ns = "",
                             .name = node_class.metadata.name,
                             .uid = node_class.metadata.uid},
                            type, reason, "NodeClass", message);
}

absl::StatusOr<std::string> NodeClassController::KubernetesVersion() {
  if (!options_.kubernetes_version.empty()) return options_.kubernetes_version;
  const absl::Time now = deps_.clock.Now();
  {
    absl::MutexLock lock(&version_mu_);
    if (!k8s_version_.empty() && now - k8s_version_at_ < options_.resolve_interval) {
      return k8s_version_;
    }
  }
  std::string version;
  if (options_.kubernetes_version_source) {
    ASSIGN_OR_RETURN(version, options_.kubernetes_version_source());
  } else {
    ASSIGN_OR_RETURN(const kube::HttpResponse response,
                     deps_.client.rest().Do({.method = "GET", .path = "/version"}));
    if (response.code != 200) {
      return absl::UnavailableError(Cat("GET /version: HTTP ", response.code));
    }
    const nlohmann::json body = nlohmann::json::parse(response.body, nullptr, false);
    if (!body.is_object() || !body.value("major", nlohmann::json()).is_string() ||
        !body.value("minor", nlohmann::json()).is_string()) {
      return absl::InternalError("GET /version: no major/minor");
    }
    ASSIGN_OR_RETURN(version, KubernetesMinorVersion(body["major"].get<std::string>(),
                                                     body["minor"].get<std::string>()));
  }
  absl::MutexLock lock(&version_mu_);
  k8s_version_ = version;
  k8s_version_at_ = now;
  return version;
}

namespace {

// One Resolve pass over a class: the class (its status is written), its conditions and the
// first error of the steps.
struct Resolution {
  awsv1::EC2NodeClass& desired;
  NodeClassConditions& conditions;
  absl::Status first_error;

  void Keep(const absl::Status& error) {
    if (first_error.ok()) first_error = error;
  }
  // `condition` could not be resolved: Unknown (ResolutionFailed), logged, the error kept.
  void Failed(std::string_view condition, std::string_view what, const absl::Status& error) {
    conditions.SetUnknown(condition, kReasonResolutionFailed, ErrorMessage(error));
    log::Error(kLogger, Cat("resolving ", what),
               {{"ec2nodeclass", desired.metadata.name}, {"error", error.ToString()}});
    Keep(error);
  }
};

void ResolveSubnets(NodeClassResolver& resolver, Resolution& r) {
  absl::StatusOr<std::vector<awsv1::Subnet>> subnets = resolver.Subnets(r.desired.spec);
  if (!subnets.ok()) {
    r.Failed(kConditionSubnetsReady, "subnets", subnets.status());
    return;
  }
  r.desired.status.subnets = *std::move(subnets);
  if (r.desired.status.subnets.empty()) {
    r.conditions.SetFalse(kConditionSubnetsReady, kReasonSubnetsNotFound,
                          "SubnetSelector did not match any Subnets");
  } else {
    r.conditions.SetTrue(kConditionSubnetsReady);
  }
}

void ResolveSecurityGroups(NodeClassResolver& resolver, Resolution& r) {
  absl::StatusOr<std::vector<awsv1::SecurityGroup>> groups =
      resolver.SecurityGroups(r.desired.spec);
  if (!groups.ok()) {
    r.Failed(kConditionSecurityGroupsReady, "security groups", groups.status());
    return;
  }
  r.desired.status.security_groups = *std::move(groups);
  if (r.desired.status.security_groups.empty()) {
    r.conditions.SetFalse(kConditionSecurityGroupsReady, kReasonSecurityGroupsNotFound,
                          "SecurityGroupSelector did not match any SecurityGroups");
  } else {
    r.conditions.SetTrue(kConditionSecurityGroupsReady);
  }
}

// Capacity reservations: status only (upstream's CapacityReservationsReady exists behind the
// ReservedCapacity gate; it is not a dependent of Ready here). An error keeps the last list.
void ResolveCapacityReservations(NodeClassResolver& resolver, absl::Time now, Resolution& r) {
  const awsv1::EC2NodeClassSpec& spec = r.desired.spec;
  if (spec.capacity_reservation_selector_terms.empty()) {
    r.desired.status.capacity_reservations.clear();
  } else if (absl::StatusOr<std::vector<awsv1::CapacityReservation>> reservations =
                 resolver.CapacityReservations(spec, now);
             !reservations.ok()) {
    log::Error(
        kLogger, "resolving capacity reservations",
        {{"ec2nodeclass", r.desired.metadata.name}, {"error", reservations.status().ToString()}});
    r.Keep(reservations.status());
  } else {
    r.desired.status.capacity_reservations = *std::move(reservations);
  }
}

// `k8s` is the cluster's Kubernetes version, which the AMI aliases resolve against.
void ResolveAmis(NodeClassResolver& resolver, const absl::StatusOr<std::string>& k8s,
                 absl::Time now, Resolution& r) {
  if (!k8s.ok()) {
    r.Failed(kConditionAMIsReady, "the Kubernetes version", k8s.status());
    return;
  }
  absl::StatusOr<std::vector<awsv1::AMI>> amis = resolver.Amis(r.desired.spec, *k8s, now);
  if (!amis.ok()) {
    if (amis.status().code() == absl::StatusCode::kInvalidArgument &&
        AwsErrorCode(amis.status()).empty()) {
      r.desired.status.amis.clear();
      r.conditions.SetFalse(kConditionAMIsReady, kReasonInvalidAMISelector,
                            Truncate(std::string(amis.status().message())));
    } else {
      r.Failed(kConditionAMIsReady, "AMIs", amis.status());
    }
    return;
  }
  r.desired.status.amis = *std::move(amis);
  if (r.desired.status.amis.empty()) {
    r.conditions.SetFalse(kConditionAMIsReady, kReasonAMINotFound,
                          "AMISelector did not match any AMIs");
  } else {
    r.conditions.SetTrue(kConditionAMIsReady);
  }
}

// spec.instanceProfile is verified; else the profile of spec.role is ensured.
void ResolveInstanceProfile(InstanceProfiles& profiles, Resolution& r) {
  const awsv1::EC2NodeClassSpec& spec = r.desired.spec;
  if (spec.instance_profile.has_value() && !spec.instance_profile->empty()) {
    const absl::Status verified = profiles.Verify(*spec.instance_profile);
    if (verified.code() == absl::StatusCode::kNotFound) {
      r.desired.status.instance_profile.clear();
      r.conditions.SetFalse(kConditionInstanceProfileReady, kReasonInstanceProfileNotFound,
                            Cat("instance profile ", *spec.instance_profile, " does not exist"));
    } else if (!verified.ok()) {
      r.Failed(kConditionInstanceProfileReady, "the instance profile", verified);
    } else {
      r.desired.status.instance_profile = *spec.instance_profile;
      r.conditions.SetTrue(kConditionInstanceProfileReady);
    }
  } else if (!spec.role.empty()) {
    absl::StatusOr<std::string> name = profiles.EnsureManaged(r.desired);
    if (name.ok()) {
      r.desired.status.instance_profile = *name;
      r.conditions.SetTrue(kConditionInstanceProfileReady);
    } else if (name.status().code() == absl::StatusCode::kNotFound) {
      r.conditions.SetFalse(kConditionInstanceProfileReady, kReasonRoleNotFound,
                            Cat("role ", spec.role, ": ", ErrorMessage(name.status())));
    } else if (name.status().code() == absl::StatusCode::kInvalidArgument ||
               name.status().code() == absl::StatusCode::kPermissionDenied) {
      r.conditions.SetFalse(kConditionInstanceProfileReady, kReasonInstanceProfileCreationFailed,
                            ErrorMessage(name.status()));
      r.Keep(name.status());
    } else {
      r.Failed(kConditionInstanceProfileReady, "the instance profile", name.status());
    }
  } else {
    r.conditions.SetFalse(kConditionInstanceProfileReady, kReasonInstanceProfileNotFound,
                          "neither spec.role nor spec.instanceProfile is set");
  }
}

// ValidationSucceeded: False for restricted tags or AL2023 without the cluster CIDR, else True
// once every other dependent of Ready is.
void SetValidationSucceeded(const awsv1::EC2NodeClassSpec& spec, bool cluster_cidr_known,
                            NodeClassConditions& conditions) {
  if (const std::string tag = RestrictedTag(spec.tags); !tag.empty()) {
    conditions.SetFalse(kConditionValidationSucceeded, kReasonTagValidationFailed,
                        Cat("spec.tags may not use ", tag, " (reserved for Karpenter)"));
    return;
  }
  if (awsv1::EffectiveAMIFamily(spec) == awsv1::AMIFamily::kAL2023 && !cluster_cidr_known) {
    // No user data could be generated: nodeadm's NodeConfig needs the service CIDR.
    conditions.SetFalse(kConditionValidationSucceeded, kReasonClusterCIDRUnknown,
                        "AL2023 user data needs the cluster's service CIDR, which is unknown: "
                        "allow eks:DescribeCluster or set DOVETAIL_CLUSTER_CIDR");
    return;
  }
  std::vector<std::string> pending;
  for (std::string_view type : kDependents) {
    if (type != kConditionValidationSucceeded && !conditions.IsTrue(type)) {
      pending.push_back(std::string(type));
    }
  }
  if (pending.empty()) {
    conditions.SetTrue(kConditionValidationSucceeded);
  } else {
    conditions.SetUnknown(kConditionValidationSucceeded, kReasonDependenciesNotReady,
                          Cat("waiting for ", absl::StrJoin(pending, ", ")));
  }
}

}  // namespace

absl::Status NodeClassController::Resolve(awsv1::EC2NodeClass& desired) {
  const absl::Time now = deps_.clock.Now();
  NodeClassConditions conditions(desired.status.conditions, desired.metadata.generation,
                                 WholeSeconds(now));
  Resolution r{.desired = desired, .conditions = conditions};
  ResolveSubnets(resolver_, r);
  ResolveSecurityGroups(resolver_, r);
  ResolveCapacityReservations(resolver_, now, r);
  ResolveAmis(resolver_, KubernetesVersion(), now, r);
  ResolveInstanceProfile(profiles_, r);
  SetValidationSucceeded(desired.spec, !options_.cluster_cidr.empty(), conditions);
  return r.first_error;
}

absl::Status NodeClassController::RestampNodeClaims(const awsv1::EC2NodeClass& node_class,
                                                    const std::string& hash) {
  absl::Status first_error;
  for (const auto& claim : deps_.informers.node_claims().store().List()) {
    const std::string* name = NodeClassOf(*claim);
    if (name == nullptr || *name != node_class.metadata.name) continue;
    const auto& annotations = claim->metadata.annotations;
    auto version = annotations.find(v1::kEC2NodeClassHashVersionAnnotationKey);
    if (version != annotations.end() && version->second == apis::hash::kEC2NodeClassHashVersion) {
      continue;
    }
    nlohmann::json stamp = {{std::string(v1::kEC2NodeClassHashVersionAnnotationKey),
                             std::string(apis::hash::kEC2NodeClassHashVersion)}};
    // A claim with a Drifted condition keeps its hash: across hash versions its drift cannot be
    // decided again.
    if (v1::FindCondition(claim->status.conditions, "Drifted") == nullptr) {
      stamp[std::string(v1::kEC2NodeClassHashAnnotationKey)] = hash;
    }
    const nlohmann::json patch = {{"metadata", {{"annotations", stamp}}}};
    absl::StatusOr<std::string> patched =
        deps_.client.Patch(kube::resources::kNodeClaims, "", claim->metadata.name,
                           kube::PatchType::kMerge, patch.dump());
    if (!patched.ok() && !kube::IsNotFound(patched.status())) {
      log::Error(kLogger, "re-stamping the nodeclass hash on a NodeClaim",
                 {{"nodeclaim", claim->metadata.name}, {"error", patched.status().ToString()}});
      if (first_error.ok()) first_error = patched.status();
    }
  }
  return first_error;
}

absl::StatusOr<kube::ReconcileResult> NodeClassController::Finalize(
    const awsv1::EC2NodeClass& node_class) {
  if (!HasFinalizer(node_class.metadata)) return kube::ReconcileResult{};
  std::vector<std::string> claims;
  for (const auto& claim : deps_.informers.node_claims().store().List()) {
    const std::string* name = NodeClassOf(*claim);
    if (name != nullptr && *name == node_class.metadata.name) {
      claims.push_back(claim->metadata.name);
    }
  }
  if (!claims.empty()) {
    std::sort(claims.begin(), claims.end());
    if (claims.size() > 5) claims.resize(5);
    RecordEvent(
        node_class, "Normal", "WaitingOnNodeClaimTermination",
        Truncate(Cat("Waiting on NodeClaim termination for ", absl::StrJoin(claims, ", "))));
    return kube::ReconcileResult{.requeue_after = options_.deletion_poll};
  }
  auto failed = [&](std::string_view reason, std::string_view what, const absl::Status& error) {
    log::Error(kLogger, Cat("deleting the ", what, " of a deleted EC2NodeClass"),
               {{"ec2nodeclass", node_class.metadata.name}, {"error", error.ToString()}});
    RecordEvent(node_class, "Warning", reason,
                Truncate(Cat("Deleting the ", what, ": ", ErrorMessage(error))));
    return error;
  };
  absl::StatusOr<int> templates = [&]() -> absl::StatusOr<int> {
    ASSIGN_OR_RETURN(const std::vector<OwnedLaunchTemplate> owned,
                     ListLaunchTemplates(ec2_, options_.cluster_name, node_class.metadata.name));
    return DeleteLaunchTemplates(ec2_, owned);
  }();
  if (!templates.ok()) {
    return failed("LaunchTemplateDeletionFailed", "launch templates", templates.status());
  }
  // The class's templates are gone, and so is its user data size (as upstream's DeleteAll).
  if (deps_.metrics != nullptr)
    UserDataBytesGauge(*deps_.metrics).Delete({node_class.metadata.name});
  if (*templates > 0) {
    log::Info(kLogger, "deleted the launch templates",
              {{"ec2nodeclass", node_class.metadata.name}, {"count", Cat(*templates)}});
  }
  absl::StatusOr<int> deleted =
      options_.delete_instance_profiles ? profiles_.DeleteAll(node_class) : absl::StatusOr<int>(0);
  if (!deleted.ok()) {
    return failed("InstanceProfileDeletionFailed", "managed instance profiles", deleted.status());
  }
  if (*deleted > 0) {
    log::Info(kLogger, "deleted the managed instance profiles",
              {{"ec2nodeclass", node_class.metadata.name}, {"count", Cat(*deleted)}});
  }
  std::vector<std::string> finalizers;
  for (const std::string& f : node_class.metadata.finalizers) {
    if (f != v1::kAwsTerminationFinalizer) finalizers.push_back(f);
  }
  const nlohmann::json patch = {
      {"metadata",
       {{"resourceVersion", node_class.metadata.resource_version}, {"finalizers", finalizers}}}};
  absl::StatusOr<std::string> patched =
      deps_.client.Patch(kube::resources::kEC2NodeClasses, "", node_class.metadata.name,
                         kube::PatchType::kMerge, patch.dump());
  if (!patched.ok() && !kube::IsNotFound(patched.status())) return patched.status();
  return kube::ReconcileResult{};
}

absl::StatusOr<kube::ReconcileResult> NodeClassController::Reconcile(const std::string& name) {
  kube::TypedClient<awsv1::EC2NodeClass> classes(deps_.client, kube::resources::kEC2NodeClasses);
  absl::StatusOr<awsv1::EC2NodeClass> read = classes.Get("", name);
  if (!read.ok()) {
    if (kube::IsNotFound(read.status())) return kube::ReconcileResult{};
    return read.status();
  }
  const awsv1::EC2NodeClass& current = *read;
  if (current.metadata.deletion_timestamp.has_value()) return Finalize(current);

  awsv1::EC2NodeClass desired = current;
  absl::StatusOr<std::string> drift_hash = awsv1::DriftHash(current, options_.hash_ca_bundle);
  if (!drift_hash.ok()) {
    log::Error(kLogger, "the EC2NodeClass does not hash",
               {{"ec2nodeclass", name}, {"error", drift_hash.status().ToString()}});
    return drift_hash.status();
  }
  const std::string& hash = *drift_hash;
  // NodeClaims stamped under another hash version (an older upstream, or Dovetail before it
  // computed upstream's hash) are re-stamped before the class, never drifted.
  RETURN_IF_ERROR(RestampNodeClaims(current, hash));

  // Metadata first: never resolve (and create IAM resources) for a class without the finalizer.
  std::string resource_version = current.metadata.resource_version;
  auto annotation = [&](std::string_view key) -> std::string {
    auto it = current.metadata.annotations.find(key);
    return it == current.metadata.annotations.end() ? "" : it->second;
  };
  if (!HasFinalizer(current.metadata) || annotation(v1::kEC2NodeClassHashAnnotationKey) != hash ||
      annotation(v1::kEC2NodeClassHashVersionAnnotationKey) !=
          apis::hash::kEC2NodeClassHashVersion) {
    std::vector<std::string> finalizers = current.metadata.finalizers;
    if (!HasFinalizer(current.metadata)) {
      finalizers.push_back(std::string(v1::kAwsTerminationFinalizer));
    }
    const nlohmann::json patch = {{"metadata",
                                   {{"resourceVersion", resource_version},
                                    {"finalizers", finalizers},
                                    {"annotations",
                                     {{std::string(v1::kEC2NodeClassHashAnnotationKey), hash},
                                      {std::string(v1::kEC2NodeClassHashVersionAnnotationKey),
                                       std::string(apis::hash::kEC2NodeClassHashVersion)}}}}}};
    ASSIGN_OR_RETURN(const awsv1::EC2NodeClass patched,
                     classes.Patch("", name, kube::PatchType::kMerge, patch.dump()));
    resource_version = patched.metadata.resource_version;
  }

  const absl::Status resolved = Resolve(desired);

  nlohmann::json status = core::EncodeJson(desired.status);
  const nlohmann::json before = core::EncodeJson(current.status);
  if (status != before) {
    // A merge patch keeps what it does not name: emptied fields are deleted explicitly.
    for (const auto& [key, value] : before.items()) {
      if (!status.contains(key)) status[key] = nullptr;
    }
    const nlohmann::json patch = {{"metadata", {{"resourceVersion", resource_version}}},
                                  {"status", status}};
    RETURN_IF_ERROR(deps_.client
                        .Patch(kube::resources::kEC2NodeClasses, "", name, kube::PatchType::kMerge,
                               patch.dump(), {}, "status")
                        .status());
  }

  // Managed profiles other than the current one (all of them once spec.role is gone).
  if (options_.delete_instance_profiles &&
      (desired.spec.role.empty() || !desired.status.instance_profile.empty())) {
    const std::string keep = desired.spec.role.empty() ? "" : desired.status.instance_profile;
    absl::Status collected =
        profiles_.CollectStale(desired, keep, [this](std::string_view profile) {
          for (const auto& claim : deps_.informers.node_claims().store().List()) {
            auto it = claim->metadata.annotations.find(v1::kInstanceProfileNameAnnotationKey);
            if (it != claim->metadata.annotations.end() && it->second == profile) return true;
          }
          return false;
        });
    if (!collected.ok()) {
      log::Error(kLogger, "collecting superseded instance profiles",
                 {{"ec2nodeclass", name}, {"error", collected.ToString()}});
    }
  }
  if (resolved.ok() && !desired.status.amis.empty() && !desired.status.security_groups.empty() &&
      !desired.status.subnets.empty() && !desired.status.instance_profile.empty()) {
    absl::StatusOr<int> collected =
        CollectObsoleteLaunchTemplates(ec2_, options_.cluster_name, desired);
    if (!collected.ok()) {
      // Retried at the next periodic reconcile; never fails this one.
      log::Error(kLogger, "collecting obsolete launch templates",
                 {{"ec2nodeclass", name}, {"error", collected.status().ToString()}});
    } else if (*collected > 0) {
      log::Info(kLogger, "deleted obsolete launch templates",
                {{"ec2nodeclass", name}, {"count", Cat(*collected)}});
    }
  }
  if (!resolved.ok()) return resolved;
  return kube::ReconcileResult{.requeue_after = options_.resolve_interval};
}

}  // namespace dovetail::providers::aws::nodeclass
