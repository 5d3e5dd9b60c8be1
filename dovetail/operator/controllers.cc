// The controllers `dovetail controller` runs, in start order (stopped in reverse).
#include <memory>
#include <string>
#include <vector>

#include "dovetail/cloudprovider/metered_cloud_provider.h"
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
    const controllers::Dependencies& shared, const Options& options,
    std::vector<std::unique_ptr<cloudprovider::CloudProvider>>& metered_clouds) {
  // The dependencies of the controller named `name` (upstream's controller names).
  auto with_cloud_of = [&](const char* name) {
    if (shared.metrics == nullptr) return shared;
    metered_clouds.push_back(
        std::make_unique<cloudprovider::MeteredCloudProvider>(shared.cloud, *shared.metrics, name));
    return controllers::Dependencies{shared.client,          shared.cluster,     shared.informers,
                                     *metered_clouds.back(), shared.clock,       shared.events,
                                     shared.metrics,         shared.undecodable, shared.pod_cache};
  };
  const controllers::Dependencies& deps = shared;
  std::vector<std::unique_ptr<controllers::Controller>> out;
  out.push_back(std::make_unique<controllers::nodepool::HashController>(deps));
  controllers::nodepool::StatusOptions status;
  status.export_metrics = !options.disable_cluster_state_observability;
  if (options.cloud_provider == "aws") {
    status.node_classes.push_back(
        {"karpenter.k8s.aws", "EC2NodeClass", &kube::resources::kEC2NodeClasses});
  }
  out.push_back(std::make_unique<controllers::nodepool::StatusController>(
      with_cloud_of("nodepool.status"), status));
  out.push_back(std::make_unique<controllers::nodeclaim::LifecycleController>(
      with_cloud_of("nodeclaim.lifecycle")));
  out.push_back(std::make_unique<controllers::nodeclaim::GarbageCollectionController>(
      with_cloud_of("nodeclaim.garbagecollection")));
  out.push_back(std::make_unique<controllers::nodeclaim::PodEventsController>(deps));
  out.push_back(std::make_unique<controllers::nodeclaim::DisruptionConditionsController>(
      with_cloud_of("nodeclaim.disruption")));
  out.push_back(std::make_unique<controllers::nodeclaim::ExpirationController>(deps));
  out.push_back(std::make_unique<controllers::termination::TerminationController>(
      with_cloud_of("node.termination")));
  controllers::provisioning::Options provisioning;
  provisioning.batch_idle_duration = options.batch_idle_duration;
  provisioning.batch_max_duration = options.batch_max_duration;
  provisioning.respect_preferences = options.preference_policy == "Respect";
  provisioning.min_values_strict = options.min_values_policy == "Strict";
  out.push_back(std::make_unique<controllers::provisioning::Provisioner>(
      with_cloud_of("provisioner"), provisioning));
  controllers::disruption::ControllerOptions disruption;
  disruption.decisions.spot_to_spot = FeatureGate(options, "SpotToSpotConsolidation");
  disruption.decisions.respect_preferences = provisioning.respect_preferences;
  disruption.decisions.min_values_strict = provisioning.min_values_strict;
  disruption.queue.min_values_strict = provisioning.min_values_strict;
  out.push_back(std::make_unique<controllers::disruption::DisruptionController>(
      with_cloud_of("disruption"), disruption));
  // Upstream's DISABLE_CLUSTER_STATE_OBSERVABILITY turns off its pod, node and NodePool metrics;
  // here the per-cluster gauges.
  if (!options.disable_cluster_state_observability && deps.metrics != nullptr) {
    out.push_back(std::make_unique<controllers::observability::StateMetricsController>(
        with_cloud_of("metrics.state")));
    // operatorpkg's status controllers (upstream registers them under the same option, but for
    // the AWS provider's EC2NodeClass one, which it always runs).
    out.push_back(std::make_unique<controllers::observability::StatusConditionMetricsController>(
        deps, controllers::observability::StatusConditionMetricsOptions{
                  .ec2_node_classes = options.cloud_provider == "aws"}));
  }
  return out;
}

}  // namespace dovetail::op
