// ClusterInformers: the Node, Pod and NodeClaim informers that keep a state::Cluster up to date,
// with the indexes controllers query (pods by node name, namespace and owner; nodes by provider
// id; NodeClaims by NodePool). It registers the informers' HasSynced with Cluster::AddSyncCheck,
// so Cluster::Synced() is false until all three have listed.
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
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/handler_registration.h"
#include "dovetail/kube/informer.h"
#include "dovetail/kube/objects.h"
#include "dovetail/kube/string_pool.h"
#include "dovetail/state/cluster.h"

namespace dovetail::state {

class ClusterInformers {
 public:
  using PodInformer = kube::Informer<kube::PodCodec>;
  using NodeInformer = kube::Informer<kube::NodeCodec>;
  using NodeClaimInformer = kube::Informer<kube::ApiObjectCodec<apis::v1::NodeClaim>>;

  // `client` and `cluster` must outlive this object, and this object every call to
  // cluster.Synced() (it registers a sync check). Call before `cluster` is shared.
  ClusterInformers(kube::Client& client, Cluster& cluster,
                   const kube::InformerOptions& options = {});
  ~ClusterInformers() { Stop(); }
  ClusterInformers(const ClusterInformers&) = delete;
  ClusterInformers& operator=(const ClusterInformers&) = delete;

  void Start();
  void Stop();
  // True once all three informers listed; false at the deadline or after Stop().
  bool WaitForSync(absl::Time deadline) const;

  PodInformer& pods() { return pods_; }
  NodeInformer& nodes() { return nodes_; }
  NodeClaimInformer& node_claims() { return node_claims_; }

 private:
  kube::StringPool pool_;
  kube::DecodeContext context_;
  PodInformer pods_;
  NodeInformer nodes_;
  NodeClaimInformer node_claims_;
  std::vector<kube::HandlerRegistration> registrations_;  // the handlers that feed the Cluster
};

}  // namespace dovetail::state
