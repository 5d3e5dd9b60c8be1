// CloudProvider: the one seam between Dovetail and a cloud. The NodeClaim lifecycle controllers
// launch, look up and terminate machines through it; provisioning and disruption read instance
// types from it; drift and node repair ask it provider-specific questions. Implementations: the
// AWS provider (providers/aws), kwok (cloudprovider/kwok) and a fake for tests; decorators
// (metrics, price overlays) wrap the interface.
//
// Errors are absl::Status values; the typed ones of errors.h (IsInsufficientCapacity,
// IsNodeClaimNotFound, IsNodeClassNotReady, GetCreateError) carry meaning that callers branch on.
// Any other error is transient: the calling controller logs it and retries with backoff.
// Implementations do not retry internally beyond what their SDK does per request.
//
// Thread-safety: implementations must be safe to call concurrently from every controller.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dovetail/apis/core/meta.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/cloudprovider/catalog.h"
#include "dovetail/cloudprovider/errors.h"
#include "dovetail/cloudprovider/instance_type.h"

namespace dovetail::cloudprovider {

// A node condition that, once it has held for `toleration`, makes the node unhealthy and
// eligible for automatic repair (replacement).
struct RepairPolicy {
  std::string condition_type;  // Node condition type, e.g. "Ready"
  apis::core::ConditionStatus condition_status = apis::core::ConditionStatus::kFalse;
  absl::Duration toleration = absl::ZeroDuration();
  bool operator==(const RepairPolicy&) const = default;
};

class CloudProvider {
 public:
  virtual ~CloudProvider() = default;

  // Launches one machine satisfying `node_claim` (its requirements, resource requests and node
  // class) and returns the NodeClaim as launched: status.provider_id, status.capacity,
  // status.allocatable and status.image_id set, and metadata.labels extended with the labels of
  // the chosen instance type and offering (instance type, zone, capacity type, ...: every
  // requirement with a single value). The input is not modified.
  // Not idempotent: each successful call launches a machine. The launch controller calls it at
  // most once per NodeClaim UID at a time and remembers the result; machines are tagged with the
  // NodeClaim's name and UID so that garbage collection can find any that leaked.
  // Errors: InsufficientCapacityError when none of the compatible offerings could be launched
  // (the caller deletes the NodeClaim and provisioning tries again without those offerings);
  // NodeClassNotReadyError when the node class is missing or not Ready; CreateError for other
  // launch failures with a reason for the Launched condition; anything else is transient.
  virtual absl::StatusOr<apis::v1::NodeClaim> Create(const apis::v1::NodeClaim& node_claim) = 0;

  // Starts terminating the machine behind node_claim.status.provider_id. Idempotent. Returns OK
  // while termination is requested or in progress and NodeClaimNotFoundError once the machine is
  // gone (or never existed); the termination controller keeps calling until it sees
  // NodeClaimNotFound, and only then removes its finalizer.
  virtual absl::Status Delete(const apis::v1::NodeClaim& node_claim) = 0;

  // The machine with this provider id, as a NodeClaim carrying what Create returns (provider id,
  // labels, capacity, allocatable, image id; creation timestamp when known). Errors:
  // NodeClaimNotFoundError when no such machine exists or it has terminated.
  virtual absl::StatusOr<apis::v1::NodeClaim> Get(std::string_view provider_id) = 0;

  // Every live machine this provider launched for the cluster, as Get returns them, in a
  // deterministic order (by provider id), with metadata.name and metadata.uid naming the
  // NodeClaim it was launched for (uid empty when the machine does not record one). Used to
  // garbage-collect machines without a NodeClaim.
  virtual absl::StatusOr<std::vector<apis::v1::NodeClaim>> List() = 0;

  // The instance types `node_pool` may launch, given its node class: every type, including those
  // whose offerings are all unavailable (callers filter with Offerings::Available(); disruption
  // still needs their prices). Requirements follow instance_type.h's conventions. The result may
  // be cached by the provider and is cheap to call repeatedly; the instance types are immutable
  // and shared. Errors: NodeClassNotReadyError when the pool's node class is missing or not
  // Ready.
  virtual absl::StatusOr<Catalog> GetInstanceTypes(const apis::v1::NodePool& node_pool) = 0;

  // Whether the machine behind `node_claim` no longer matches its node class (e.g. its image or
  // subnet is no longer selected): a short CamelCase reason such as "AMIDrift", or "" when it
  // has not drifted. NodePool-level drift (requirements, template hash) is decided by the caller.
  // Errors: NodeClaimNotFoundError when the machine is gone; anything else is transient.
  virtual absl::StatusOr<std::string> IsDrifted(const apis::v1::NodeClaim& node_claim) = 0;

  // The node conditions this provider considers unhealthy; empty disables auto-repair.
  virtual std::vector<RepairPolicy> RepairPolicies() const = 0;

  // Short provider name for logs and metrics labels ("aws", "kwok", "fake").
  virtual std::string_view Name() const = 0;
};

}  // namespace dovetail::cloudprovider
