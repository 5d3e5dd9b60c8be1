// Compact, read-only views of the high-volume kinds the informers cache (Pod, Node), decoded
// straight from the API server's JSON with simdjson's On-Demand parser: no JSON DOM is built or
// kept. Each struct holds only what Dovetail's scheduling, state and disruption logic read;
// repeated strings (namespaces, label/taint/resource keys, owner kinds) are interned in a
// StringPool shared by the informer. Rare, structured and scheduling-only fields (affinity,
// topology spread constraints) are decoded once into the dovetail/apis types, shared among the pods
// with the same text through a PodConstraintPool (pod_constraints.h).
// Node termination decodes the pods it lists live with the same decoder (DecodePodList).
// Low-volume kinds (NodePool, NodeClaim, EC2NodeClass, PDB, ...) are cached as their full
// dovetail/apis structs through ApiObjectCodec (informer.h).
// Plain data; decoding functions are thread-safe given a thread-safe pool.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/kube/pod_constraints.h"
#include "dovetail/kube/string_pool.h"
#include "simdjson.h"

namespace dovetail::kube {

using Interned = const std::string*;  // never null once decoded

struct KeyValue {
  Interned key = nullptr;
  std::string value;
};

struct OwnerRef {
  Interned api_version = nullptr;  // "" when absent
  Interned kind = nullptr;         // "" when absent
  std::string name;
  std::string uid;
  bool controller = false;
};

// Metadata common to every compact object.
struct CompactMeta {
  Interned namespace_ = nullptr;  // the empty string for cluster-scoped objects
  std::string name;
  std::string uid;
  std::string resource_version;
  std::vector<KeyValue> labels;
  std::vector<KeyValue> annotations;  // only keys accepted by the decoder's annotation filter
  std::vector<OwnerRef> owners;
  std::vector<Interned> finalizers;
  absl::Time creation = absl::InfinitePast();
  std::optional<absl::Time> deletion;

  std::string Key() const;  // "namespace/name" or "name"
  const std::string* Label(std::string_view key) const;
  const std::string* Annotation(std::string_view key) const;
};

// A resource amount: name (interned) and milli-units.
struct ResourceAmount {
  Interned name = nullptr;
  int64_t milli = 0;
};

struct CompactToleration {
  Interned key = nullptr;
  std::string value;
  uint8_t op = 0;      // 0 Equal, 1 Exists
  int8_t effect = -1;  // -1 all, else apis::core::TaintEffect
  std::optional<int64_t> seconds;
};

struct CompactTaint {
  Interned key = nullptr;
  std::string value;
  uint8_t effect = 0;  // apis::core::TaintEffect
};

struct PodInfo {
  CompactMeta meta;
  std::string node_name;
  std::string nominated_node_name;
  Interned scheduler_name = nullptr;
  // spec.priorityClassName; the empty string when absent.
  Interned priority_class_name = nullptr;
  int32_t priority = 0;
  // spec.terminationGracePeriodSeconds, when set (Kubernetes defaults it to 30).
  std::optional<int64_t> termination_grace_period_seconds;
  apis::core::PodPhase phase = apis::core::PodPhase::kPending;
  bool unschedulable = false;  // condition PodScheduled=False, reason Unschedulable
  bool ready = false;
  // lastTransitionTime of the PodScheduled=True and Ready=True conditions, when they hold.
  std::optional<absl::Time> scheduled_transition;
  std::optional<absl::Time> ready_transition;
  // Effective requests as the scheduler computes them (containers, init containers including
  // sidecars, overhead), sorted by name pointer.
  std::vector<ResourceAmount> requests;
  // Effective limits, computed as the requests are (metrics only), sorted by name pointer.
  std::vector<ResourceAmount> limits;
  std::vector<KeyValue> node_selector;
  std::vector<CompactToleration> tolerations;
  std::vector<std::string> pvc_names;  // persistentVolumeClaim claimNames
  bool has_ephemeral_volumes = false;
  // Dynamic Resource Allocation: spec.resourceClaims or a container's resources.claims.
  bool has_dra_requirements = false;
  std::vector<int32_t> host_ports;
  // spec.affinity and spec.topologySpreadConstraints, decoded with the pod; null when unset or
  // empty. Immutable and possibly shared with other pods.
  AffinityPtr affinity;
  TopologySpreadPtr topology_spread;
  std::optional<absl::Time> start_time;

  int64_t RequestMilli(std::string_view resource) const;
};

struct NodeInfo {
  CompactMeta meta;
  std::string provider_id;
  bool unschedulable = false;
  std::vector<CompactTaint> taints;
  std::vector<ResourceAmount> capacity;
  std::vector<ResourceAmount> allocatable;
  // Ready condition: kTrue/kFalse/kUnknown, kUnknown when absent.
  apis::core::ConditionStatus ready = apis::core::ConditionStatus::kUnknown;
  std::optional<absl::Time> ready_transition;
  std::vector<std::pair<Interned, apis::core::ConditionStatus>> conditions;
};

// What the decoders keep beyond the fixed fields.
struct DecodeContext {
  StringPool* pool = nullptr;
  // Shares decoded affinity and topology spread among pods; null decodes each pod's own.
  PodConstraintPool* constraints = nullptr;
  // Annotation keys to keep (exact); empty keeps none.
  std::vector<std::string> annotation_keys = {"karpenter.sh/do-not-disrupt",
                                              "kubernetes.io/config.mirror",
                                              "karpenter.sh/nodepool-hash",
                                              "karpenter.k8s.aws/ec2nodeclass-hash",
                                              "karpenter.sh/managed-by",
                                              "cluster-autoscaler.kubernetes.io/safe-to-evict",
                                              "controller.kubernetes.io/pod-deletion-cost"};
};

// Decoders. `object` is positioned at a Pod/Node JSON object. Errors: InvalidArgument for
// malformed or mistyped JSON.
absl::Status DecodePod(simdjson::ondemand::object object, const DecodeContext& ctx, PodInfo& out);
absl::Status DecodeNode(simdjson::ondemand::object object, const DecodeContext& ctx, NodeInfo& out);
// Metadata only (for bookmarks, deletions of unknown kinds and generic objects).
absl::Status DecodeMeta(simdjson::ondemand::object object, const DecodeContext& ctx,
                        CompactMeta& out);
// The items of a Pod List body (one page of GET /api/v1/pods), in order. Errors: InvalidArgument
// for a malformed body or for the first item that does not decode (naming its index, and the pod
// when its metadata was read).
absl::StatusOr<std::vector<PodInfo>> DecodePodList(std::string_view body, const DecodeContext& ctx);

// Approximate heap + inline bytes of a cached object (benchmarks and metrics).
size_t ApproximateBytes(const PodInfo& pod);
size_t ApproximateBytes(const NodeInfo& node);

}  // namespace dovetail::kube
