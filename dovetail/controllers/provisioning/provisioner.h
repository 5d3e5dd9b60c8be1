// Provisioner: the provisioning controller (upstream's provisioner + pod trigger;
// docs/provisioning.md). Turns pods the kube-scheduler could not place into NodeClaims.
//
// Trigger: handlers on the shared pod and node informers (registered in the constructor) trigger
// the Batcher for every provisionable pod (pod_filter.h) and every node tainted
// karpenter.sh/disrupted:NoSchedule (its pods need room elsewhere); every `requeue` the stores are
// scanned again so pods that are still pending are retried. When a batch window closes (idle 1 s /
// max 10 s), one pass runs (RunOnce), one pass at a time:
//   1. wait for cluster state to be synced (informers listed, no NodeClaim without provider id);
//   2. read the scenario (scenario/from_cluster.h): the state's nodes BEFORE the pending pods,
//      the NodePools with their instance types, DaemonSets and namespace labels from the shared
//      informers (deps.informers);
//   3. build the solver input (scenario/solver_input.h, the one disruption and `explain` use):
//      pending pods minus ignored ones (FailedScheduling event with the reason, silent for
//      `karpenter.sh/nodepool DoesNotExist`), plus the reschedulable pods of nodes marked for
//      deletion or deleting;
//   4-5. NodePools: not deleting, not static, not Ready=False (Ready=True required when
//      Options::require_ready_node_pools), each with the instance types that intersect its
//      requirements and have an available compatible offering (none: a Warning
//      NoCompatibleInstanceTypes event on the NodePool, which is skipped), and its remaining
//      limits (limits − state usage, which counts in-flight NodeClaims); DaemonSets as the pods
//      they run on a new node; namespace labels (for namespaceSelector terms);
//   6. solve (solver::Solve, no LP bound);
//   7. create the planned NodeClaims (node_claim_builder.h); each created claim goes into the
//      cluster state at once (so the next pass sees it as capacity and waits for its launch) and
//      is nominated; its pods get a `Nominated` event. Pods placed on existing or in-flight nodes
//      nominate those nodes and get a `Nominated` event; pods that cannot be placed get a Warning
//      `FailedScheduling` event with the solver's reason. Before each create, the pool's current
//      usage is checked against its limits (upstream's re-check).
//
// Metrics (when Dependencies::metrics is set): karpenter_nodeclaims_created_total{reason=
// "provisioned", nodepool, min_values_relaxed} and the scheduler's families with controller
// "provisioner" (scheduler_metrics.h); each pass acks its pods and records its decisions in the
// cluster state's PodSchedulingTimes (for the pod metrics). Logs: "found provisionable
// pod(s)", "computed new nodeclaim(s) to fit pod(s)", "created nodeclaim", and failures.
//
// Thread-safety: Start/Stop from one thread; RunOnce may be called from any thread (passes are
// serialised); stats() from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/apis/core/namespace.h"
#include "dovetail/apis/core/workloads.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/common/work_in_progress.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/launch/decision_id.h"
#include "dovetail/controllers/launch/on_demand_base.h"
#include "dovetail/controllers/launch/scheduler_metrics.h"
#include "dovetail/controllers/provisioning/batcher.h"
#include "dovetail/kube/handler_registration.h"
#include "dovetail/kube/informer.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/scenario/scenario.h"
#include "dovetail/scenario/solver_input.h"
#include "dovetail/solver/solver.h"
#include "dovetail/state/snapshot.h"

