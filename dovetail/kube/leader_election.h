// Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics:
//  - a candidate takes the lease when it does not exist, is released (no holder), or has not
//    changed for leaseDurationSeconds as observed on the candidate's own clock (no reliance on
//    clocks agreeing across machines);
//  - the leader renews every retry_period; when no renewal succeeded for renew_deadline it stops
//    leading (renew_deadline < lease_duration, so it stops before anybody else may start);
//  - on Stop() a leader releases the lease so a successor takes over at once.
// Writers are fenced with a WriteGate: the gate is kept open only until the current renew
// deadline (last successful renewal + renew_deadline), so a leader that is partitioned, stalled
// or paused stops writing on time even if this elector's thread is stuck too.
// The elector must have its own RestClient (own token bucket and connections), so heavy traffic
// on the main client cannot starve renewals.
// With LeaderElectionConfig::metrics, leader_election_master_status{name=<lease name>} is 0 from
// construction, 1 from acquiring the lease until leading stops, then 0 again (client-go's
// leader metric as controller-runtime exports it).
// Thread-safe; callbacks run on the elector's thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/common/clock.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/metrics/registry.h"

namespace dovetail::kube {

struct LeaderElectionConfig {
  std::string lease_namespace = "kube-system";
  std::string lease_name = "karpenter-leader-election";
  std::string identity;  // unique per process, e.g. pod name + random suffix
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration renew_deadline = absl::Seconds(10);
  absl::Duration retry_period = absl::Seconds(2);
  metrics::Registry* metrics = nullptr;  // where to export leader_election_master_status
};

// What the elector believes, for health checks (client-go's leader-election healthz adaptor
// compares the same two facts with the lease duration).
struct LeaderStatus {
  // From a successful acquisition until the renew loop gives up or stops (the callbacks of
  // stopping run after this turns false).
  bool leading = false;
  // When the last successful acquisition or renewal began (on the elector's clock); InfinitePast
  // before the first.
  absl::Time last_renewal = absl::InfinitePast();
  absl::Duration lease_duration;
};

struct LeaderCallbacks {
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  std::function<void(const std::string& holder)> on_new_leader;  // observed holder changed
};

class LeaderElector {
 public:
  // `gate` (optional) is opened while leading and closed otherwise; `clock` must be the one the
  // gate was built with. Errors in the config (renew_deadline >= lease_duration) are clamped.
  LeaderElector(std::unique_ptr<RestClient> rest, LeaderElectionConfig config, const Clock& clock,
                WriteGate* gate, LeaderCallbacks callbacks);
  ~LeaderElector();

  void Start();
  // Stops campaigning; a leader stops leading (callbacks run) and releases the lease.
  void Stop();

  bool IsLeader() const;
  // Cheap; never waits for a renewal in flight.
  LeaderStatus Status() const;
  std::string observed_holder() const;

 private:
  void Run();
  bool TryAcquireOrRenew();
  void Release();
  void WaitOrStop(absl::Duration d);
  bool stopping() const;
  void SetMasterStatus(bool leading);

  std::unique_ptr<RestClient> rest_;
  Client client_;
  LeaderElectionConfig config_;
  const Clock& clock_;
  WriteGate* gate_;
  LeaderCallbacks callbacks_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool leader_ ABSL_GUARDED_BY(mu_) = false;
  std::string observed_holder_ ABSL_GUARDED_BY(mu_);
  // Written by the elector thread under mu_ (which reads it without).
  absl::Time last_renew_ = absl::InfinitePast();
  // Elector thread only.
  std::string observed_record_;
  absl::Time observed_time_;
  std::thread thread_;
};

}  // namespace dovetail::kube
