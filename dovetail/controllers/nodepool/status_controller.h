// StatusController ("nodepool.status"): writes every NodePool's status as upstream's
// nodepool.counter, nodepool.validation, nodepool.readiness and nodepool.registrationhealth
// controllers do (the decisions are status.h), so `kubectl get nodepools` shows NODES and READY,
// GitOps health checks see Ready, and dashboards read status.resources.
//
// Keyed by NodePool name; triggered by the shared NodePool informer (creation, a change
// of generation, annotations or deletion; its own status writes do not trigger it) and again
// every `period` (usage, the node class and NodeClaim registrations change without a NodePool
// event). A reconcile takes the cached NodePool, the pool's usage from the cluster state (only
// once it synced: while a NodeClaim is not launched yet, status.resources and status.nodes stay
// and the pool is looked at again every second; the conditions are written regardless), its node
// class (a GET of the kind `node_classes` maps its nodeClassRef to), the
// runtime validation (apis/validation), the NodeClaims' Registered transitions from the
// NodeClaim informer and what the pool's launch and registration outcomes call for (the cluster
// state's RegistrationHealth, reset when NodeRegistrationHealthy starts again from Unknown and
// seeded from the written condition after a restart), and merge-patches the status subresource when
// DesiredStatus differs, with the resourceVersion it read (a conflict retries). Metrics (when
// deps.metrics is set; this controller runs on the leader only): upstream's
// karpenter_nodepools_usage{resource_type,nodepool} (the status.resources written) and
// karpenter_nodepools_limit{resource_type,nodepool} (spec.limits), dropped with the NodePool and
// cleared on Stop.
// Thread-safety: see controllers/controller.h; informer handlers only enqueue.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/nodepool/status.h"
#include "dovetail/controllers/reconcile_queue.h"
#include "dovetail/kube/handler_registration.h"
#include "dovetail/kube/informer.h"
#include "dovetail/kube/resource.h"
#include "dovetail/kube/workqueue.h"
#include "dovetail/metrics/registry.h"

namespace dovetail::controllers::nodepool {

// A node class kind the cloud provider serves, and where its objects are.
struct NodeClassKind {
  std::string group;  // nodeClassRef.group, e.g. karpenter.k8s.aws
  std::string kind;   // nodeClassRef.kind, e.g. EC2NodeClass
  const kube::Resource* resource = nullptr;
};

struct StatusOptions {
  // Empty: the cloud provider has no node class objects (kwok), NodeClassReady is True.
  std::vector<NodeClassKind> node_classes;
  absl::Duration period = absl::Seconds(10);
  // The usage and limit gauges (off under DISABLE_CLUSTER_STATE_OBSERVABILITY, as upstream's
  // NodePool metrics controller).
  bool export_metrics = true;
  int workers = 2;
  kube::WorkQueueOptions queue = {.base_delay = absl::Seconds(1), .max_delay = absl::Minutes(1)};
};

class StatusController final : public QueueController {
 public:
  using NodePoolInformer = state::ClusterInformers::NodePoolInformer;

  // Registers the NodePool informer handlers; `deps` must outlive this object.
  explicit StatusController(const Dependencies& deps, StatusOptions options = {});
  ~StatusController() override;

  // Stops the workers and clears the gauges.
  void Stop() override;
  // One reconcile of the named NodePool (what a worker runs; public for tests).
  absl::StatusOr<kube::ReconcileResult> Reconcile(const std::string& name) override;
  NodePoolInformer& node_pools() { return node_pools_; }

 private:
  // Every cached NodePool is reconciled at once when Start()ed.
  void Seed(kube::WorkQueue& queue) override;
  // Errors: API errors other than NotFound.
  absl::StatusOr<NodeClassView> NodeClassOf(const apis::v1::NodePool& pool);

  const StatusOptions options_;
  NodePoolInformer& node_pools_;  // the shared one (deps.informers)

  // Sets the pool's usage and limit gauges (null: the pool is gone, its series are dropped).
  void ExportMetrics(const std::string& name, const apis::v1::NodePool* pool,
                     const ResourceList& usage);

  metrics::Gauge* usage_metric_ = nullptr;
  metrics::Gauge* limit_metric_ = nullptr;
  absl::Mutex metrics_mu_;
  // The label sets exported per pool, to drop them.
  std::map<std::string, std::vector<metrics::LabelValues>> exported_ ABSL_GUARDED_BY(metrics_mu_);

  // After everything its handlers touch, so removed (each waiting for its handler's call in
  // progress) before any of it is destroyed.
  std::vector<kube::HandlerRegistration> registrations_;
};

}  // namespace dovetail::controllers::nodepool
