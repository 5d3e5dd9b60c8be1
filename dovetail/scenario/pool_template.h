// The NodePool and DaemonSet side of a solver question: a NodePool as the solver's PoolTemplate
// (upstream's NodeClaimTemplate) and a DaemonSet as the pod it would run on a new node. Used by
// provisioning, the disruption simulator and the NodeClaim builder.
//
// A pool's requirements are its template's requirements intersected with its template labels,
// karpenter.sh/nodepool and the node class label (TemplateLabels), plus the internal
// karpenter.sh/registered and karpenter.sh/initialized keys, so that DaemonSets selecting those
// count on new nodes (the NodeClaim builder strips them again).
//
// Pure functions; thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/apis/core/workloads.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/cloudprovider/instance_type.h"
#include "dovetail/common/quantity.h"
#include "dovetail/solver/solver.h"

namespace dovetail::scenario {

// Internal requirements that only let DaemonSets selecting them count (stripped from NodeClaims).
inline constexpr std::string_view kInternalRequirementKeys[] = {apis::v1::kNodeRegisteredLabelKey,
                                                                apis::v1::kNodeInitializedLabelKey};

// `<group>/<lowercase kind>` of the pool's nodeClassRef (e.g. karpenter.k8s.aws/ec2nodeclass), or
// "" when the pool has none.
std::string NodeClassLabelKey(const apis::v1::NodePool& node_pool);

// The template's labels plus karpenter.sh/nodepool and the node class label.
apis::core::StringMap TemplateLabels(const apis::v1::NodePool& node_pool);

// On a NodePool: what each of its nodes costs per hour beyond its offering's effective price,
// in USD, for what the user pays per node (IP addresses, licences, agents priced per node). A
// decimal number from 0 to 1000; the solver and consolidation add it to every NodeClaim of the
// pool (docs/scheduling.md, "Effective price").
inline constexpr std::string_view kNodeOverheadAnnotationKey = "dovetail.sh/node-overhead-per-hour";

// The pool's kNodeOverheadAnnotationKey, 0 without it. Errors: InvalidArgument naming the
// annotation for a value that is not a decimal number from 0 to 1000.
absl::StatusOr<double> NodeOverheadPerHour(const apis::v1::NodePool& node_pool);

// Errors: InvalidArgument when the pool's requirements or its node overhead annotation do not
// parse.
absl::StatusOr<solver::PoolTemplate> BuildPoolTemplate(
    const apis::v1::NodePool& node_pool, std::vector<cloudprovider::InstanceTypePtr> instance_types,
    std::optional<ResourceList> remaining_limits);

// The pod a DaemonSet would run on a new node: its template with the DaemonSet's name, namespace
// and a controller owner reference (the solver's DaemonSet overhead and the provisioner's and
// disruption's simulations use it).
std::unique_ptr<apis::core::Pod> DaemonSetPod(const apis::core::DaemonSet& daemon_set);

}  // namespace dovetail::scenario
