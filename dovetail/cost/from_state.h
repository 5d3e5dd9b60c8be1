// The report's machines from cluster state (state::Cluster, kept by the informers): the controller
// feeds its cost gauges with it, and `dovetail cost` fills a Cluster from one list of Nodes,
// NodeClaims and Pods and calls the same function, so both see the same machines.
// Thread-safe (Cluster is).
#pragma once

#include <vector>

#include "dovetail/cost/cost_report.h"
#include "dovetail/state/cluster.h"

namespace dovetail::cost {

// One Machine per StateNode: labels of the Node (else of the NodeClaim), allocatable as
// StateNode::Allocatable() (the NodeClaim's estimate until the Node reports its own), requests and
// pod count of the non-terminal pods bound to its node name, created at the NodeClaim's creation
// (the Node's for unmanaged nodes).
std::vector<Machine> MachinesFromCluster(const state::Cluster& cluster);

// The Machine of one StateNode, without pods (requests and pods zero).
Machine MachineFromStateNode(const state::StateNode& node);

}  // namespace dovetail::cost
