// Records events.k8s.io/v1 Events about objects, deduplicated and rate limited so a hot loop
// cannot flood the API server:
//  - the same (object, type, reason, action, note) seen again within `series_window` updates the
//    existing Event's series (count, lastObservedTime) with a merge patch instead of creating a
//    new one;
//  - each involved object has a token bucket (`burst`, refilled at `qps_per_object`); events
//    beyond it are dropped (Record returns ResourceExhausted) and counted.
// Record() is synchronous (one API call at most). Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/common/clock.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/rate_limiter.h"

namespace dovetail::kube {

struct ObjectReference {
  std::string api_version;
  std::string kind;
  std::string ns;  // empty for cluster-scoped objects
  std::string name;
  std::string uid;
};

struct EventRecorderOptions {
  std::string reporting_controller = "karpenter.sh/dovetail";
  std::string reporting_instance;
  absl::Duration series_window = absl::Minutes(6);
  double qps_per_object = 1.0 / 300;
  int burst = 25;
};

class EventRecorder {
 public:
  EventRecorder(Client& client, const Clock& clock, EventRecorderOptions options);

  // type is "Normal" or "Warning". Errors: ResourceExhausted (rate limited, dropped), or the
  // API error of the create/patch.
  absl::Status Record(const ObjectReference& regarding, std::string_view type,
                      std::string_view reason, std::string_view action, std::string_view note);

  int64_t dropped() const;

 private:
  struct Series {
    std::string event_namespace;
    std::string event_name;
    int32_t count = 1;
    absl::Time last_seen;
  };

  Client& client_;
  const Clock& clock_;
  const EventRecorderOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Series> series_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::unique_ptr<TokenBucket>> buckets_ ABSL_GUARDED_BY(mu_);
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace dovetail::kube
