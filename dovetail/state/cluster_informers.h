// ClusterInformers: the process's one informer per Kubernetes and karpenter.sh kind the
// controllers read (EC2NodeClasses, whose CRD exists only with the AWS provider, are watched by
// the controllers that need them: an informer here would never sync on a kwok cluster). The Node,
// Pod and NodeClaim informers keep a state::Cluster up to date, with the indexes controllers query
// (pods by node name, namespace and owner; nodes by provider id; NodeClaims by NodePool); their
// HasSynced is registered with Cluster::AddSyncCheck, so Cluster::Synced() is false until those
// three have listed. The NodePool, DaemonSet, Namespace, PodDisruptionBudget,
// PersistentVolumeClaim, PersistentVolume and StorageClass informers feed no state: the controllers
// that read them (provisioning, disruption, the nodepool and nodeclaim controllers, the metrics
// controllers; the last three through scenario/from_cluster.h) share them and check their HasSynced
// themselves.
//
// The informers' stores stay available to controllers (e.g. provisioning lists pending pods from
// pods().store() after taking a snapshot), and so are the informers for handlers: a controller
// keeps the HandlerRegistration of each handler it adds (kube/handler_registration.h) and is
// called until it resets or destroys it, so a controller may come and go while the informers run.
// Construct, then Start(); Stop() (also on destruction) joins the informer threads. Thread-safe
// after Start().
#pragma once

#include <vector>

#include "absl/time/time.h"
#include "dovetail/apis/core/namespace.h"
#include "dovetail/apis/core/persistent_volume.h"
#include "dovetail/apis/core/persistent_volume_claim.h"
#include "dovetail/apis/core/pod_disruption_budget.h"
#include "dovetail/apis/core/storage_class.h"
#include "dovetail/apis/core/workloads.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/handler_registration.h"
#include "dovetail/kube/informer.h"
#include "dovetail/kube/objects.h"
#include "dovetail/kube/pod_constraints.h"
#include "dovetail/kube/string_pool.h"
#include "dovetail/state/cluster.h"

namespace dovetail::state {

class ClusterInformers {
 public:
  using PodInformer = kube::Informer<kube::PodCodec>;
  using NodeInformer = kube::Informer<kube::NodeCodec>;
  using NodeClaimInformer = kube::Informer<kube::ApiObjectCodec<apis::v1::NodeClaim>>;
  using NodePoolInformer = kube::Informer<kube::ApiObjectCodec<apis::v1::NodePool>>;
  using DaemonSetInformer = kube::Informer<kube::ApiObjectCodec<apis::core::DaemonSet>>;
  using NamespaceInformer = kube::Informer<kube::ApiObjectCodec<apis::core::Namespace>>;
  using PdbInformer = kube::Informer<kube::ApiObjectCodec<apis::core::PodDisruptionBudget>>;
  using PvcInformer = kube::Informer<kube::ApiObjectCodec<apis::core::PersistentVolumeClaim>>;
  using PvInformer = kube::Informer<kube::ApiObjectCodec<apis::core::PersistentVolume>>;
  using StorageClassInformer = kube::Informer<kube::ApiObjectCodec<apis::core::StorageClass>>;

  // `client` and `cluster` must outlive this object, and this object every call to
  // cluster.Synced() (it registers a sync check). Call before `cluster` is shared.
  ClusterInformers(kube::Client& client, Cluster& cluster,
                   const kube::InformerOptions& options = {});
  ~ClusterInformers() { Stop(); }
  ClusterInformers(const ClusterInformers&) = delete;
  ClusterInformers& operator=(const ClusterInformers&) = delete;

  void Start();
  void Stop();
  // True once every informer listed; false at the deadline or after Stop().
  bool WaitForSync(absl::Time deadline) const;
  // True once the PersistentVolumeClaim, PersistentVolume and StorageClass informers listed
  // (InfinitePast: whether they have, without waiting).
  bool VolumesSynced(absl::Time deadline = absl::InfinitePast()) const;

  PodInformer& pods() { return pods_; }
  NodeInformer& nodes() { return nodes_; }
  NodeClaimInformer& node_claims() { return node_claims_; }
  NodePoolInformer& node_pools() { return node_pools_; }
  DaemonSetInformer& daemon_sets() { return daemon_sets_; }
  NamespaceInformer& namespaces() { return namespaces_; }  // labels for namespaceSelector terms
  PdbInformer& pdbs() { return pdbs_; }
  // Volume topology of the solver's questions (scenario/volume_topology.h).
  PvcInformer& pvcs() { return pvcs_; }
  PvInformer& pvs() { return pvs_; }
  StorageClassInformer& storage_classes() { return storage_classes_; }

 private:
  kube::StringPool pool_;
  kube::PodConstraintPool constraints_;
  kube::DecodeContext context_;
  PodInformer pods_;
  NodeInformer nodes_;
  NodeClaimInformer node_claims_;
  NodePoolInformer node_pools_;
  DaemonSetInformer daemon_sets_;
  NamespaceInformer namespaces_;
  PdbInformer pdbs_;
  PvcInformer pvcs_;
  PvInformer pvs_;
  StorageClassInformer storage_classes_;
  std::vector<kube::HandlerRegistration> registrations_;  // the handlers that feed the Cluster
};

}  // namespace dovetail::state
