// Cluster: Dovetail's in-memory picture of the machines in the cluster (upstream's state.Cluster;
// docs/state.md), kept from the Node, NodeClaim and Pod informers and read by provisioning and
// disruption.
//
// What it keeps:
//   - StateNodes by key (state_node.h): a Node and a NodeClaim with the same provider id are one
//     StateNode; a Node without a provider id is keyed by its name, a NodeClaim not yet launched by
//     UnlaunchedNodeClaimKey(name). When an object gains its provider id the entry moves to the
//     new key with its marks.
//   - Pod bindings: the non-terminal pods bound to each node name, with their summed requests
//     (DaemonSet pods also summed apart). A pod may be bound to a node name the Node informer has
//     not delivered yet; the binding waits for it.
//   - Nominations: a StateNode is nominated until a deadline when a scheduling decision relies on
//     it (e.g. pods expected to land on it); nominated nodes are not disruption candidates.
//   - Deletion marks: set by a disruption command on its candidates, cleared when the command is
//     abandoned, dropped with the StateNode.
//   - Per-NodePool usage for limits: the sum of Capacity() of every StateNode of the pool, plus
//     `nodes`; NodeClaims in flight count too (launched: their status.capacity; not yet launched:
//     their spec.resources.requests, a lower bound).
//
// Snapshot() copies the StateNodes with the pods bound to them at one instant. Provisioning takes
// it BEFORE listing pending pods (upstream's order): a pod that binds in between is then missing
// from both lists, so existing capacity is over- rather than under-estimated. The snapshot
// converts into the solver's input (dovetail/scenario/solver_nodes.h).
//
// Synced(): every source registered with AddSyncCheck (the informers) has synced, and every
// NodeClaim in state has been launched (has a provider id) — until then a NodeClaim's capacity is
// unknown and provisioning could launch twice for the same pods. Provisioning and disruption wait
// for it.
//
// Event methods (Update*/Delete*) are called by the informer handlers (cluster_informers.h) or
// directly by tests. Thread-safe: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/common/clock.h"
#include "dovetail/common/quantity.h"
#include "dovetail/state/pod_scheduling_times.h"
#include "dovetail/state/registration_health.h"
#include "dovetail/state/snapshot.h"
#include "dovetail/state/state_node.h"

namespace dovetail::state {

class Cluster {
 public:
  explicit Cluster(const Clock& clock) : clock_(clock) {}
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // ---- events --------------------------------------------------------------------------------
  void UpdateNode(NodePtr node);
  void DeleteNode(const kube::NodeInfo& node);
  void UpdateNodeClaim(NodeClaimPtr node_claim);
  void DeleteNodeClaim(const apis::v1::NodeClaim& node_claim);
  // Binds a pod with a node name that is neither Succeeded nor Failed; unbinds it otherwise.
  void UpdatePod(PodPtr pod);
  void DeletePod(const kube::PodInfo& pod);

  // ---- marks ---------------------------------------------------------------------------------
  // Nominates the StateNode with this key until now + `duration` (a later deadline wins).
  // Unknown keys are ignored.
  void Nominate(std::string_view key, absl::Duration duration);
  // Marks (or unmarks) StateNodes for deletion. Unknown keys are ignored.
  void MarkForDeletion(const std::vector<std::string>& keys);
  void UnmarkForDeletion(const std::vector<std::string>& keys);

  // ---- reads ---------------------------------------------------------------------------------
  std::optional<StateNode> Get(std::string_view key) const;
  // The StateNode whose Node (or, with no Node, whose NodeClaim's status.nodeName) has this name.
  std::optional<StateNode> GetByNodeName(std::string_view node_name) const;
  std::optional<StateNode> GetByNodeClaimName(std::string_view node_claim_name) const;
  // Every StateNode, ordered by key.
  std::vector<StateNode> Nodes() const;
  size_t size() const;

  // Pods bound to the node name, ordered by namespace/name.
  std::vector<PodPtr> PodsOn(std::string_view node_name) const;
  // Summed effective requests of the pods bound to the node name (all, or DaemonSet pods only).
  ResourceList PodRequests(std::string_view node_name) const;
  ResourceList DaemonSetRequests(std::string_view node_name) const;

  // What the NodePool's machines add up to (Capacity() per resource, plus `nodes`).
  ResourceList NodePoolUsage(std::string_view node_pool) const;

  Snapshot TakeSnapshot() const;

  // ---- sync ----------------------------------------------------------------------------------
  // Registers a source that must have synced before Synced() is true (e.g. an informer's
  // HasSynced). Call before the cluster is shared.
  void AddSyncCheck(std::function<bool()> synced);
  bool Synced() const;

  // When provisioning acked, decided about and placed each pending pod (pod_scheduling_times.h);
  // a deleted pod's entry is dropped by DeletePod.
  PodSchedulingTimes& pod_scheduling_times() { return pod_scheduling_times_; }
  const PodSchedulingTimes& pod_scheduling_times() const { return pod_scheduling_times_; }
  // Each NodePool's recent launch and registration outcomes (registration_health.h): recorded by
  // the NodeClaim lifecycle, written as NodeRegistrationHealthy by the NodePool status.
  RegistrationHealth& registration_health() { return registration_health_; }

 private:
  struct Entry {
    NodePtr node;
    NodeClaimPtr node_claim;
    bool marked_for_deletion = false;
    std::optional<absl::Time> nominated_until;
  };
  struct Binding {
    absl::flat_hash_map<std::string, PodPtr> pods;  // by namespace/name
    // Summed requests in milli-units, by (interned) resource name.
    // Running sums in 128 bits, so that adding and later removing a pod is exact even when
    // requests are near the int64 limit; read back saturated (SumsToList).
    absl::flat_hash_map<const std::string*, __int128> requests;
    absl::flat_hash_map<const std::string*, __int128> daemon_set_requests;
  };

  StateNode ToStateNode(const Entry& entry) const;
  // Detaches an object that re-keys from `old_key`'s entry; when that leaves the entry empty, its
  // marks (deletion, nomination) move to `new_key`'s entry and the old entry is erased.
  void MoveMarks(const std::string& old_key, const std::string& new_key,
                 absl::FunctionRef<void(Entry&)> detach) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Erases the entry once it holds neither a Node nor a NodeClaim (its marks go with it).
  void EraseIfEmpty(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Unbind(const std::string& pod_key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::flat_hash_map<std::string, ResourceList> UsageByPoolLocked() const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const Clock& clock_;
  std::vector<std::function<bool()>> sync_checks_;
  PodSchedulingTimes pod_scheduling_times_;
  RegistrationHealth registration_health_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::string> node_keys_ ABSL_GUARDED_BY(mu_);   // node name
  absl::flat_hash_map<std::string, std::string> claim_keys_ ABSL_GUARDED_BY(mu_);  // claim name
  absl::flat_hash_map<std::string, Binding> bindings_ ABSL_GUARDED_BY(mu_);        // by node name
  // Bound pods: namespace/name -> node name.
  absl::flat_hash_map<std::string, std::string> pod_nodes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dovetail::state
