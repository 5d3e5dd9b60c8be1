// Pod (core/v1) reduced to what scheduling, provisioning and disruption read: placement
// constraints (node selector, node and pod (anti-)affinity, tolerations, topology spread),
// containers' requests and host ports, volumes (to find the PVCs a pod uses), priority and the
// status fields that tell whether a pod is pending, unschedulable, terminal or terminating.
// Fields Dovetail does not model are kept in unknown_fields at every object level that has one.
// Also PodTemplateSpec, shared by the workload controllers (workloads.h).
//
// Plain data with a JSON codec (DecodeJson/EncodeJson from codec.h); helpers are pure functions.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/meta.h"
#include "dovetail/apis/core/persistent_volume.h"
#include "dovetail/apis/core/persistent_volume_claim.h"
#include "dovetail/common/quantity.h"
#include "nlohmann/json.hpp"

namespace dovetail::apis::core {

// Annotation the kubelet puts on mirror pods (static pods reflected into the API).
inline constexpr std::string_view kMirrorPodAnnotation = "kubernetes.io/config.mirror";

enum class Protocol { kTCP, kUDP, kSCTP };

struct ContainerPort {
  std::string name;
  int32_t host_port = 0;
  int32_t container_port = 0;
  std::optional<Protocol> protocol;  // unset means TCP
  std::string host_ip;
};

struct Container {
  std::string name;
  std::string image;
  ResourceRequirements resources;
  std::vector<ContainerPort> ports;
  // On an init container, "Always" makes it a sidecar (restartable init container).
  std::optional<std::string> restart_policy;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct PreferredSchedulingTerm {
  int32_t weight = 0;
  NodeSelectorTerm preference;
};

struct NodeAffinity {
  std::optional<NodeSelector> required;  // requiredDuringSchedulingIgnoredDuringExecution
  std::vector<PreferredSchedulingTerm> preferred;
};

struct PodAffinityTerm {
  std::optional<LabelSelector> label_selector;  // unset selects no pods
  std::vector<std::string> namespaces;
  std::string topology_key;
  std::optional<LabelSelector> namespace_selector;
  std::vector<std::string> match_label_keys;
  std::vector<std::string> mismatch_label_keys;
};

struct WeightedPodAffinityTerm {
  int32_t weight = 0;
  PodAffinityTerm term;  // podAffinityTerm
};

// Pod affinity or anti-affinity.
struct PodAffinity {
  std::vector<PodAffinityTerm> required;  // requiredDuringSchedulingIgnoredDuringExecution
  std::vector<WeightedPodAffinityTerm> preferred;
};

struct Affinity {
  std::optional<NodeAffinity> node_affinity;
  std::optional<PodAffinity> pod_affinity;
  std::optional<PodAffinity> pod_anti_affinity;
};

enum class UnsatisfiableConstraintAction { kDoNotSchedule, kScheduleAnyway };
enum class NodeInclusionPolicy { kHonor, kIgnore };

struct TopologySpreadConstraint {
  int32_t max_skew = 0;
  std::string topology_key;
  UnsatisfiableConstraintAction when_unsatisfiable = UnsatisfiableConstraintAction::kDoNotSchedule;
  std::optional<LabelSelector> label_selector;
  std::optional<int32_t> min_domains;
  std::optional<NodeInclusionPolicy> node_affinity_policy;  // unset means Honor
  std::optional<NodeInclusionPolicy> node_taints_policy;    // unset means Ignore
  std::vector<std::string> match_label_keys;
};

struct PersistentVolumeClaimVolumeSource {
  std::string claim_name;
  bool read_only = false;
};

struct EmptyDirVolumeSource {
  std::string medium;
  std::optional<Quantity> size_limit;
};

struct PersistentVolumeClaimTemplate {
  ObjectMeta metadata;
  PersistentVolumeClaimSpec spec;
};

// A generic ephemeral volume: a PVC named "<pod>-<volume>" created from the template.
struct EphemeralVolumeSource {
  std::optional<PersistentVolumeClaimTemplate> volume_claim_template;
};

struct Volume {
  std::string name;
  std::optional<PersistentVolumeClaimVolumeSource> persistent_volume_claim;
  std::optional<EphemeralVolumeSource> ephemeral;
  std::optional<HostPathVolumeSource> host_path;
  std::optional<EmptyDirVolumeSource> empty_dir;
  nlohmann::json unknown_fields = nlohmann::json::object();  // configMap, secret, projected, ...
};

// A dynamic resource claim reference; only its presence matters to Dovetail.
struct PodResourceClaim {
  std::string name;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

enum class PreemptionPolicy { kPreemptLowerPriority, kNever };

struct PodSpec {
  std::vector<Volume> volumes;
  std::vector<Container> init_containers;
  std::vector<Container> containers;
  std::optional<int64_t> termination_grace_period_seconds;
  StringMap node_selector;
  std::string node_name;
  std::optional<Affinity> affinity;
  std::string scheduler_name;
  std::vector<Toleration> tolerations;
  std::string priority_class_name;
  std::optional<int32_t> priority;
  std::optional<PreemptionPolicy> preemption_policy;
  ResourceList overhead;
  std::vector<TopologySpreadConstraint> topology_spread_constraints;
  std::vector<PodResourceClaim> resource_claims;
  std::optional<ResourceRequirements> resources;  // pod-level resources
  nlohmann::json unknown_fields = nlohmann::json::object();
};

enum class PodPhase { kPending, kRunning, kSucceeded, kFailed, kUnknown };

struct PodCondition {
  std::string type;
  ConditionStatus status = ConditionStatus::kUnknown;
  std::optional<int64_t> observed_generation;
  std::optional<absl::Time> last_probe_time;
  std::optional<absl::Time> last_transition_time;
  std::string reason;
  std::string message;
};

struct ContainerStatus {
  std::string name;
  ResourceList allocated_resources;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct PodStatus {
  std::optional<PodPhase> phase;
  std::vector<PodCondition> conditions;
  std::string nominated_node_name;
  std::optional<absl::Time> start_time;
  std::vector<ContainerStatus> init_container_statuses;
  std::vector<ContainerStatus> container_statuses;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct Pod {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  PodSpec spec;
  PodStatus status;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct PodTemplateSpec {
  ObjectMeta metadata;
  PodSpec spec;
};

// True for an init container with restartPolicy Always (a sidecar).
bool IsRestartableInitContainer(const Container& container);
// The questions the solver asks of its pods; the controllers ask theirs of the compact pod
// (state/pod_predicates.h). Phase Succeeded or Failed.
bool IsTerminal(const Pod& pod);
// Deletion has started (deletionTimestamp set).
bool IsTerminating(const Pod& pod);

// Codec hooks (codec.h).
std::span<const std::string_view> EnumNames(Protocol);
std::span<const std::string_view> EnumNames(UnsatisfiableConstraintAction);
std::span<const std::string_view> EnumNames(NodeInclusionPolicy);
std::span<const std::string_view> EnumNames(PreemptionPolicy);
std::span<const std::string_view> EnumNames(PodPhase);
void DescribeFields(FieldCodec& c, ContainerPort& v);
void DescribeFields(FieldCodec& c, Container& v);
void DescribeFields(FieldCodec& c, PreferredSchedulingTerm& v);
void DescribeFields(FieldCodec& c, NodeAffinity& v);
void DescribeFields(FieldCodec& c, PodAffinityTerm& v);
void DescribeFields(FieldCodec& c, WeightedPodAffinityTerm& v);
void DescribeFields(FieldCodec& c, PodAffinity& v);
void DescribeFields(FieldCodec& c, Affinity& v);
void DescribeFields(FieldCodec& c, TopologySpreadConstraint& v);
void DescribeFields(FieldCodec& c, PersistentVolumeClaimVolumeSource& v);
void DescribeFields(FieldCodec& c, EmptyDirVolumeSource& v);
void DescribeFields(FieldCodec& c, PersistentVolumeClaimTemplate& v);
void DescribeFields(FieldCodec& c, EphemeralVolumeSource& v);
void DescribeFields(FieldCodec& c, Volume& v);
void DescribeFields(FieldCodec& c, PodResourceClaim& v);
void DescribeFields(FieldCodec& c, PodSpec& v);
void DescribeFields(FieldCodec& c, PodCondition& v);
void DescribeFields(FieldCodec& c, ContainerStatus& v);
void DescribeFields(FieldCodec& c, PodStatus& v);
void DescribeFields(FieldCodec& c, Pod& v);
void DescribeFields(FieldCodec& c, PodTemplateSpec& v);

}  // namespace dovetail::apis::core
