// Helpers for writing controllers over kube::Client:
//  - RetryOnConflict: optimistic concurrency. `fn` re-reads the object, applies its change and
//    writes with the resourceVersion it read; a 409 Conflict runs it again after a short backoff.
//  - AddFinalizer/RemoveFinalizer: idempotent, race-safe edits of metadata.finalizers (a merge
//    patch carrying the resourceVersion it was computed from, retried on conflict), so another
//    writer's finalizers are never clobbered.
//  - Owner references: building a controller reference and testing ownership.
// Thread-safe (stateless).
#pragma once

#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "dovetail/apis/core/meta.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/objects.h"
#include "dovetail/kube/rate_limiter.h"

namespace dovetail::kube {

struct ConflictRetryOptions {
  int attempts = 5;
  Backoff::Options backoff = {
      .initial = absl::Milliseconds(10), .max = absl::Seconds(1), .factor = 2.0, .jitter = 0.1};
};

// Runs `fn` until it returns anything but a conflict, at most `attempts` times; returns the last
// status (a conflict when every attempt conflicted).
absl::Status RetryOnConflict(absl::FunctionRef<absl::Status()> fn,
                             const ConflictRetryOptions& options = {});

// Adds `finalizer` unless present. Errors: NotFound, or the last conflict after retries.
absl::Status AddFinalizer(Client& client, const Resource& resource, std::string_view ns,
                          std::string_view name, std::string_view finalizer);
// Removes `finalizer` if present; NotFound counts as success (the object is gone).
absl::Status RemoveFinalizer(Client& client, const Resource& resource, std::string_view ns,
                             std::string_view name, std::string_view finalizer);

// An owner reference with controller and blockOwnerDeletion set.
apis::core::OwnerReference ControllerReference(std::string_view api_version, std::string_view kind,
                                               std::string_view name, std::string_view uid);
// The owner reference marked controller, or nullptr.
const OwnerRef* ControllerOf(const CompactMeta& meta);
const apis::core::OwnerReference* ControllerOf(const apis::core::ObjectMeta& meta);
bool IsOwnedBy(const CompactMeta& meta, std::string_view owner_uid);

}  // namespace dovetail::kube
