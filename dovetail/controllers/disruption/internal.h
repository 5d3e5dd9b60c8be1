// Helpers shared by the disruption sources (candidates, methods, validation): eviction costs of
// the informers' PodInfo (the pod predicates are state/pod_predicates.h), offering prices and the
// consolidation computation that both the methods and ValidateCommand run. Internal to
// dovetail/controllers/disruption.
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dovetail/cloudprovider/instance_type.h"
#include "dovetail/controllers/disruption/disruption.h"
#include "dovetail/scheduling/requirements.h"
#include "dovetail/state/state_node.h"

namespace dovetail::controllers::disruption::internal {

inline constexpr std::string_view kPodDeletionCostAnnotationKey =
    "controller.kubernetes.io/pod-deletion-cost";

// clamp(1 + deletionCost/2^27 + priority/2^25, -10, 10).
double EvictionCost(const kube::PodInfo& pod);
// clamp((expireAfter - age) / expireAfter, 0, 1); 1 without expiry.
double LifetimeRemaining(const state::StateNode& node, absl::Time now);

// The effective price of the node's offering (its zone and capacity type) plus the pool's node
// overhead (scenario/pool_template.h NodeOverheadPerHour; 0 when it does not parse, the pool being
// left out of every question then); nullopt when the offering is unknown.
std::optional<double> NodePrice(const cloudprovider::InstanceType& type, std::string_view zone,
                                std::string_view capacity_type, const apis::v1::NodePool& pool);

// The price a launch could cost at worst: among the available offerings compatible with
// `requirements`, those of the capacity type that would be used (reserved, else spot, else
// on-demand), the most expensive; nullopt when none is compatible.
std::optional<double> WorstLaunchPrice(const cloudprovider::InstanceType& type,
                                       const scheduling::Requirements& requirements);

// Whether `types` still offer every minValues of `requirements`.
bool SatisfiesMinValues(const std::vector<cloudprovider::InstanceTypePtr>& types,
                        const scheduling::Requirements& requirements);

// Sets the replacement's instance types (sorted cheapest first by their cheapest available
// compatible offering; types without one dropped), its instance-type In list (minValues kept) and
// its priced offering (that of the first type).
void SetReplacementTypes(solver::NewNodeClaim& replacement,
                         std::vector<cloudprovider::InstanceTypePtr> types);

// Upstream's computeConsolidation: a command, or nullopt with `*why` set when nothing is to be
// done.
absl::StatusOr<std::optional<Command>> ComputeConsolidation(Method method,
                                                            std::span<const Candidate> candidates,
                                                            const Simulator& simulator,
                                                            const Options& options,
                                                            std::string* why);

// The NodePool's spec.disruption.consolidationPolicy, or its default when unset.
apis::v1::ConsolidationPolicy ConsolidationPolicyOf(const apis::v1::NodePool& pool);

// The NodePool annotation or the option (min savings per hour, min node age).
double MinSavings(const apis::v1::NodePool& pool, const Options& options);
absl::Duration MinNodeAge(const apis::v1::NodePool& pool, const Options& options);

}  // namespace dovetail::controllers::disruption::internal
