#include "dovetail/kube/event_recorder.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/kube/wire.h"
#include "nlohmann/json.hpp"

namespace dovetail::kube {
namespace {

using internal::MicroTime;

}  // namespace

EventRecorder::EventRecorder(Client& client, const Clock& clock, EventRecorderOptions options)
    : client_(client), clock_(clock), options_(std::move(options)) {}

int64_t EventRecorder::dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

absl::Status EventRecorder::Record(const ObjectReference& regarding, std::string_view type,
                                   std::string_view reason, std::string_view action,
                                   std::string_view note) {
  const absl::Time now = clock_.Now();
  const std::string object_key =
      Cat(regarding.kind, "/", regarding.ns, "/", regarding.name, "/", regarding.uid);
  const std::string series_key =
      Cat(object_key, "\x1f", type, "\x1f", reason, "\x1f", action, "\x1f", note);
  std::string patch_ns;
  std::string patch_name;
  int32_t count = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = series_.find(series_key);
    if (it != series_.end() && now - it->second.last_seen < options_.series_window) {
      // A repeat: update the series (not rate limited; it is one small patch).
      it->second.count++;
      it->second.last_seen = now;
      patch_ns = it->second.event_namespace;
      patch_name = it->second.event_name;
      count = it->second.count;
    } else {
      auto& bucket = buckets_[object_key];
      if (bucket == nullptr) {
        bucket = std::make_unique<TokenBucket>(options_.qps_per_object, options_.burst, clock_);
      }
      if (bucket->Reserve() > absl::ZeroDuration()) {
        ++dropped_;
        return absl::ResourceExhaustedError("event rate limit for the object exceeded");
      }
    }
  }
  if (!patch_name.empty()) {
    const nlohmann::json patch = {
        {"series", {{"count", count}, {"lastObservedTime", MicroTime(now)}}}};
    return client_.Patch(resources::kEvents, patch_ns, patch_name, PatchType::kMerge, patch.dump())
        .status();
  }
  // Events of cluster-scoped objects live in "default".
  const std::string event_ns = regarding.ns.empty() ? "default" : regarding.ns;
  const std::string name =
      absl::StrFormat("%s.%x", regarding.name, static_cast<uint64_t>(absl::ToUnixNanos(now)));
  nlohmann::json regarding_json = {
      {"apiVersion", regarding.api_version}, {"kind", regarding.kind}, {"name", regarding.name}};
  if (!regarding.ns.empty()) regarding_json["namespace"] = regarding.ns;
  if (!regarding.uid.empty()) regarding_json["uid"] = regarding.uid;
  const nlohmann::json event = {
      {"apiVersion", "events.k8s.io/v1"},
      {"kind", "Event"},
      {"metadata", {{"name", name}, {"namespace", event_ns}}},
      {"eventTime", MicroTime(now)},
      {"reportingController", options_.reporting_controller},
      {"reportingInstance", options_.reporting_instance.empty() ? options_.reporting_controller
                                                                : options_.reporting_instance},
      {"action", std::string(action)},
      {"reason", std::string(reason)},
      {"regarding", regarding_json},
      {"note", std::string(note)},
      {"type", std::string(type)}};
  RETURN_IF_ERROR(client_.Create(resources::kEvents, event_ns, event.dump()).status());
  absl::MutexLock lock(&mu_);
  series_[series_key] =
      Series{.event_namespace = event_ns, .event_name = name, .count = 1, .last_seen = now};
  return absl::OkStatus();
}

}  // namespace dovetail::kube
