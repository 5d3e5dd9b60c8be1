// StatusConditionMetricsController ("metrics.status_condition"): the operator_* families that
// upstream Karpenter v1.14.1 gets from operatorpkg's status controllers, one per kind it watches
// (test/testdata/upstream-metrics.json has the exact names, label sets and buckets):
//   - operator_<kind>_status_condition_count{namespace, name, type, status, reason, ...}: 1 for
//     every condition an object has now;
//   - operator_<kind>_status_condition_current_status_seconds{same labels}: now minus the
//     condition's lastTransitionTime;
//   - operator_<kind>_status_condition_transitions_total{type, status, reason, ...}: +1 whenever a
//     condition's status differs from the one seen last for that object (a condition seen for the
//     first time counts unless it is Unknown, as upstream's absent condition reads as Unknown, so
//     every True/False condition counts once when this replica starts leading, as upstream's
//     does on every start);
//   - operator_<kind>_status_condition_transition_seconds{type, status, ...}: at such a change,
//     the new lastTransitionTime minus the previous one, labelled with the previous status;
//   - operator_<kind>_termination_current_time_seconds{namespace, name, ...}: now minus the
//     deletionTimestamp of an object being deleted;
//   - operator_<kind>_termination_duration_seconds{...}: when an object seen with a
//     deletionTimestamp is gone, the time since that timestamp.
// "..." are the kind's extra labels, the values of object labels (empty when absent):
//   nodeclaim: karpenter_k8s_aws_ec2nodeclass, karpenter_sh_nodepool;
//   node: the same plus karpenter_sh_initialized;  nodepool, ec2nodeclass: none.
// Histogram buckets: 0.5 * 2^i (15) for nodeclaim, nodepool and node; Prometheus' defaults for
// ec2nodeclass (upstream's aws provider sets none). NodeClaims, NodePools and EC2NodeClasses also
// feed the kind-less operator_status_condition_* / operator_termination_* families (upstream
// passes EmitDeprecatedMetrics for them, not for Node): the same values without the extra labels
// and with group and kind ("karpenter.sh" NodeClaim/NodePool, "karpenter.k8s.aws" EC2NodeClass),
// Prometheus' default buckets.
// Upstream's nodeclass label is named after the provider's node class; Dovetail names it
// karpenter_k8s_aws_ec2nodeclass whatever the provider (the names of upstream's AWS build).
//
// Nodes are read from the compact kube::NodeInfo, which keeps no condition reasons and only the
// Ready condition's lastTransitionTime: Node series have reason "", only Ready has
// current_status_seconds and transition_seconds (objects.h).
// All four kinds are cluster-scoped: namespace is "".
//
// Transitions and terminations are detected from informer events (NodeClaims, Nodes and NodePools
// from the shared informers, EC2NodeClasses from this controller's own), against the last
// state seen of each object; the gauges are recomputed from those states every `period` (as
// upstream's reconcile requeues every 10 s). Leader only, like upstream's controllers: events
// are ignored until Start(); Stop() forgets every object and clears the gauges (counters and
// histograms stay). Not built under DISABLE_CLUSTER_STATE_OBSERVABILITY
// (operator/controllers.cc). CapacityBuffer's families are not exported: Dovetail serves no
// CapacityBuffer.
// Thread-safety: see controllers/controller.h; StatusConditionMetrics is thread-safe.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/kube/handler_registration.h"
#include "dovetail/kube/informer.h"
#include "dovetail/kube/objects.h"
#include "dovetail/kube/singleton.h"
#include "dovetail/metrics/registry.h"

namespace dovetail::controllers::observability {

enum class ConditionKind { kNodeClaim, kNodePool, kNode, kEC2NodeClass };
inline constexpr size_t kConditionKinds = 4;

// An object as these metrics read it.
struct ConditionedObject {
  struct Entry {
    std::string type;
    std::string status;  // True, False or Unknown
    std::string reason;
    std::optional<absl::Time> last_transition;  // unset when unknown
  };
  std::string namespace_;
  std::string name;
  std::vector<std::string> label_values;  // the kind's extra labels, in order
  std::vector<Entry> conditions;
  std::optional<absl::Time> deletion;
};

ConditionedObject FromNodeClaim(const apis::v1::NodeClaim& claim);
ConditionedObject FromNodePool(const apis::v1::NodePool& pool);
ConditionedObject FromNode(const kube::NodeInfo& node);
ConditionedObject FromEC2NodeClass(const apis::aws::v1::EC2NodeClass& node_class);

// The families of every kind and the last state seen of every object.
class StatusConditionMetrics {
 public:
  // Registers every family; `registry` must outlive this object.
  explicit StatusConditionMetrics(metrics::Registry& registry);