namespace dovetail::controllers::provisioning {

struct Options {
  absl::Duration batch_idle_duration = absl::Seconds(1);  // BATCH_IDLE_DURATION
  absl::Duration batch_max_duration = absl::Seconds(10);  // BATCH_MAX_DURATION
  // How long a node the pass relies on stays nominated; zero: max(2 × batch_max, 10 s).
  absl::Duration nomination_duration = absl::ZeroDuration();
  // Pending pods are re-triggered this often while they stay provisionable.
  absl::Duration requeue = absl::Seconds(10);
  bool respect_preferences = true;  // PREFERENCE_POLICY=Respect
  bool min_values_strict = true;    // MIN_VALUES_POLICY=Strict
  size_t max_instance_types = 600;
  // Only NodePools with Ready=True (needs the nodepool readiness controller); when false, pools
  // without a Ready condition are used and only Ready=False/Unknown pools are skipped.
  bool require_ready_node_pools = false;
};

// Counters for tests and, later, metrics. Monotonic except `last_*`.
struct Stats {
  int64_t passes = 0;
  int64_t pods_considered = 0;  // pending pods given to the solver
  int64_t pods_ignored = 0;
  int64_t pods_reschedulable = 0;  // pods of deleting nodes included in passes
  int64_t pods_nominated = 0;      // to existing/in-flight nodes or new NodeClaims
  int64_t pods_unschedulable = 0;
  int64_t node_claims_created = 0;
  int64_t node_claim_create_errors = 0;
  int64_t limit_rejections = 0;  // claims not created because the pool's limits were exceeded
  int64_t last_pass_pods = 0;    // pending pods of the latest pass
  std::string last_error;
};

struct PassResult {
  std::vector<std::string> created;  // NodeClaim names
  int pods = 0;
  int unschedulable = 0;
  std::string decision_id;  // empty when the pass had no pending pod
};

class Provisioner : public Controller {
 public:
  using NodePoolInformer = state::ClusterInformers::NodePoolInformer;
  using DaemonSetInformer = state::ClusterInformers::DaemonSetInformer;
  using NamespaceInformer = state::ClusterInformers::NamespaceInformer;

  // Registers the pod handler on deps.informers; `deps` must outlive this object.
  explicit Provisioner(const Dependencies& deps, Options options = {});
  ~Provisioner() override;
  Provisioner(const Provisioner&) = delete;
  Provisioner& operator=(const Provisioner&) = delete;

  std::string_view Name() const override { return "provisioner"; }
  // Starts the batching loop.
  void Start() override;
  void Stop() override;
  // When the loop's pass in flight began; nullopt between passes.
  std::optional<absl::Time> OldestWorkStart() const override { return pass_work_.OldestStart(); }

  // One provisioning pass now (no batching). Errors: Unavailable while the cluster state or the
  // provisioner's informers have not synced; errors of the solver's input.
  absl::StatusOr<PassResult> RunOnce();

  // Step 2 of a pass, shared with `dovetail explain pod`: the scenario read from the cluster
  // state and the provisioner's informers. Errors: Unavailable while they have not synced.
  absl::StatusOr<scenario::Scenario> ReadScenario();
  // Step 3's options: the provisioner's NodePool readiness rule and solver options (no LP bound).
  scenario::InputOptions InputOptions() const;

  // Waits for the shared NodePool, DaemonSet and Namespace informers it reads to list (tests that
  // drive RunOnce; deps.informers must have been started).
  bool WaitForInformers(absl::Time deadline);

  Batcher& batcher() { return *batcher_; }
  NodePoolInformer& node_pools() { return node_pools_; }
  Stats stats() const;

