// GarbageCollectionController ("nodeclaim.garbagecollection"): reconciles the cloud with the
// NodeClaims in both directions, every `interval` (docs/nodeclaim-lifecycle.md):
//   - NodeClaims whose instance is gone: Registered=True, not being deleted, whose provider id
//     is absent from CloudProvider::List (and Get confirms NodeClaimNotFound), and whose Node is
//     missing or not Ready (a Ready kubelet beats an eventually consistent cloud API) => event
//     GarbageCollected and delete the NodeClaim (its finalizer then runs termination).
//     Unregistered NodeClaims are left to the registration timeout (lifecycle liveness).
//   - Leaked instances: a machine from CloudProvider::List whose provider id no NodeClaim carries
//     and that is older than `instance_grace` (the window in which a launch's status write may
//     not be visible yet) => CloudProvider::Delete, and delete its Node(s). A machine launched for
//     a NodeClaim that has no provider id yet and is not being deleted is that NodeClaim's launch
//     in progress and is kept: matched by the NodeClaim UID the machine records (List's
//     metadata.uid), or by name when it records none. A machine recording the UID of an earlier
//     NodeClaim of the same name is not kept.
// The cloud is listed first and the NodeClaims after (a quorum list), so the NodeClaims are the
// fresher of the two. Nodes whose NodeClaim is gone are deleted by the API server's garbage
// collector through the owner reference registration puts on them.
// Thread-safety: see controllers/controller.h. RunOnce may be called from any thread.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/controllers/controller.h"
#include "dovetail/kube/singleton.h"

namespace dovetail::controllers::nodeclaim {

struct GarbageCollectionOptions {
  absl::Duration interval = absl::Minutes(2);
  absl::Duration instance_grace = absl::Seconds(30);
};

struct GarbageCollectionStats {
  int64_t runs = 0;
  int64_t node_claims_deleted = 0;
  int64_t instances_deleted = 0;
};

class GarbageCollectionController final : public Controller {
 public:
  explicit GarbageCollectionController(const Dependencies& deps,
                                       GarbageCollectionOptions options = {});
  ~GarbageCollectionController() override;

  std::string_view Name() const override { return "nodeclaim.garbagecollection"; }
  // Runs a pass now and then every `interval`.
  void Start() override;
  void Stop() override;
  // When the pass in flight began; nullopt between passes.
  std::optional<absl::Time> OldestWorkStart() const override { return loop_.OldestWorkStart(); }

  // One pass (what the worker runs). Errors: the first failed cloud or API call; the pass goes on
  // past failures of single deletions and reports the first.
  absl::Status RunOnce();
  GarbageCollectionStats stats() const;

 private:
  const Dependencies deps_;
  const GarbageCollectionOptions options_;
  mutable absl::Mutex mu_;
  GarbageCollectionStats stats_ ABSL_GUARDED_BY(mu_);
  kube::Singleton loop_;  // RunOnce() every interval; a failure retries after 1 s, doubling
};

}  // namespace dovetail::controllers::nodeclaim
