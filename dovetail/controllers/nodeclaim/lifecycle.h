// The decisions of the NodeClaim lifecycle (docs/nodeclaim-lifecycle.md), as pure functions
// over the API structs so that they are unit-tested without a cluster; LifecycleController
// (lifecycle_controller.h) reads the objects, calls these and writes the results.
//   - MergeLaunched: what a successful CloudProvider::Create adds to the NodeClaim.
//   - SyncNodeForRegistration: what registration writes onto the Node.
//   - CheckInitialization: whether a registered NodeClaim's Node is initialized, and why not.
//   - CheckLiveness: whether a NodeClaim missed its launch or registration deadline.
//   - OwningNodePoolUid, LivenessFailure: which NodePool a NodeClaim's outcome counts for, and
//     why a NodeClaim deleted by liveness failed (state/registration_health.h).
// Thread-compatible (no state).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "dovetail/apis/core/meta.h"
#include "dovetail/apis/core/node.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/kube/objects.h"

namespace dovetail::controllers::nodeclaim {

// The NodeClaim after launch: labels = the provider's resolved labels, then the NodeClaim's own
// (which win); annotations likewise; status.providerID, imageID, capacity, allocatable from the
// launch, and nodeName when the provider knows it. Conditions are not touched.
apis::v1::NodeClaim MergeLaunched(const apis::v1::NodeClaim& node_claim,
                                  const apis::v1::NodeClaim& launched);

// Applies registration to `node`: the termination finalizer, an owner reference to the NodeClaim
// (blockOwnerDeletion), the NodeClaim's labels and annotations (assigned over the Node's), its
// taints and startup taints merged in by key and effect (unless the Node is labelled
// karpenter.sh/do-not-sync-taints=true), the karpenter.sh/unregistered taint removed and the
// label karpenter.sh/registered=true. Returns whether the Node changed.
bool SyncNodeForRegistration(apis::core::Node& node, const apis::v1::NodeClaim& node_claim);

// Whether a Node carries the karpenter.sh/unregistered:NoExecute taint.
bool HasUnregisteredTaint(const apis::core::Node& node);

struct ConditionVerdict {
  apis::core::ConditionStatus status = apis::core::ConditionStatus::kUnknown;
  std::string reason;
  std::string message;
};

// Initialized for a registered NodeClaim and its Node (null: not found): Ready, none of the
// NodeClaim's startup taints, no known ephemeral taint, and every resource requested with a
// non-zero quantity present with non-zero allocatable. True carries no reason.
ConditionVerdict CheckInitialization(const apis::v1::NodeClaim& node_claim,
                                     const kube::NodeInfo* node);

struct LivenessOptions {
  absl::Duration launch_timeout = absl::Minutes(5);
  absl::Duration registration_ttl = absl::Minutes(15);
};

struct LivenessVerdict {
  // Set when the NodeClaim must be deleted: "launch_timeout" or "registration_timeout" (the
  // reasons of karpenter_nodeclaims_disrupted_total).
  std::optional<std::string> delete_reason;
  // Otherwise, when to look again (the earliest deadline still ahead); unset when none applies.
  std::optional<absl::Duration> requeue_after;
};

// Launch timeout: Launched not True for launch_timeout since its last transition. Registration
// timeout: launched, Registered not True for registration_ttl since its last transition.
LivenessVerdict CheckLiveness(const apis::v1::NodeClaim& node_claim, absl::Time now,
                              const LivenessOptions& options);

// The UID of the owner reference to the NodePool that the NodeClaim's karpenter.sh/nodepool label
// names (provisioning sets both), or empty: only such NodeClaims count towards the pool's
// registration health, as upstream.
std::string OwningNodePoolUid(const apis::v1::NodeClaim& node_claim);

struct Failure {
  std::string reason;
  std::string message;
};

// Why a NodeClaim deleted by liveness failed: RegistrationFailed ("Failed to register node") when
// it launched, else its Launched condition's reason and message (the launch error).
Failure LivenessFailure(const apis::v1::NodeClaim& node_claim);

}  // namespace dovetail::controllers::nodeclaim
