// kube::Client: the verbs of the Kubernetes API over any resource (resource.h), on JSON text:
// get, list (one page or all pages with limit/continue), create, update (PUT, optimistic
// concurrency through metadata.resourceVersion), status subresource updates, delete (with
// UID/resourceVersion preconditions, propagation policy and grace period), JSON merge patch,
// JSON patch (RFC 6902, including `test` operations), server-side apply, and the Eviction API.
// Typed wrappers over the dovetail/apis structs are in typed_client.h.
//
// Writes pass a WriteGate before every attempt (the first and each retry RestClient makes): once
// the gate is closed (the leader lost its lease), a write fails with FailedPrecondition and
// nothing more of it reaches the API server.
//
// Errors are those of RestClient/StatusFromHttp; use the predicates of errors.h (IsNotFound,
// IsConflict, IsTooManyRequests for an eviction blocked by a PodDisruptionBudget, ...).
// Retrying 429/5xx is done below (RestClient); conflicts are the caller's (RetryOnConflict).
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dovetail/common/clock.h"
#include "dovetail/kube/resource.h"
#include "dovetail/kube/rest_client.h"

namespace dovetail::kube {

// Whether this process may write. Open by default. The leader elector keeps it open only until
// the end of the current renew deadline (OpenUntil), so writes stop on time even when the elector
// itself is stuck. Thread-safe.
class WriteGate {
 public:
  explicit WriteGate(const Clock* clock = nullptr) : clock_(clock) {}
  void Open() { deadline_.store(kForever); }
  void Close() { deadline_.store(kNever); }
  // Open until `deadline` as measured by the clock given at construction (required).
  void OpenUntil(absl::Time deadline) { deadline_.store(absl::ToUnixNanos(deadline)); }
  bool is_open() const {
    const int64_t deadline = deadline_.load();
    if (deadline == kForever) return true;
    if (deadline == kNever || clock_ == nullptr) return false;
    return absl::ToUnixNanos(clock_->Now()) < deadline;
  }

 private:
  static constexpr int64_t kForever = INT64_MAX;
  static constexpr int64_t kNever = INT64_MIN;
  const Clock* clock_;
  std::atomic<int64_t> deadline_{kForever};
};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 0;  // page size; 0: server default (everything)
  std::string continue_token;
  std::string resource_version;  // "" (quorum read), "0" (any cached), or a version
};

struct ListPage {
  std::string body;  // the List object's JSON
  std::string resource_version;
  std::string continue_token;  // empty on the last page
};

enum class PropagationPolicy { kOrphan, kBackground, kForeground };

struct DeleteOptions {
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
  std::optional<PropagationPolicy> propagation_policy;
  std::optional<int64_t> grace_period_seconds;
};

enum class PatchType { kMerge, kJson, kStrategicMerge, kApply };

struct PatchOptions {
  std::string field_manager = "dovetail";
  bool force = false;  // server-side apply: take ownership of conflicting fields
};

class Client {
 public:
  explicit Client(RestClient& rest, const WriteGate* gate = nullptr) : rest_(rest), gate_(gate) {}

  absl::StatusOr<std::string> Get(const Resource& r, std::string_view ns, std::string_view name);
  absl::StatusOr<ListPage> List(const Resource& r, std::string_view ns,
                                const ListOptions& options = {});
  // Calls `on_page` for every page (a continue token that expired mid-way gives the 410 error).
  absl::Status ListAll(const Resource& r, std::string_view ns, ListOptions options,
                       absl::FunctionRef<absl::Status(const ListPage&)> on_page);

  absl::StatusOr<std::string> Create(const Resource& r, std::string_view ns,
                                     std::string_view object_json);
  // PUT; the object's metadata.resourceVersion, when set, is the concurrency precondition.
  absl::StatusOr<std::string> Update(const Resource& r, std::string_view ns, std::string_view name,
                                     std::string_view object_json);
  absl::StatusOr<std::string> UpdateStatus(const Resource& r, std::string_view ns,
                                           std::string_view name, std::string_view object_json);
  absl::StatusOr<std::string> Patch(const Resource& r, std::string_view ns, std::string_view name,
                                    PatchType type, std::string_view patch,
                                    const PatchOptions& options = {},
                                    std::string_view subresource = {});
  // Server-side apply of a full intent (apiVersion, kind, metadata.name, the fields we own).
  absl::StatusOr<std::string> Apply(const Resource& r, std::string_view ns, std::string_view name,
                                    std::string_view object_json, const PatchOptions& options);
  // Returns the API server's answer (the object while it finalizes, or a Status).
  absl::StatusOr<std::string> Delete(const Resource& r, std::string_view ns, std::string_view name,
                                     const DeleteOptions& options = {});
  // POST pods/<name>/eviction. 429 (IsTooManyRequests) when a PodDisruptionBudget forbids it;
  // not retried here: the caller decides when to try again.
  absl::Status Evict(std::string_view ns, std::string_view name, const DeleteOptions& options = {});

  // Opens a watch; see RestClient::Stream. The body is newline-delimited watch events.
  absl::Status Watch(const Resource& r, std::string_view ns, std::string_view resource_version,
                     const ListOptions& filter, int timeout_seconds,
                     absl::FunctionRef<bool(std::string_view)> on_data,
                     const std::atomic<bool>* cancel);

  RestClient& rest() { return rest_; }

 private:
  absl::Status CheckGate() const;
  absl::StatusOr<std::string> Send(std::string method, std::string path, std::string body,
                                   std::string content_type, bool retry = true);

  RestClient& rest_;
  const WriteGate* gate_;
};

// The JSON body of a DeleteOptions (also used inside an Eviction).
std::string DeleteOptionsJson(const DeleteOptions& options);

}  // namespace dovetail::kube
