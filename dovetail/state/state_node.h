// StateNode: one machine as cluster state knows it — a Node, a NodeClaim, or both once they are
// linked by provider id — plus the marks Dovetail keeps on it in memory (marked for deletion by a
// disruption command, nominated for pending pods until a deadline). The accessors answer the
// questions provisioning and disruption ask, with upstream's rules for machines that are still
// coming up (docs/state.md):
//   - Managed: it has a NodeClaim. Unmanaged nodes count as registered and initialized.
//   - Registered / Initialized: the Node carries karpenter.sh/registered=true /
//     karpenter.sh/initialized=true.
//   - Taints: the NodeClaim's taints until the Node is registered, the Node's after.
//   - Capacity / Allocatable: the Node's, except that while a managed node is not initialized a
//     zero or missing value is filled from the NodeClaim's (the instance type's estimate); the
//     NodeClaim's alone when there is no Node yet.
// A StateNode is a value: Cluster hands out copies (the objects are shared, immutable pointers).
// Thread-compatible.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "dovetail/apis/core/meta.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/common/quantity.h"
#include "dovetail/kube/objects.h"

namespace dovetail::state {

using NodePtr = std::shared_ptr<const kube::NodeInfo>;
using NodeClaimPtr = std::shared_ptr<const apis::v1::NodeClaim>;
using PodPtr = std::shared_ptr<const kube::PodInfo>;

// The key of a NodeClaim that has no provider id yet (not launched): "nodeclaim/<name>". Node
// names and provider ids never take this form, so keys of the three kinds cannot collide.
std::string UnlaunchedNodeClaimKey(std::string_view node_claim_name);

struct StateNode {
  NodePtr node;             // null until the Node registers (or for a claim never launched)
  NodeClaimPtr node_claim;  // null for nodes Dovetail does not manage
  bool marked_for_deletion = false;
  std::optional<absl::Time> nominated_until;

  // The provider id; for a Node without one its name; for an unlaunched NodeClaim
  // UnlaunchedNodeClaimKey(name). Cluster indexes StateNodes by it.
  std::string Key() const;
  // The Node's name, else the NodeClaim's status.nodeName, else the NodeClaim's name.
  std::string Name() const;
  std::string ProviderId() const;
  // karpenter.sh/nodepool of the NodeClaim (else of the Node); "" when none.
  std::string NodePool() const;

  bool Managed() const { return node_claim != nullptr; }
  bool Launched() const;  // no NodeClaim, or the NodeClaim has a provider id
  bool Registered() const;
  bool Initialized() const;
  // The Node or the NodeClaim has a deletion timestamp.
  bool Deleting() const;
  bool Nominated(absl::Time now) const;
  // Usable for new pods: neither marked for deletion nor deleting.
  bool Active() const { return !marked_for_deletion && !Deleting(); }

  apis::core::StringMap Labels() const;
  std::vector<apis::core::Taint> Taints() const;
  ResourceList Capacity() const;
  ResourceList Allocatable() const;
  // Keys of the NodeClaim's startup taints (ignored while the node is not initialized).
  std::vector<std::string> StartupTaintKeys() const;
};

// Conversions from the informers' compact structs.
ResourceList ToResourceList(const std::vector<kube::ResourceAmount>& amounts);
apis::core::Taint ToTaint(const kube::CompactTaint& taint);

}  // namespace dovetail::state
