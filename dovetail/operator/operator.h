// The composition root of `dovetail controller`: builds the Kubernetes clients, the cluster state
// and its informers, the cloud provider and every controller from Options, then runs them under
// leader election until asked to stop.
//
// Lifecycle: Create() connects nothing yet (it fails only on bad options or an unusable
// kubeconfig). Run() starts the informers, waits for the cluster state to sync, campaigns for the
// Lease (unless leader election is disabled), starts the controllers while leading and stops them
// when the Lease is lost, and returns after RequestStop() once everything has stopped. Losing the
// Lease closes the write gate at once, so no write happens after another replica may lead.
//
// Thread-safety: RequestStop() may be called from any thread (and from a signal handler through
// a flag the caller polls); everything else from one thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "dovetail/cloudprovider/cloud_provider.h"
#include "dovetail/common/clock.h"
#include "dovetail/common/work_in_progress.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/event_recorder.h"
#include "dovetail/kube/leader_election.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/kube/undecodable.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/metrics/server.h"
#include "dovetail/operator/aws.h"
#include "dovetail/operator/health.h"
#include "dovetail/operator/options.h"
#include "dovetail/scenario/pod_cache.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/cluster_informers.h"

namespace dovetail::op {

// Builds the controllers for `deps` (dovetail/operator/controllers.cc). With deps.metrics set,
// each controller calls the cloud provider through its own MeteredCloudProvider (the controller
// label of upstream's karpenter_cloudprovider_* metrics), kept in `metered_clouds`, which must
// outlive the controllers.
std::vector<std::unique_ptr<controllers::Controller>> BuildControllers(
    const controllers::Dependencies& deps, const Options& options,
    std::vector<std::unique_ptr<cloudprovider::CloudProvider>>& metered_clouds);

class Operator {
 public:
  // Errors: InvalidArgument for invalid options; the config loader's errors for the kubeconfig;
  // the cloud provider's errors (e.g. an unreadable catalog).
  static absl::StatusOr<std::unique_ptr<Operator>> Create(const Options& options);
  ~Operator();

  // Blocks until RequestStop(). Errors: DeadlineExceeded when the informers do not sync within
  // `sync_timeout` (the API server is unreachable or the CRDs are missing).
  absl::Status Run(absl::Duration sync_timeout = absl::Minutes(5));
  void RequestStop() { stop_.Notify(); }

  // For tests and logs.
  bool leading() const { return leading_.load(); }
  const std::vector<std::unique_ptr<controllers::Controller>>& controllers() const {
    return controllers_;
  }
  state::Cluster& cluster() { return *cluster_; }
  metrics::Registry& metrics() { return metrics_; }
  // The bound ports (after Run() started the endpoints); -1 when disabled.
  int metrics_port() const { return metrics_port_.load(); }
  int health_probe_port() const { return health_port_.load(); }

 private:
  explicit Operator(Options options) : options_(std::move(options)) {}
  void StartControllers();
  void StopControllers();
  // /metrics (and /disruption/explanations) on metrics_bind_address:METRICS_PORT, /healthz and
  // /readyz on every IPv4 interface at HEALTH_PROBE_PORT.
  //
  // A scrape makes no cloud provider call (an AWS call per scrape would let whoever reaches the
  // port spend the account's API rate): the /metrics handler runs CollectClusterStateMetrics (the
  // cluster state's counts) and Registry::Expose, whose scrape refreshers (Registry::OnScrape)
  // are metrics/process.cc's /proc reads, controllers/observability/state_metrics_controller.cc's
  // unsynced timer and controllers/launch/scheduler_metrics.cc's in-flight solve ages, none
  // of which holds the cloud provider. Gauges computed from it (the metrics.state and
  // cloudprovider.metrics controllers) are set on those controllers' own periods. A new
  // refresher must keep it so.
  absl::Status StartEndpoints();
  // What /healthz decides on (operator/health.h), gathered now.
  HealthInput GatherHealth() const;
  // At each /metrics scrape, on every replica: the cluster state's own gauges (cheap). The
  // per-cluster gauges are the leader's metrics.state controller's
  // (controllers/observability/state_metrics_controller.h).
  void CollectClusterStateMetrics();

  Options options_;
  RealClock clock_;
  metrics::Registry metrics_;
  metrics::HttpEndpoint metrics_endpoint_;
  metrics::HttpEndpoint health_endpoint_;
  std::atomic<int> metrics_port_{-1};
  std::atomic<int> health_port_{-1};
  std::atomic<bool> synced_{false};
  std::unique_ptr<kube::RestClient> rest_;
  kube::WriteGate gate_{&clock_};
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<kube::EventRecorder> events_;
  std::unique_ptr<state::Cluster> cluster_;
  kube::UndecodableReports undecodable_;  // shared by every informer
  scenario::PodCache pod_cache_;          // shared by provisioning and disruption
  std::unique_ptr<state::ClusterInformers> informers_;
  std::unique_ptr<AwsStack> aws_;  // --cloud-provider aws: the clients and the provider
  std::unique_ptr<cloudprovider::CloudProvider> cloud_;  // kwok
  std::unique_ptr<controllers::Dependencies> deps_;
  std::vector<std::unique_ptr<cloudprovider::CloudProvider>> metered_clouds_;  // per controller
  std::vector<std::unique_ptr<controllers::Controller>> controllers_;
  std::unique_ptr<kube::LeaderElector> elector_;
  absl::Notification stop_;
  std::atomic<bool> leading_{false};
  absl::Mutex mu_;  // serialises StartControllers / StopControllers
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  // StartControllers / StopControllers in flight (a controller's Stop that never returns is a
  // stuck unit of work too), reported to /healthz as the controller "operator".
  WorkInProgress controller_lifecycle_;
};

}  // namespace dovetail::op
