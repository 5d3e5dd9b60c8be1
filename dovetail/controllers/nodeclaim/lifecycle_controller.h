// LifecycleController ("nodeclaim.lifecycle"): takes every NodeClaim from creation to Ready, as
// upstream's nodeclaim lifecycle controller (docs/nodeclaim-lifecycle.md).
// Keyed by NodeClaim name; triggered by the NodeClaim informer and by Node events (mapped to their
// NodeClaim through cluster state by provider id). Each reconcile reads the NodeClaim from the API
// server (never a stale cache) and, unless it is being deleted (the termination controller's job):
//   1. adds the karpenter.sh/termination finalizer (never launch without it);
//   2. Launch: unless Launched is True, calls CloudProvider::Create at most once per NodeClaim UID
//      (a NodeClaim with status.providerID is launched already; a successful Create is remembered
//      in memory by UID for `launch_cache_ttl`, covering a lost status write), merges labels,
//      annotations and status; InsufficientCapacity or NodeClassNotReady => event and delete the
//      NodeClaim; other errors => Launched=Unknown (the CreateError's reason, else LaunchFailed)
//      and retry with backoff;
//   3. Registration: finds the Node by provider id, syncs the NodeClaim's labels, annotations,
//      taints, the finalizer and an owner reference onto it, removes karpenter.sh/unregistered,
//      labels it karpenter.sh/registered=true; Registered=True and status.nodeName;
//   4. Initialization: Node Ready, startup and known ephemeral taints gone, requested resources
//      registered => label karpenter.sh/initialized=true, Initialized=True;
//   5. Liveness: not launched within `launch_timeout`, or launched and not registered within
//      `registration_ttl` (from the condition's last transition) => event and delete;
// and records, for a NodeClaim owned by its NodePool, each registration and each deletion by
// liveness (RegistrationFailed, or the Launched condition's reason when it never launched) in
// the cluster state's RegistrationHealth, from which the pool's NodeRegistrationHealthy follows
// (controllers/nodepool/status.h);
// it writes metadata and status with merge patches carrying the resourceVersion it read
// (a conflict retries the reconcile). Conditions follow conditions.h.
// Metrics (when deps.metrics is set): karpenter_nodes_created_total{nodepool, zone} once the
// write that sets Registered=True succeeds (the NodeClaim's labels), as upstream.
// Thread-safety: see controllers/controller.h; informer handlers only enqueue.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/nodeclaim/lifecycle.h"
#include "dovetail/controllers/reconcile_queue.h"
#include "dovetail/kube/handler_registration.h"
#include "dovetail/kube/workqueue.h"

namespace dovetail::controllers::nodeclaim {

struct LifecycleOptions {
  int workers = 10;
  // Liveness (upstream: 5 min and 15 min).
  absl::Duration launch_timeout = absl::Minutes(5);
  absl::Duration registration_ttl = absl::Minutes(15);
  // How long a successful Create is remembered by NodeClaim UID (upstream: 1 h).
  absl::Duration launch_cache_ttl = absl::Hours(1);
  // While a NodeClaim is not yet initialized, look again at least this often (events usually
  // come first).
  absl::Duration poll_interval = absl::Seconds(30);
  kube::WorkQueueOptions queue = {.base_delay = absl::Seconds(1), .max_delay = absl::Minutes(1)};
};

class LifecycleController final : public QueueController {
 public:
  // Registers the NodeClaim and Node informer handlers; `deps` must outlive this object.
  explicit LifecycleController(const Dependencies& deps, LifecycleOptions options = {});
  ~LifecycleController() override;

  // One reconcile of the named NodeClaim (what a worker runs; public for tests).
  absl::StatusOr<kube::ReconcileResult> Reconcile(const std::string& name) override;
  // CloudProvider::Create calls made so far.
  int64_t launches() const { return launches_.load(); }

 private:
  // Every cached NodeClaim the lifecycle has work for is reconciled when Start()ed.
  void Seed(kube::WorkQueue& queue) override;
  absl::StatusOr<apis::v1::NodeClaim> Launch(const apis::v1::NodeClaim& node_claim);
  absl::Status DeleteNodeClaim(const apis::v1::NodeClaim& node_claim, std::string_view reason,
                               std::string_view event_reason, std::string_view message);
  absl::Status Register(apis::v1::NodeClaim& desired);
  absl::Status Initialize(apis::v1::NodeClaim& desired);
  absl::Status Write(const apis::v1::NodeClaim& current, const apis::v1::NodeClaim& desired);
  void RecordEvent(const apis::v1::NodeClaim& node_claim, std::string_view type,
                   std::string_view reason, std::string_view message);

  metrics::Counter* nodes_created_ = nullptr;
  const LifecycleOptions options_;
  std::atomic<int64_t> launches_{0};

  struct Launched {
    apis::v1::NodeClaim node_claim;
    absl::Time expires;
  };
  absl::Mutex cache_mu_;
  absl::flat_hash_map<std::string, Launched> launch_cache_ ABSL_GUARDED_BY(cache_mu_);

  // After everything its handlers touch, so removed (each waiting for its handler's call in
  // progress) before any of it is destroyed.
  std::vector<kube::HandlerRegistration> registrations_;
};

}  // namespace dovetail::controllers::nodeclaim
