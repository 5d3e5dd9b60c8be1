// KwokCloudProvider: a CloudProvider whose "instances" are Node objects that the kwok controller
// (kwok.x-k8s.io) keeps Ready and whose pods it "runs" (docs/state.md). Launching a NodeClaim
// creates the Node a kubelet would register; terminating it deletes the Node. The default
// provider of the demo and of the end-to-end tests; no cloud behind it.
//
// The Node for NodeClaim C (BuildNode):
//   name            C's name (one Node per NodeClaim; this makes Create idempotent)
//   spec.providerID kwok://<name>
//   labels          C's labels; C's single-valued `In` requirements; the instance type's
//                   single-valued requirements (node.kubernetes.io/instance-type, arch, os,
//                   region, karpenter.k8s.aws/instance-*, karpenter.kwok.sh/instance-*); the
//                   offering's (karpenter.sh/capacity-type, topology.kubernetes.io/zone);
//                   kubernetes.io/hostname=<name>; kwok.x-k8s.io/node=fake (the label kwok is
//                   told to manage, tools/k8s/cluster.py); kwok-partition=partition-{a..j}
//                   (upstream's partitions, chosen here by a hash of the name, so it is stable);
//                   eks-node-viewer/instance-price=<price>
//   annotations     C's annotations; kwok.x-k8s.io/node=fake (kwok's default selector is this
//                   annotation); dovetail.sh/nodeclaim-uid=<C's uid>
//   taints          C's taints and startup taints plus karpenter.sh/unregistered:NoExecute, as a
//                   kubelet configured by Karpenter registers (the registration controller
//                   removes the unregistered taint)
//   status          capacity and allocatable of the instance type (kwok keeps them)
// The instance type and offering: among the types C's requirements allow (its
// node.kubernetes.io/instance-type values, else the whole catalog) that are compatible with the
// requirements and whose allocatable holds C's resource requests, the cheapest available offering
// compatible with the requirements; ties go to the type first in the catalog, then to the first
// offering.
//
// Upstream's kwok provider differs in details that do not matter to Karpenter's core: it names
// Nodes randomly (hostname = NodeClaim name), samples the partition and breaks price ties at
// random, registers with the unregistered taint only, and registers after the KWOKNodeClass's
// nodeRegistrationDelay (Dovetail has no KWOKNodeClass yet: it registers at once).
//
// Thread-safe: no mutable state beyond the API server.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/apis/core/node.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/cloudprovider/catalog.h"
#include "dovetail/cloudprovider/cloud_provider.h"
#include "dovetail/kube/client.h"

namespace dovetail::cloudprovider::kwok {

inline constexpr std::string_view kProviderIdPrefix = "kwok://";
// Label and annotation: the nodes kwok manages.
inline constexpr std::string_view kKwokNodeKey = "kwok.x-k8s.io/node";
inline constexpr std::string_view kKwokNodeValue = "fake";
inline constexpr std::string_view kPartitionLabelKey = "kwok-partition";
inline constexpr std::string_view kNodeViewerPriceLabelKey = "eks-node-viewer/instance-price";
// On the Node: the UID of the NodeClaim it was launched for.
inline constexpr std::string_view kNodeClaimUidAnnotationKey = "dovetail.sh/nodeclaim-uid";

struct Launch {
  InstanceTypePtr instance_type;
  Offering offering;
};

// The instance type and offering to launch for `node_claim` (see the file comment). Errors:
// InsufficientCapacityError when no type and offering fits; CreateError (InvalidRequirements)
// when the NodeClaim's requirements do not parse.
absl::StatusOr<Launch> ChooseLaunch(const Catalog& catalog, const apis::v1::NodeClaim& node_claim);

// The Node that launching `node_claim` as `launch` registers.
apis::core::Node BuildNode(const apis::v1::NodeClaim& node_claim, const Launch& launch);

// What Get and List report for a kwok Node: name, labels and annotations of the Node;
// status.providerID, nodeName, capacity and allocatable; creation timestamp.
apis::v1::NodeClaim NodeClaimFromNode(const apis::core::Node& node);

// The Node name in a kwok provider id. Errors: InvalidArgument when it is not kwok://<name>.
absl::StatusOr<std::string> NodeNameFromProviderId(std::string_view provider_id);

class KwokCloudProvider final : public CloudProvider {
 public:
  // `client` must outlive the provider.
  KwokCloudProvider(kube::Client& client, Catalog catalog)
      : client_(client), catalog_(std::move(catalog)) {}

  // Creates the Node. If a Node of that name already exists for this NodeClaim (same UID
  // annotation), returns it instead of creating another one; one that exists for another
  // NodeClaim, or is being deleted, is an AlreadyExists error (transient: the caller retries).
  absl::StatusOr<apis::v1::NodeClaim> Create(const apis::v1::NodeClaim& node_claim) override;
  // Deletes the Node. NodeClaimNotFound once it is gone, is being deleted (finalizers may hold the
  // object; the "instance" is terminated), belongs to another NodeClaim, or was never launched.
  absl::Status Delete(const apis::v1::NodeClaim& node_claim) override;
  absl::StatusOr<apis::v1::NodeClaim> Get(std::string_view provider_id) override;
  // Nodes labelled kwok.x-k8s.io/node=fake with a kwok:// provider id, not being deleted.
  absl::StatusOr<std::vector<apis::v1::NodeClaim>> List() override;
  absl::StatusOr<Catalog> GetInstanceTypes(const apis::v1::NodePool& node_pool) override;
  absl::StatusOr<std::string> IsDrifted(const apis::v1::NodeClaim& node_claim) override;
  // Ready False or Unknown for 10 minutes, as upstream's kwok provider.
  std::vector<RepairPolicy> RepairPolicies() const override;
  std::string_view Name() const override { return "kwok"; }

 private:
  absl::StatusOr<apis::core::Node> GetNode(std::string_view name);
  // The Node `name` while it exists and is not being deleted. NodeClaimNotFound when there is no
  // such Node ("node <name> <gone>") or it is being deleted ("node <name> is terminated"); other
  // errors: those of GetNode.
  absl::StatusOr<apis::core::Node> GetLiveNode(std::string_view name, std::string_view gone);

  kube::Client& client_;
  const Catalog catalog_;
};

}  // namespace dovetail::cloudprovider::kwok
