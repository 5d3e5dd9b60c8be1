#include "dovetail/providers/aws/interruption/instance_status_controller.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/log.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/resource.h"
#include "dovetail/providers/aws/errors.h"
#include "dovetail/providers/aws/interruption/node_claim_actions.h"
#include "nlohmann/json.hpp"

namespace dovetail::providers::aws::interruption {
namespace {

constexpr std::string_view kInstanceStatusLogger = "interruption.instancestatus";
constexpr char kPollKey[] = "instancestatus";

}  // namespace

metrics::Counter& InstanceStatusUnhealthyCounter(metrics::Registry& registry) {
  // Upstream's help text (test/testdata/upstream-metrics.json).
  return registry.NewCounter("karpenter_interruption_instance_status_unhealthy_total",
                             "Count of unique unhealthy instance statuses detected from EC2 "
                             "DescribeInstanceStatus. Broken down by status check category.",
                             {"category"});
}

InstanceStatusController::InstanceStatusController(const controllers::Dependencies& deps,
                                                   Ec2Client& ec2, InstanceStatusOptions options)
    : deps_(deps),
      ec2_(ec2),
      options_(options),
      unhealthy_(deps.metrics != nullptr ? &InstanceStatusUnhealthyCounter(*deps.metrics)
                                         : nullptr),
      queue_(kube::WorkQueueOptions{}.WithMetrics(Name(), deps.metrics), /*workers=*/1,
             [this](const std::string&) { return Poll(); }) {
  NodeClaimsDisruptedCounter(deps_.metrics);
}

InstanceStatusController::~InstanceStatusController() { Stop(); }

void InstanceStatusController::Start() {
  queue_.Start([](kube::WorkQueue& queue) { queue.Add(kPollKey); });
}

void InstanceStatusController::Stop() { queue_.Stop(); }

absl::StatusOr<kube::ReconcileResult> InstanceStatusController::Poll() {
  absl::MutexLock lock(&poll_mu_);
  std::vector<Ec2InstanceStatus> statuses;
  for (const std::vector<Filter>& filters : InstanceStatusFilterSets()) {
    absl::StatusOr<std::vector<Ec2InstanceStatus>> page = ec2_.DescribeInstanceStatus(filters);
    if (!page.ok()) {
      if (AwsErrorCode(page.status()) == "UnauthorizedOperation") {
        log::Error(kInstanceStatusLogger,
                   "ec2:DescribeInstanceStatus is not allowed; instance status checks are off "
                   "until the IAM policy allows it and the controller restarts",
                   {{"error", page.status().ToString()}});
        return kube::ReconcileResult{};  // no requeue: polling ends
      }
      log::Error(kInstanceStatusLogger, "describing EC2 instance statuses",
                 {{"error", page.status().ToString()}});
      return page.status();
    }
    for (Ec2InstanceStatus& s : *page) statuses.push_back(std::move(s));
  }
  const absl::Time now = deps_.clock.Now();
  const std::vector<UnhealthyInstance> unhealthy = UnhealthyInstances(statuses, now);
  const std::map<std::string, state::StateNode> by_instance =
      unhealthy.empty() ? std::map<std::string, state::StateNode>{}
                        : ManagedNodesByInstanceId(deps_.cluster);
  std::set<UnhealthySeen::Key> reported;
  absl::Status error;
  for (const UnhealthyInstance& instance : unhealthy) {
    auto it = by_instance.find(instance.instance_id);
    if (it == by_instance.end()) {
      log::Debug(kInstanceStatusLogger, "no NodeClaim for the unhealthy instance",
                 {{"instanceId", instance.instance_id}});
      continue;
    }
    for (StatusCategory category : instance.Categories()) {
      const CategoryAction action = ActionForCategory(category);
      if (!action.act) continue;
      if (absl::Status s = Act(it->second, action, instance.instance_id, now); !s.ok()) {
        log::Error(kInstanceStatusLogger, "cannot act on an unhealthy instance",
                   {{"instanceId", instance.instance_id},
                    {"kind", std::string(action.kind)},
                    {"error", s.ToString()}});
        error.Update(s);
        break;  // its other categories wait for the retry, as upstream
      }
      reported.insert({instance.instance_id, category});
    }
  }
  for (const UnhealthySeen::Key& key : seen_.Poll(std::move(reported))) {
    const std::string category(StatusCategoryName(key.second));
    log::Info(kInstanceStatusLogger, "detected unhealthy instance owned by cluster",
              {{"instanceId", key.first}, {"category", category}});
    if (unhealthy_ != nullptr) unhealthy_->Inc({category});
  }
  if (!error.ok()) return error;
  return kube::ReconcileResult{.requeue_after = options_.interval};
}

absl::Status InstanceStatusController::Act(const state::StateNode& node,
                                           const CategoryAction& action,
                                           const std::string& instance_id, absl::Time now) {
  log::Info(kInstanceStatusLogger, "unhealthy instance",
            {{"kind", std::string(action.kind)},
             {"instanceId", instance_id},
             {"nodeClaim", node.node_claim->metadata.name},
             {"node", node.node != nullptr ? node.Name() : std::string()},
             {"action", action.forceful ? "ForcefulTermination" : "CordonAndDrain"},
             {"alreadyDeleting", node.Deleting() ? "true" : "false"}});
  RecordInterruptionEvent(deps_.events, node, kUnhealthyEventReason, kUnhealthyEventMessage);
  if (action.forceful) {
    if (absl::Status s = AnnotateTerminationTimestamp(node, now); !s.ok()) return s;
  }
  return DeleteInterruptedNodeClaim(deps_, node, action.kind, kInstanceStatusLogger);
}

absl::Status InstanceStatusController::AnnotateTerminationTimestamp(const state::StateNode& node,
                                                                    absl::Time now) {
  const apis::v1::NodeClaim& claim = *node.node_claim;
  if (claim.metadata.annotations.contains(apis::v1::kNodeClaimTerminationTimestampAnnotationKey)) {
    return absl::OkStatus();
  }
  // A merge patch of the one key, without a resourceVersion: nothing else is overwritten.
  const nlohmann::json patch = {
      {"metadata",
       {{"annotations",
         {{std::string(apis::v1::kNodeClaimTerminationTimestampAnnotationKey),
           absl::FormatTime(absl::RFC3339_sec, now, absl::UTCTimeZone())}}}}}};
  absl::StatusOr<std::string> patched = deps_.client.Patch(
      kube::resources::kNodeClaims, "", claim.metadata.name, kube::PatchType::kMerge, patch.dump());
  if (!patched.ok() && !kube::IsNotFound(patched.status())) return patched.status();
  return absl::OkStatus();
}

}  // namespace dovetail::providers::aws::interruption
