// The controllers `dovetail controller` runs, in start order (stopped in reverse).
#include <memory>
#include <string>
#include <vector>

#include "dovetail/controllers/disruption/disruption_controller.h"
#include "dovetail/controllers/nodeclaim/disruption_conditions_controller.h"
#include "dovetail/controllers/nodeclaim/expiration_controller.h"
#include "dovetail/controllers/nodeclaim/garbage_collection_controller.h"
#include "dovetail/controllers/nodeclaim/lifecycle_controller.h"
#include "dovetail/controllers/nodeclaim/pod_events_controller.h"
#include "dovetail/controllers/nodepool/hash_controller.h"
#include "dovetail/controllers/nodepool/status_controller.h"
#include "dovetail/controllers/observability/state_metrics_controller.h"
#include "dovetail/controllers/observability/status_condition_metrics_controller.h"
#include "dovetail/controllers/provisioning/provisioner.h"
#include "dovetail/controllers/termination/termination_controller.h"
#include "dovetail/operator/operator.h"

namespace dovetail::op {
namespace {

bool FeatureGate(const Options& options, const std::string& name) {
  auto it = options.feature_gates.find(name);
  return it != options.feature_gates.end() && it->second;
}

}  // namespace

std::vector<std::unique_ptr<controllers::Controller>> BuildControllers(
    const controllers::Dependencies& deps, const Options& options) {
  std::vector<std::unique_ptr<controllers::Controller>> out;
  out.push_back(std::make_unique<controllers::nodepool::HashController>(deps));
  controllers::nodepool::StatusOptions status;
  if (options.cloud_provider == "aws") {
    status.node_classes.push_back(
        {"karpenter.k8s.aws", "EC2NodeClass", &kube::resources::kEC2NodeClasses});
  }
  out.push_back(std::make_unique<controllers::nodepool::StatusController>(deps, status));
  out.push_back(std::make_unique<controllers::nodeclaim::LifecycleController>(deps));
  out.push_back(std::make_unique<controllers::nodeclaim::GarbageCollectionController>(deps));
  out.push_back(std::make_unique<controllers::nodeclaim::PodEventsController>(deps));
  out.push_back(std::make_unique<controllers::nodeclaim::DisruptionConditionsController>(deps));
  out.push_back(std::make_unique<controllers::nodeclaim::ExpirationController>(deps));
  out.push_back(std::make_unique<controllers::termination::TerminationController>(deps));
  controllers::provisioning::Options provisioning;
  provisioning.batch_idle_duration = options.batch_idle_duration;
  provisioning.batch_max_duration = options.batch_max_duration;
  provisioning.respect_preferences = options.preference_policy == "Respect";
  provisioning.min_values_strict = options.min_values_policy == "Strict";
  out.push_back(std::make_unique<controllers::provisioning::Provisioner>(deps, provisioning));
  controllers::disruption::ControllerOptions disruption;
  disruption.decisions.spot_to_spot = FeatureGate(options, "SpotToSpotConsolidation");
  disruption.decisions.respect_preferences = provisioning.respect_preferences;
  disruption.decisions.min_values_strict = provisioning.min_values_strict;
  disruption.queue.min_values_strict = provisioning.min_values_strict;
  out.push_back(std::make_unique<controllers::disruption::DisruptionController>(deps, disruption));
  // Upstream's DISABLE_CLUSTER_STATE_OBSERVABILITY turns off its pod, node and NodePool metrics;
  // here the per-cluster gauges.
  if (!options.disable_cluster_state_observability && deps.metrics != nullptr) {
    out.push_back(std::make_unique<controllers::observability::StateMetricsController>(deps));
    // operatorpkg's status controllers (upstream registers them under the same option, but for
    // the AWS provider's EC2NodeClass one, which it always runs).
    out.push_back(std::make_unique<controllers::observability::StatusConditionMetricsController>(
        deps, controllers::observability::StatusConditionMetricsOptions{
                  .ec2_node_classes = options.cloud_provider == "aws"}));
  }
  return out;
}

}  // namespace dovetail::op