  // The object was added or changed: counts and times its conditions' status changes since the
  // state last seen, then remembers it.
  void Observe(ConditionKind kind, ConditionedObject object);
  // The object is gone (`last`: its last known state): observes its termination duration when
  // it was seen (or is, in `last`) with a deletionTimestamp, and forgets it.
  void Gone(ConditionKind kind, const ConditionedObject& last, absl::Time now);
  // Recomputes every gauge from the states remembered.
  void Export(absl::Time now);
  // Forgets every object and clears the gauges.
  void Clear();

 private:
  struct Family {
    metrics::Gauge* count = nullptr;
    metrics::Gauge* current_status_seconds = nullptr;
    metrics::Histogram* transition_seconds = nullptr;
    metrics::Counter* transitions_total = nullptr;
    metrics::Gauge* termination_current_time_seconds = nullptr;
    metrics::Histogram* termination_duration_seconds = nullptr;
  };
  Family& Of(ConditionKind kind) { return families_[static_cast<size_t>(kind)]; }

  std::array<Family, kConditionKinds> families_;
  Family generic_;  // operator_status_condition_* / operator_termination_*

  absl::Mutex mu_;
  // Per kind: "namespace/name" -> the state last seen.
  std::array<std::map<std::string, ConditionedObject>, kConditionKinds> seen_ ABSL_GUARDED_BY(mu_);
};

struct StatusConditionMetricsOptions {
  absl::Duration period = absl::Seconds(10);
  // The AWS provider: EC2NodeClasses too (kwok has none).
  bool ec2_node_classes = false;
  kube::InformerOptions informer_options;  // of the controller's own EC2NodeClass informer
};

class StatusConditionMetricsController final : public Controller {
 public:
  using NodePoolInformer = state::ClusterInformers::NodePoolInformer;
  using EC2NodeClassInformer = kube::Informer<kube::ApiObjectCodec<apis::aws::v1::EC2NodeClass>>;

  // Registers the families and the informer handlers; `deps` (with a non-null `metrics`) must
  // outlive this object.
  explicit StatusConditionMetricsController(const Dependencies& deps,
                                            StatusConditionMetricsOptions options = {});
  ~StatusConditionMetricsController() override;

  std::string_view Name() const override { return "metrics.status_condition"; }
  // Starts the controller's EC2NodeClass informer, then observes every cached object and recomputes
  // the gauges at once and every period.
  void Start() override;
  // Stops recomputing, ignores events until the next Start, forgets every object and clears the
  // gauges.
  void Stop() override;
  // When the pass in flight began; nullopt between passes.
  std::optional<absl::Time> OldestWorkStart() const override { return loop_.OldestWorkStart(); }

  // One pass: observes every cached object, then recomputes the gauges (public for tests).
  void Collect();

  NodePoolInformer& node_pools() { return node_pools_; }

 private:
  template <typename T>
  void OnChange(ConditionKind kind, const T& object);
  template <typename T>
  void OnGone(ConditionKind kind, const T& object);

  const Dependencies deps_;
  const StatusConditionMetricsOptions options_;
  std::unique_ptr<StatusConditionMetrics> metrics_;     // null without a registry
  NodePoolInformer& node_pools_;                        // the shared one (deps.informers)
  std::unique_ptr<EC2NodeClassInformer> node_classes_;  // null unless options.ec2_node_classes

  // Serialises observations: the informer handlers and Collect's pass over the stores (held
  // from reading a store to observing what was read, so an older state read there is never
  // observed after a newer one delivered by an event).
  absl::Mutex observe_mu_;
  bool started_ ABSL_GUARDED_BY(observe_mu_) = false;

  kube::Singleton loop_;  // Collect() every period
  // After everything its handlers touch, so removed (each waiting for its handler's call in
  // progress) before any of it is destroyed.
  std::vector<kube::HandlerRegistration> registrations_;
};

}  // namespace dovetail::controllers::observability
