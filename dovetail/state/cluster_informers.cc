#include "dovetail/state/cluster_informers.h"

#include <memory>

namespace dovetail::state {

ClusterInformers::ClusterInformers(kube::Client& client, Cluster& cluster,
                                   const kube::InformerOptions& options)
    : context_{.pool = &pool_, .constraints = &constraints_},
      pods_(client, kube::resources::kPods, kube::PodCodec{&context_}, options),
      nodes_(client, kube::resources::kNodes, kube::NodeCodec{&context_}, options),
      node_claims_(client, kube::resources::kNodeClaims,
                   kube::ApiObjectCodec<apis::v1::NodeClaim>{}, options),
      node_pools_(client, kube::resources::kNodePools, {}, options),
      daemon_sets_(client, kube::resources::kDaemonSets, {}, options),
      namespaces_(client, kube::resources::kNamespaces, {}, options),
      pdbs_(client, kube::resources::kPodDisruptionBudgets, {}, options),
      pvcs_(client, kube::resources::kPersistentVolumeClaims, {}, options),
      pvs_(client, kube::resources::kPersistentVolumes, {}, options),
      storage_classes_(client, kube::resources::kStorageClasses, {}, options) {
  pods_.store().AddIndex(kube::kIndexNodeName, kube::PodsByNodeName);
  pods_.store().AddIndex(kube::kIndexNamespace, kube::PodsByNamespace);
  pods_.store().AddIndex(kube::kIndexOwnerUid, kube::PodsByOwnerUid);
  nodes_.store().AddIndex(kube::kIndexProviderId, kube::NodesByProviderId);
  node_claims_.store().AddIndex(kube::kIndexNodePool,
                                kube::NodeClaimsByNodePool<apis::v1::NodeClaim>);

  using kube::PodInfo, kube::NodeInfo, apis::v1::NodeClaim;
  registrations_.push_back(pods_.AddHandler({
      .on_add = [&cluster](const std::shared_ptr<const PodInfo>& p) { cluster.UpdatePod(p); },
      .on_update = [&cluster](const std::shared_ptr<const PodInfo>&,
                              const std::shared_ptr<const PodInfo>& p) { cluster.UpdatePod(p); },
      .on_delete = [&cluster](const std::shared_ptr<const PodInfo>& p) { cluster.DeletePod(*p); },
  }));
  registrations_.push_back(nodes_.AddHandler({
      .on_add = [&cluster](const std::shared_ptr<const NodeInfo>& n) { cluster.UpdateNode(n); },
      .on_update = [&cluster](const std::shared_ptr<const NodeInfo>&,
                              const std::shared_ptr<const NodeInfo>& n) { cluster.UpdateNode(n); },
      .on_delete = [&cluster](const std::shared_ptr<const NodeInfo>& n) { cluster.DeleteNode(*n); },
  }));
  registrations_.push_back(node_claims_.AddHandler({
      .on_add =
          [&cluster](const std::shared_ptr<const NodeClaim>& c) { cluster.UpdateNodeClaim(c); },
      .on_update = [&cluster](
                       const std::shared_ptr<const NodeClaim>&,
                       const std::shared_ptr<const NodeClaim>& c) { cluster.UpdateNodeClaim(c); },
      .on_delete =
          [&cluster](const std::shared_ptr<const NodeClaim>& c) { cluster.DeleteNodeClaim(*c); },
  }));
  cluster.AddSyncCheck(
      [this] { return pods_.HasSynced() && nodes_.HasSynced() && node_claims_.HasSynced(); });
}

void ClusterInformers::Start() {
  nodes_.Start();
  node_claims_.Start();
  pods_.Start();
  node_pools_.Start();
  daemon_sets_.Start();
  namespaces_.Start();
  pdbs_.Start();
  pvcs_.Start();
  pvs_.Start();
  storage_classes_.Start();
}

void ClusterInformers::Stop() {
  storage_classes_.Stop();
  pvs_.Stop();
  pvcs_.Stop();
  pdbs_.Stop();
  namespaces_.Stop();
  daemon_sets_.Stop();
  node_pools_.Stop();
  pods_.Stop();
  node_claims_.Stop();
  nodes_.Stop();
}

bool ClusterInformers::VolumesSynced(absl::Time deadline) const {
  return pvcs_.WaitForSync(deadline) && pvs_.WaitForSync(deadline) &&
         storage_classes_.WaitForSync(deadline);
}

bool ClusterInformers::WaitForSync(absl::Time deadline) const {
  return nodes_.WaitForSync(deadline) && node_claims_.WaitForSync(deadline) &&
         pods_.WaitForSync(deadline) && node_pools_.WaitForSync(deadline) &&
         daemon_sets_.WaitForSync(deadline) && namespaces_.WaitForSync(deadline) &&
         pdbs_.WaitForSync(deadline) && VolumesSynced(deadline);
}

}  // namespace dovetail::state
