// The interruption controller (reference §2.14.8): long-polls the SQS queue that EventBridge rules
// feed (INTERRUPTION_QUEUE), parses every message (interruption_messages.h), finds the NodeClaims
// of the instances it names through the cluster state (provider id aws:///<zone>/<instance-id>),
// acts as actions.h says (delete the NodeClaim through the graceful termination path, mark the
// interrupted spot offering unavailable, record events; optionally taint on rebalance) and then
// deletes the message. Malformed and foreign messages are logged and deleted; messages for
// instances Dovetail does not manage are deleted without action. Handling is idempotent: SQS
// delivers at least once, and a NodeClaim already deleting or gone is fine.
//
// An AWS error (queue lookup, receive) never stops the loop: it waits with exponential backoff
// (1 s doubling to 1 min) and tries again; a failed handling leaves the message in the queue, so
// it comes back after its visibility timeout.
//
// Metrics (upstream's names): karpenter_interruption_received_messages_total{message_type},
// karpenter_interruption_deleted_messages_total,
// karpenter_interruption_message_queue_duration_seconds.
//
// Thread-safety: Start/Stop from one thread; the loop runs on a thread of its own.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/controllers/controller.h"
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
};

class InterruptionController final : public controllers::Controller {
 public:
  // `unavailable` may be null (no ICE marking). Everything must outlive this object.
  InterruptionController(const controllers::Dependencies& deps, SqsClient& sqs,
                         UnavailableOfferings* unavailable, ControllerOptions options);
  ~InterruptionController() override;

  std::string_view Name() const override { return "interruption"; }
  void Start() override;
  void Stop() override;

  // One message: parse, act, and report whether it may be deleted (true unless acting failed on
  // an API error). Public for tests.
  bool Handle(const SqsMessage& message);

 private:
  void Loop();
  // Waits `d` or until Stop(); returns false when stopping.
  bool Wait(absl::Duration d);
  absl::Status ActOn(const InterruptionMessage& message, const std::string& instance_id,
                     const state::StateNode& node);
  std::string RebalancePolicy(const std::string& node_pool);
  absl::Status TaintNode(const std::string& node_name);

  const controllers::Dependencies deps_;
  SqsClient& sqs_;
  UnavailableOfferings* const unavailable_;
  const ControllerOptions options_;
  std::string queue_url_;  // loop thread only

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::unique_ptr<std::thread> thread_;
};

}  // namespace dovetail::providers::aws::interruption
