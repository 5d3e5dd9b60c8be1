#include "dovetail/apis/core/pod.h"

namespace dovetail::apis::core {
namespace {

constexpr std::string_view kProtocolNames[] = {"TCP", "UDP", "SCTP"};
constexpr std::string_view kUnsatisfiableNames[] = {"DoNotSchedule", "ScheduleAnyway"};
constexpr std::string_view kInclusionNames[] = {"Honor", "Ignore"};
constexpr std::string_view kPreemptionNames[] = {"PreemptLowerPriority", "Never"};
constexpr std::string_view kPodPhaseNames[] = {"Pending", "Running", "Succeeded", "Failed",
                                               "Unknown"};

// Describes the two rule lists NodeAffinity and PodAffinity (affinity and anti-affinity) both
// have, under the same JSON keys in both: `required`, then `preferred`.
template <typename T>
void DescribeSchedulingRules(FieldCodec& c, T& v) {
  c.Field("requiredDuringSchedulingIgnoredDuringExecution", v.required);
  c.Field("preferredDuringSchedulingIgnoredDuringExecution", v.preferred);
}

}  // namespace

std::span<const std::string_view> EnumNames(Protocol) { return kProtocolNames; }
std::span<const std::string_view> EnumNames(UnsatisfiableConstraintAction) {
  return kUnsatisfiableNames;
}
std::span<const std::string_view> EnumNames(NodeInclusionPolicy) { return kInclusionNames; }
std::span<const std::string_view> EnumNames(PreemptionPolicy) { return kPreemptionNames; }
std::span<const std::string_view> EnumNames(PodPhase) { return kPodPhaseNames; }

bool IsRestartableInitContainer(const Container& container) {
  return container.restart_policy.has_value() && *container.restart_policy == "Always";
}

bool IsTerminal(const Pod& pod) {
  return pod.status.phase == PodPhase::kSucceeded || pod.status.phase == PodPhase::kFailed;
}

bool IsTerminating(const Pod& pod) { return pod.metadata.deletion_timestamp.has_value(); }

void DescribeFields(FieldCodec& c, ContainerPort& v) {
  c.Field("name", v.name);
  c.Field("hostPort", v.host_port);
  c.Field("containerPort", v.container_port, {.emit_empty = true});
  c.Field("protocol", v.protocol);
  c.Field("hostIP", v.host_ip);
}

void DescribeFields(FieldCodec& c, Container& v) {
  c.Field("name", v.name, {.emit_empty = true});
  c.Field("image", v.image);
  c.Field("resources", v.resources);
  c.Field("ports", v.ports);
  c.Field("restartPolicy", v.restart_policy);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, PreferredSchedulingTerm& v) {
  c.Field("weight", v.weight, {.emit_empty = true});
  c.Field("preference", v.preference, {.emit_empty = true});
}

void DescribeFields(FieldCodec& c, NodeAffinity& v) { DescribeSchedulingRules(c, v); }

void DescribeFields(FieldCodec& c, PodAffinityTerm& v) {
  c.Field("labelSelector", v.label_selector);
  c.Field("namespaces", v.namespaces);
  c.Field("topologyKey", v.topology_key, {.emit_empty = true});
  c.Field("namespaceSelector", v.namespace_selector);
  c.Field("matchLabelKeys", v.match_label_keys);
  c.Field("mismatchLabelKeys", v.mismatch_label_keys);
}

void DescribeFields(FieldCodec& c, WeightedPodAffinityTerm& v) {
  c.Field("weight", v.weight, {.emit_empty = true});
  c.Field("podAffinityTerm", v.term, {.emit_empty = true});
}

void DescribeFields(FieldCodec& c, PodAffinity& v) { DescribeSchedulingRules(c, v); }

void DescribeFields(FieldCodec& c, Affinity& v) {
  c.Field("nodeAffinity", v.node_affinity);
  c.Field("podAffinity", v.pod_affinity);
  c.Field("podAntiAffinity", v.pod_anti_affinity);
}

void DescribeFields(FieldCodec& c, TopologySpreadConstraint& v) {
  c.Field("maxSkew", v.max_skew, {.emit_empty = true});
  c.Field("topologyKey", v.topology_key, {.emit_empty = true});
  c.Field("whenUnsatisfiable", v.when_unsatisfiable);
  c.Field("labelSelector", v.label_selector);
  c.Field("minDomains", v.min_domains);
  c.Field("nodeAffinityPolicy", v.node_affinity_policy);
  c.Field("nodeTaintsPolicy", v.node_taints_policy);
  c.Field("matchLabelKeys", v.match_label_keys);
}

void DescribeFields(FieldCodec& c, PersistentVolumeClaimVolumeSource& v) {
  c.Field("claimName", v.claim_name, {.emit_empty = true});
  c.Field("readOnly", v.read_only);
}

void DescribeFields(FieldCodec& c, EmptyDirVolumeSource& v) {
  c.Field("medium", v.medium);
  c.Field("sizeLimit", v.size_limit);
}

void DescribeFields(FieldCodec& c, PersistentVolumeClaimTemplate& v) {
  c.Field("metadata", v.metadata);
  c.Field("spec", v.spec, {.emit_empty = true});
}

void DescribeFields(FieldCodec& c, EphemeralVolumeSource& v) {
  c.Field("volumeClaimTemplate", v.volume_claim_template);
}

void DescribeFields(FieldCodec& c, Volume& v) {
  c.Field("name", v.name, {.emit_empty = true});
  c.Field("persistentVolumeClaim", v.persistent_volume_claim);
  c.Field("ephemeral", v.ephemeral);
  c.Field("hostPath", v.host_path);
  c.Field("emptyDir", v.empty_dir);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, PodResourceClaim& v) {
  c.Field("name", v.name, {.emit_empty = true});
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, PodSpec& v) {
  c.Field("volumes", v.volumes);
  c.Field("initContainers", v.init_containers);
  c.Field("containers", v.containers, {.emit_empty = true});
  c.Field("terminationGracePeriodSeconds", v.termination_grace_period_seconds);
  c.Field("nodeSelector", v.node_selector);
  c.Field("nodeName", v.node_name);
  c.Field("affinity", v.affinity);
  c.Field("schedulerName", v.scheduler_name);
  c.Field("tolerations", v.tolerations);
  c.Field("priorityClassName", v.priority_class_name);
  c.Field("priority", v.priority);
  c.Field("preemptionPolicy", v.preemption_policy);
  c.Field("overhead", v.overhead);
  c.Field("topologySpreadConstraints", v.topology_spread_constraints);
  c.Field("resourceClaims", v.resource_claims);
  c.Field("resources", v.resources);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, PodCondition& v) {
  c.Field("type", v.type, {.emit_empty = true});
  c.Field("status", v.status);
  c.Field("observedGeneration", v.observed_generation);
  c.Field("lastProbeTime", v.last_probe_time);
  c.Field("lastTransitionTime", v.last_transition_time);
  c.Field("reason", v.reason);
  c.Field("message", v.message);
}

void DescribeFields(FieldCodec& c, ContainerStatus& v) {
  c.Field("name", v.name, {.emit_empty = true});
  c.Field("allocatedResources", v.allocated_resources);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, PodStatus& v) {
  c.Field("phase", v.phase);
  c.Field("conditions", v.conditions);
  c.Field("nominatedNodeName", v.nominated_node_name);
  c.Field("startTime", v.start_time);
  c.Field("initContainerStatuses", v.init_container_statuses);
  c.Field("containerStatuses", v.container_statuses);
  c.UnknownFields(v.unknown_fields);
}

void DescribeFields(FieldCodec& c, Pod& v) { DescribeObject(c, v); }

void DescribeFields(FieldCodec& c, PodTemplateSpec& v) {
  c.Field("metadata", v.metadata);
  c.Field("spec", v.spec);
}

}  // namespace dovetail::apis::core
