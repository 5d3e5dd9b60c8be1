// The interruption controller (docs/aws.md): long-polls the SQS queue that EventBridge rules
// feed (INTERRUPTION_QUEUE), parses every message (interruption_messages.h), finds the NodeClaims
// of the instances it names through the cluster state (provider id aws:///<zone>/<instance-id>),
// acts as actions.h says and then deletes the message.
//
// Acting: events first; for a spot warning the interrupted spot offering is marked unavailable
// before anything else, so that replacements avoid it; then, with a Replacer (the disruption
// controller's), spot warnings and Health scheduled changes replace first (replacements launched,
// the NodeClaim deleted when they are Initialized or at a deadline before the instance goes), and
// an opted-in rebalance recommendation pre-launches a replacement; a Replacer error (other than
// NotFound: the NodeClaim is gone) falls back to deleting the NodeClaim at once through the
// graceful termination path, which is also what happens without a Replacer and for instances
// already stopping or terminating. karpenter_nodeclaims_disrupted_total{reason=<message kind>}
// counts the NodeClaims deleted here; those the Replacer deletes are counted by its queue.
//
// Durability: before it asks the Replacer (and so before the message is deleted) the controller
// records the request on the NodeClaim (involuntary_record.h: the annotation
// dovetail.sh/involuntary-disruption, merged with an earlier record); a record that cannot be
// written leaves the message in the queue. When the loop starts (this process became the leader,
// or restarted after a crash), every recorded command of a NodeClaim not being deleted is resumed
// before the first receive: replace first while its deadline is ahead, otherwise (or when that
// fails) delete the NodeClaim, which drains it; failed deletions are retried every round.
//
// Malformed and foreign messages are logged and deleted; messages for instances Dovetail does not
// manage are deleted without action. Handling is idempotent: SQS delivers at least once; a
// NodeClaim already deleting or gone is fine, and the Replacer updates the command it already
// holds for a node (a spot warning after a rebalance pre-launch upgrades it).
//
// The messages of one receive are handled by up to `workers` threads at once (upstream: 10); each
// message is deleted after its own handling. An AWS error (queue lookup, receive) never stops the
// loop: it waits with exponential backoff (1 s doubling to 1 min) and tries again; a failed
// handling leaves the message in the queue, so it comes back after its visibility timeout.
//
// Metrics (upstream's names): karpenter_interruption_received_messages_total{message_type},
// karpenter_interruption_deleted_messages_total,
// karpenter_interruption_message_queue_duration_seconds,
// karpenter_nodeclaims_disrupted_total{reason,nodepool,capacity_type}.
//
// Thread-safety: Start/Stop from one thread; the loop runs on a thread of its own. Handle may run
// on several threads at once; the Replacer must be thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/common/work_in_progress.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/controllers/disruption/replacer.h"
#include "dovetail/providers/aws/interruption/actions.h"
#include "dovetail/providers/aws/interruption_messages.h"
#include "dovetail/providers/aws/sqs_client.h"
#include "dovetail/providers/aws/unavailable_offerings.h"
#include "dovetail/state/state_node.h"

namespace dovetail::providers::aws::interruption {

struct ControllerOptions {
  std::string queue_name;  // INTERRUPTION_QUEUE (a name, as upstream)
  SqsReceiveOptions receive;
  absl::Duration min_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Minutes(1);
  // A spot NodeClaim is deleted (drained) at the latest this long before EC2 reclaims the
  // instance (event time + 2 min), even if its replacements are not Initialized yet; also the
  // margin before a Health event's start. 45 s: the default terminationGracePeriodSeconds of a
  // pod (30 s) plus 15 s for the eviction round trips and the termination controller's pass, which
  // still gives the replacements 75 s from the warning, about what a launch and join take.
  absl::Duration drain_reserve = absl::Seconds(45);
  // A Health scheduled change replaces first for at most this long (the window usually starts
  // days later; a replacement that cannot start within it is not worth holding the node for).
  absl::Duration scheduled_change_max_wait = absl::Minutes(10);
  int workers = 10;  // messages of one receive handled at once
};

class InterruptionController final : public controllers::Controller {
 public:
  // `unavailable` may be null (no ICE marking); `replacer` may be null (delete at once, as
  // upstream). Everything must outlive this object.
  InterruptionController(const controllers::Dependencies& deps, SqsClient& sqs,
                         UnavailableOfferings* unavailable,
                         controllers::disruption::Replacer* replacer, ControllerOptions options);
  // Without a Replacer.
  InterruptionController(const controllers::Dependencies& deps, SqsClient& sqs,
                         UnavailableOfferings* unavailable, ControllerOptions options)
      : InterruptionController(deps, sqs, unavailable, nullptr, std::move(options)) {}
  ~InterruptionController() override;

  std::string_view Name() const override { return "interruption"; }
  void Start() override;
  void Stop() override;
  // When the oldest message handling in progress began (Process); nullopt when none runs.
  std::optional<absl::Time> OldestWorkStart() const override { return handling_.OldestStart(); }

  // One message: parse, act, and report whether it may be deleted (true unless acting failed on
  // an API error). Public for tests.
  bool Handle(const SqsMessage& message);

 private:
  void Loop();
  // Handle, then delete the message when it may be deleted.
  void Process(const SqsMessage& message);
  // Waits `d` or until Stop(); returns false when stopping.
  bool Wait(absl::Duration d);
  absl::Status ActOn(const InterruptionMessage& message, absl::Time received,
                     const std::string& instance_id, const state::StateNode& node);
  absl::Status DeleteNodeClaim(const InterruptionMessage& message, const state::StateNode& node);
  // Writes (merging with what is there) the involuntary command record on the NodeClaim
  // (involuntary_record.h). Errors: NotFound (the NodeClaim is gone), API errors.
  absl::Status RecordCommand(const controllers::disruption::ReplaceRequest& request);
  // Resumes every command recorded on a NodeClaim that is not being deleted: replace first while
  // its deadline is ahead (with a Replacer and a Node), else, or when that fails, delete the
  // NodeClaim. Returns false when a deletion failed (the caller tries again).
  bool ResumeRecordedCommands();
  RebalanceSettings RebalanceSettingsOf(const std::string& node_pool);
  absl::Status TaintNode(const std::string& node_name);

  const controllers::Dependencies deps_;
  SqsClient& sqs_;
  UnavailableOfferings* const unavailable_;
  controllers::disruption::Replacer* const replacer_;
  const ControllerOptions options_;
  std::string queue_url_;  // loop thread only

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::unique_ptr<std::thread> thread_;
  WorkInProgress handling_;  // the messages being processed
};

}  // namespace dovetail::providers::aws::interruption
