// A planned NewNodeClaim back into the NodeClaim object the provisioner creates (upstream's
// ToNodeClaim; docs/provisioning.md, "The NodeClaim"); the other edge, a NodePool into the
// solver's PoolTemplate, is dovetail/scenario/pool_template.h.
//
// The NodeClaim gets: generateName `<nodepool>-`; an owner reference to the NodePool
// (blockOwnerDeletion); labels = template labels + karpenter.sh/nodepool + the node class label
// (`<group>/<lowercase kind>` = class name) + custom requirement keys resolved to one value;
// annotations = template annotations + karpenter.sh/nodepool-hash(-version) (+ min-values-relaxed
// under the BestEffort policy); spec.requirements = the plan's requirements (pool ∩ pods ∩
// topology, the price-ordered instance-type In list and the capacity-type In list) minus the
// internal karpenter.sh/registered and karpenter.sh/initialized keys and the placeholder
// hostname; resources.requests, taints, startupTaints, nodeClassRef, expireAfter and
// terminationGracePeriod from the plan and the template.
//
// Pure functions; thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/apis/core/workloads.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/cloudprovider/instance_type.h"
#include "dovetail/common/quantity.h"
#include "dovetail/solver/solver.h"

namespace dovetail::controllers::launch {

// The karpenter.sh/nodepool-hash a NodeClaim launched from the pool carries: upstream's drift hash
// (version v3) of its template (apis::v1::TemplateHash), or "" when it does not hash. As
// upstream, computed at launch rather than read from the pool's annotation, which may lag a spec
// change.
std::string NodePoolHash(const apis::v1::NodePool& node_pool);

struct BuildOptions {
  bool min_values_strict = true;  // MIN_VALUES_POLICY=Strict: no min-values-relaxed annotation
};

apis::v1::NodeClaim BuildNodeClaim(const apis::v1::NodePool& node_pool,
                                   const solver::NewNodeClaim& planned,
                                   const BuildOptions& options = {});

}  // namespace dovetail::controllers::launch
