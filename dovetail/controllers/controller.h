// The contract between the operator (the composition root, dovetail/operator) and every controller
// (provisioning, nodeclaim lifecycle, termination, disruption, ...): what a controller is given and
// how it is started and stopped.
//
// The operator builds one Dependencies, constructs each controller with it (controllers register
// their informer handlers in their constructor, before the shared informers start), starts the
// informers, waits for the cluster state to sync, then Start()s the controllers while it holds the
// leader Lease and Stop()s them when it loses the Lease or shuts down. Writes go through
// `client`, whose WriteGate is closed whenever this process is not the leader.
//
// A controller keeps the registration of each handler it adds (kube/handler_registration.h) in a
// member declared after everything its handlers touch, so that destroying the controller removes
// them first: the shared informers outlive controllers (tests make and destroy controllers while
// the informers run).
//
// Thread-safety: Start/Stop are called from one thread; a controller's own work runs on threads
// it owns (usually a ReconcileQueue, reconcile_queue.h: a kube::WorkQueue and its workers).
// OldestWorkStart is called from the health endpoint's threads at any time.
#pragma once

#include <optional>
#include <string_view>

#include "absl/time/time.h"
#include "dovetail/cloudprovider/cloud_provider.h"
#include "dovetail/common/clock.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/event_recorder.h"
#include "dovetail/kube/undecodable.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/cluster_informers.h"

namespace dovetail::scenario {
class PodCache;  // scenario/pod_cache.h
}  // namespace dovetail::scenario

namespace dovetail::controllers {

// Everything here outlives every controller.
struct Dependencies {
  kube::Client& client;                 // reads that must be fresh, and every write
  state::Cluster& cluster;              // the cached cluster state (nodes, NodeClaims, pods)
  state::ClusterInformers& informers;   // add handlers in the constructor; keep registrations
  cloudprovider::CloudProvider& cloud;  // the one cloud seam (kwok, aws, ...)
  const Clock& clock;                   // the only source of time
  kube::EventRecorder& events;          // events.k8s.io/v1, deduplicated and rate limited
  // Where controllers register upstream's metrics (karpenter_*); null in tests that do not care.
  metrics::Registry* metrics = nullptr;
  // Shared by every informer, so an undecodable object is logged once (kube/undecodable.h); null:
  // each informer logs on its own.
  kube::UndecodableReports* undecodable = nullptr;
  // The solver's pods, converted once per pod version and shared by the controllers that build
  // solver questions (provisioning, disruption); null: each keeps its own.
  scenario::PodCache* pod_cache = nullptr;
};

class Controller {
 public:
  virtual ~Controller() = default;
  // A stable name for logs and metrics ("provisioner", "nodeclaim.lifecycle", ...).
  virtual std::string_view Name() const = 0;
  // Starts the controller's workers and returns. Called once the cluster state has synced.
  virtual void Start() = 0;
  // Stops the workers and waits for them; idempotent; Start() may follow again.
  virtual void Stop() = 0;
  // When this controller's oldest unit of work still in progress began: a reconcile (the
  // kube::WorkQueue's OldestProcessingStart), a pass, the handling of a message
  // (common/work_in_progress.h); on the real clock (absl::Now()); nullopt when none runs. The
  // operator's /healthz fails when it is too old (operator/health.h), so that a stuck loop gets
  // the pod restarted. Every controller answers (no default): one that ran work the operator
  // cannot see would hide a stuck loop. Thread-safe and cheap: called at every probe, concurrently
  // with Start, Stop and the work itself.
  virtual std::optional<absl::Time> OldestWorkStart() const = 0;
};

}  // namespace dovetail::controllers
