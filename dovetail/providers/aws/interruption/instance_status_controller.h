// The interruption.instancestatus controller (upstream: karpenter-provider-aws v1.14.1,
// pkg/controllers/interruption/instancestatus_controller.go; always on for the AWS provider,
// with or without an interruption queue): every minute it asks EC2 DescribeInstanceStatus for
// impaired instance checks, impaired system checks and scheduled events (three calls, every
// page), keeps the instances instance_status.h counts as unhealthy, finds their NodeClaims in the
// cluster state by provider id and, per category:
//   InstanceStatus, SystemStatus  annotate karpenter.sh/nodeclaim-termination-timestamp = now
//                                 (when absent, even on a NodeClaim already deleting) and delete
//                                 the NodeClaim: the termination controller then stops waiting
//                                 for a graceful drain;
//   EventStatus                   delete the NodeClaim (the graceful termination path);
//   EBSStatus                     nothing.
// Each with the InstanceUnhealthy event on the NodeClaim and its Node, and
// karpenter_nodeclaims_disrupted_total{reason=instance_status|system_status|event_status} +1 per
// NodeClaim this deletes (node_claim_actions.h). Instances without a NodeClaim are ignored.
//
// karpenter_interruption_instance_status_unhealthy_total{category} counts each (instance,
// category) that was acted on once while it stays reported; a pair missing from a poll is
// forgotten, so a recurrence counts again (instance_status.h UnhealthySeen).
//
// Errors: UnauthorizedOperation (the role lacks ec2:DescribeInstanceStatus) is logged and ends the
// polling until the controller is started again (upstream: until a restart). Any other EC2 error,
// or an API error acting on a NodeClaim, retries with the work queue's backoff (5 ms doubling to
// 1000 s, controller-runtime's); a poll that succeeds comes back after the interval.
//
// Thread-safety: controllers/controller.h (leader only; Start/Stop from one thread); polls run on
// one worker thread. Poll() is public for tests and serialised with the worker's.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/reconcile_queue.h"
#include "dovetail/kube/workqueue.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/providers/aws/ec2_client.h"
#include "dovetail/providers/aws/interruption/instance_status.h"
#include "dovetail/state/state_node.h"

namespace dovetail::providers::aws::interruption {

struct InstanceStatusOptions {
  absl::Duration interval = kInstanceStatusInterval;
};

// karpenter_interruption_instance_status_unhealthy_total{category}, registered (or found) in
// `registry`.
metrics::Counter& InstanceStatusUnhealthyCounter(metrics::Registry& registry);

class InstanceStatusController final : public controllers::Controller {
 public:
  // `deps` and `ec2` must outlive this object.
  InstanceStatusController(const controllers::Dependencies& deps, Ec2Client& ec2,
                           InstanceStatusOptions options = {});
  ~InstanceStatusController() override;

  std::string_view Name() const override { return "interruption.instancestatus"; }
  void Start() override;
  void Stop() override;
  // When the oldest reconcile in progress began (the work queue's); nullopt when stopped.
  std::optional<absl::Time> OldestWorkStart() const override {
    return queue_.OldestProcessingStart();
  }

  // One poll, as the worker runs it: the next requeue (the interval), none (polling ends: EC2
  // said UnauthorizedOperation), or the error to retry with backoff.
  absl::StatusOr<kube::ReconcileResult> Poll();

 private:
  absl::Status Act(const state::StateNode& node, const CategoryAction& action,
                   const std::string& instance_id, absl::Time now);
  absl::Status AnnotateTerminationTimestamp(const state::StateNode& node, absl::Time now);

  const controllers::Dependencies deps_;
  Ec2Client& ec2_;
  const InstanceStatusOptions options_;
  metrics::Counter* const unhealthy_;  // null without a registry

  absl::Mutex poll_mu_;
  UnhealthySeen seen_ ABSL_GUARDED_BY(poll_mu_);

  // Last: destroyed (stopped) before the members its reconciles use.
  controllers::ReconcileQueue queue_;
};

}  // namespace dovetail::providers::aws::interruption