 private:
  void Loop();
  void TriggerPending();
  absl::StatusOr<PassResult> RunOnceLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(pass_mu_);
  // The pass's steps (the numbers of the list above).
  // 3. The question's pods: ignored-pod events, metrics, scheduling-time acks and stats.
  void ReportPods(const scenario::SolverQuestion& question) ABSL_EXCLUSIVE_LOCKS_REQUIRED(pass_mu_);
  // 4-5. The question's NodePools: errors and events of the skipped ones, and the on-demand bases
  //    of the used ones (an invalid base is reported and ignored; the pool is still used).
  absl::flat_hash_map<std::string, launch::OnDemandBase> ReportNodePools(
      const scenario::Scenario& scenario, const scenario::SolverQuestion& question);
  // 6. solver::Solve, with the scheduler's metrics around it.
  absl::StatusOr<solver::Plan> SolvePass(const solver::Input& input,
                                         const std::vector<scenario::SharedPod>& pending,
                                         const std::string& decision);
  // The on-demand base (on_demand_base.h): the first new NodeClaims of a pool below its base are
  // narrowed to on-demand; the counts include in-flight NodeClaims (created into state at once).
  void NarrowToOnDemandBase(
      const absl::flat_hash_map<std::string, launch::OnDemandBase>& on_demand_bases,
      const state::Snapshot& snapshot, solver::Plan& plan);
  // How long a nominated node stays reserved for its pods.
  absl::Duration NominationDuration() const;
  // 7. A planned NodeClaim accepted for creation, and the API's reply once sent.
  struct ClaimToCreate {
    const solver::NewNodeClaim* planned;
    std::shared_ptr<const apis::v1::NodePool> pool;
    apis::v1::NodeClaim claim;
    absl::StatusOr<std::string> response = absl::UnknownError("not sent");
  };
  struct PassCounts {
    int64_t nominated = 0, created = 0, create_errors = 0, limit_rejections = 0;
  };
  // Limits are checked in plan order against the pool's usage plus the claims accepted before (an
  // unlaunched claim counts its requests, as in the cluster state); each accepted claim is built
  // (node_claim_builder.h) with the pass's decision ID.
  // The pools are read from the informer as they are (not defaulted: the NodeClaim's hash
  // annotation is computed on the stored object).
  std::vector<ClaimToCreate> AcceptWithinLimits(const solver::Plan& plan,
                                                const std::string& decision,
                                                int64_t* limit_rejections);
  // Creates the accepted claims concurrently (each create is an API round trip).
  void SendCreates(std::vector<ClaimToCreate>& to_create);
  // In plan order: each created claim into the cluster state at once and nominated, logged and
  // counted; then its pods' Nominated events (after every NodeClaim exists).
  void RecordCreates(const std::vector<ClaimToCreate>& to_create, const std::string& decision,
                     PassCounts* counts, PassResult* result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(pass_mu_);
  // Existing and in-flight nodes the plan uses are nominated; their pods get Nominated events.
  void NominateExisting(const solver::Plan& plan, const state::Snapshot& snapshot,
                        const std::string& decision, int64_t* nominated)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(pass_mu_);
  // Pods that fit nowhere get a FailedScheduling event with the solver's reason.
  void ReportUnschedulable(const solver::Plan& plan, const std::string& decision)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(pass_mu_);
  // Records the plan's decisions in the cluster state's PodSchedulingTimes.
  void RecordDecisions(const solver::Plan& plan);
  void RecordPodEvent(const apis::core::Pod& pod, std::string_view type, std::string_view reason,
                      std::string_view action, std::string_view note);
  void AddError(const absl::Status& status);
  // The decision ID of a pod's event: the ID of the pass that first gave this pod this (reason,
  // note), so that a repeated outcome keeps its ID and its event deduplicates.
  std::string EventDecision(const apis::core::Pod& pod, std::string_view reason,
                            std::string_view note, const std::string& pass_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(pass_mu_);

  Dependencies deps_;
  const Options options_;
  // Shared with the pod and node handlers.
  std::shared_ptr<Batcher> batcher_;
  // The shared informers (deps.informers).
  NodePoolInformer& node_pools_;
  DaemonSetInformer& daemon_sets_;
  NamespaceInformer& namespaces_;  // labels for pod (anti-)affinity namespaceSelector terms

  // Upstream's metrics, when deps.metrics is set.
  metrics::Counter* node_claims_created_metric_ = nullptr;
  launch::SchedulerMetrics scheduler_metrics_;

  absl::Mutex pass_mu_;  // serialises passes
  // The solver's pods, converted once per pod version (scenario/pod_cache.h): deps.pod_cache,
  // else own_pods_.
  scenario::PodCache own_pods_;
  scenario::PodCache* pods_ = nullptr;
  launch::DecisionIds decision_ids_{launch::DecisionStream::kProvisioning};
  struct EventDecisionEntry {
    std::string key;  // reason + "\n" + note
    std::string id;
    int64_t pass = 0;  // the last pass that used it
  };
  absl::flat_hash_map<std::string, EventDecisionEntry> event_decisions_ ABSL_GUARDED_BY(pass_mu_);
  int64_t pass_number_ ABSL_GUARDED_BY(pass_mu_) = 0;
  mutable absl::Mutex stats_mu_;
  Stats stats_ ABSL_GUARDED_BY(stats_mu_);

  std::atomic<bool> running_{false};
  WorkInProgress pass_work_;  // the loop's pass in flight
  std::thread thread_;
  // After everything its handlers touch, so removed (each waiting for its handler's call in
  // progress) before any of it is destroyed.
  std::vector<kube::HandlerRegistration> registrations_;
};

}  // namespace dovetail::controllers::provisioning
