// Informer: keeps a Store of one kind in step with the API server, as client-go's reflector and
// shared informer do, and tells handlers about every change.
//  - Lists in pages (limit/continue) and then watches from the list's resourceVersion with
//    bookmarks enabled, so reconnecting resumes where the last event or bookmark left off.
//  - On 410 Gone (the version was compacted away, as a watch ERROR event or an HTTP answer) it
//    lists again and reconciles the cache: new objects are added, changed ones (different
//    resourceVersion) updated, missing ones deleted; unchanged ones produce no event.
//  - Disconnects and errors back off exponentially (with jitter), then re-watch from the last
//    known version; a watch line that is not a well-formed event forces a re-list (never a
//    silent gap).
//  - Objects are decoded one by one: an object the codec cannot decode (undecodable.h) never
//    fails a list or a watch. It is skipped, counted (stats().decode_errors and, with
//    options.metrics, dovetail_informer_decode_errors_total{kind}) and logged once per
//    (kind, namespace/name, resourceVersion) with the decode error (once per process when the
//    informers share options.undecodable). The cache then follows one rule:
//    an undecodable object still exists on the server, so it never removes what is cached.
//      * list item or ADDED/MODIFIED event: the cached version of that key, if any, is kept (no
//        handler is called); a key never decoded stays absent. A re-list does not sweep a key
//        whose item was present but undecodable.
//      * DELETED event: the object is deleted by the key read from its metadata, and on_delete
//        gets the cached version; when not even the name can be read, the informer re-lists
//        (which sweeps it).
//  - An optional resync period re-delivers every cached object as an update.
//  - HasSynced()/WaitForSync() open once the first complete list is in the cache: controllers
//    must not act before (upstream's provisioning and disruption wait for a synced cluster state).
// Objects are decoded from the wire with simdjson On-Demand by a Codec:
//   struct Codec {
//     using Object = ...;
//     absl::Status Decode(simdjson::ondemand::object, Object&) const;
//     std::string Key(const Object&) const;                   // "ns/name" or "name"
//     std::string_view ResourceVersion(const Object&) const;
//   };
// PodCodec and NodeCodec (compact structs of objects.h) and ApiObjectCodec<T> (full apis structs
// for low-volume kinds) are provided.
// Handlers: AddHandler returns a HandlerRegistration (handler_registration.h); the handler is
// called while the registration lives, and never again once it is reset or destroyed, which waits
// for a call in progress. Handlers are called one at a time (from the watch or the resync
// thread), after the store has been updated, never concurrently. AddHandler and Reset may be
// called from any thread at any time, also from within a handler call: the handlers of an event
// are those registered when its dispatch began. A handler added after Start() gets the events
// from then on, not the objects already cached (list the store for those), and may be called
// before AddHandler returns.
// Threading: Start() runs one watch thread (plus one resync thread when resync is on). The store
// may be read from any thread. Stop() is idempotent and joins the threads; no handler is called
// after it returns.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/common/thread_entry.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/handler_registration.h"
#include "dovetail/kube/objects.h"
#include "dovetail/kube/rate_limiter.h"
#include "dovetail/kube/store.h"
#include "dovetail/kube/undecodable.h"
#include "dovetail/kube/watch_event.h"
#include "dovetail/kube/wire.h"
#include "dovetail/metrics/registry.h"
#include "nlohmann/json.hpp"
#include "simdjson.h"

namespace dovetail::kube {

struct InformerOptions {
  std::string ns;  // empty: all namespaces
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  absl::Duration resync_period = absl::ZeroDuration();  // zero: no resync
  // Each watch asks the server to end it after a random time in [min, 2*min].
  int watch_timeout_seconds = 300;
  Backoff::Options backoff = {.initial = absl::Milliseconds(100), .max = absl::Seconds(30)};
  // Where to count undecodable objects (kInformerDecodeErrorsMetric); null: nowhere.
  metrics::Registry* metrics = nullptr;
  // Which undecodable versions were logged, shared by the informers of a process so that each
  // is logged once however many informers watch its kind; null: the informer's own.
  UndecodableReports* undecodable = nullptr;

  // A copy with `registry` and `reports` set (the operator's, from controllers::Dependencies).
  InformerOptions WithReporting(metrics::Registry* registry, UndecodableReports* reports) const {
    InformerOptions out = *this;
    out.metrics = registry;
    out.undecodable = reports;
    return out;
  }
};

struct InformerStats {
  int64_t lists = 0;    // complete (re-)lists
  int64_t gone = 0;     // 410 Gone answers that forced a re-list
  int64_t watches = 0;  // watch connections opened
  int64_t errors = 0;   // failed lists/watches (each followed by a backoff)
  int64_t events = 0;   // watch events applied (ADDED/MODIFIED/DELETED)
  int64_t bookmarks = 0;
  int64_t decode_errors = 0;  // list items and watch events skipped as undecodable
  std::string last_error;     // the most recent failure, for diagnostics
};

template <typename T>
struct EventHandler {
  std::function<void(const std::shared_ptr<const T>&)> on_add;
  std::function<void(const std::shared_ptr<const T>& old, const std::shared_ptr<const T>& now)>
      on_update;
  std::function<void(const std::shared_ptr<const T>&)> on_delete;  // last known state
};

struct PodCodec {
  using Object = PodInfo;
  const DecodeContext* ctx;
  absl::Status Decode(simdjson::ondemand::object obj, PodInfo& out) const {
    return DecodePod(obj, *ctx, out);
  }
  std::string Key(const PodInfo& pod) const { return pod.meta.Key(); }
  std::string_view ResourceVersion(const PodInfo& pod) const { return pod.meta.resource_version; }
};

struct NodeCodec {
  using Object = NodeInfo;
  const DecodeContext* ctx;
  absl::Status Decode(simdjson::ondemand::object obj, NodeInfo& out) const {
    return DecodeNode(obj, *ctx, out);
  }
  std::string Key(const NodeInfo& node) const { return node.meta.Key(); }
  std::string_view ResourceVersion(const NodeInfo& node) const {
    return node.meta.resource_version;
  }
};

// Any dovetail/apis struct with a `metadata` ObjectMeta and a codec (DecodeJson). The object's
// text is decoded through a transient nlohmann value; unknown fields are dropped.
template <typename T>
struct ApiObjectCodec {
  using Object = T;
  absl::Status Decode(simdjson::ondemand::object obj, T& out) const {
    std::string_view raw;
    if (auto error = obj.raw_json().get(raw); error) {
      return absl::InvalidArgumentError(simdjson::error_message(error));
    }
    const nlohmann::json json = nlohmann::json::parse(raw, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) return absl::InvalidArgumentError("object: malformed JSON");
    return apis::core::DecodeJson(json, out, {.keep_unknown_fields = false});
  }
  std::string Key(const T& obj) const {
    if (obj.metadata.namespace_.empty()) return obj.metadata.name;
    return obj.metadata.namespace_ + "/" + obj.metadata.name;
  }
  std::string_view ResourceVersion(const T& obj) const { return obj.metadata.resource_version; }
};

// Decodes one list item or watch event object with `codec` into `out`. When the codec refuses
// it, `decode_error` gets the codec's error, `skipped` the object's identity (ReadObjectIdentity),
// and the object's text is read whole from its start, which leaves the parser after it however
// deep into it the codec stopped, so the rest of the page or event reads on. Errors: a JSON
// structure that cannot be walked (the page or line is unreadable past this point), including
// one the codec's read left `doc` dead on (simdjson abandons such a document, and reading the
// object again would dereference its released parser).
template <typename Codec>
absl::Status DecodeOrIdentify(const Codec& codec, simdjson::ondemand::object item,
                              simdjson::ondemand::document& doc, typename Codec::Object& out,
                              absl::Status& decode_error, std::optional<ObjectIdentity>& skipped) {
  decode_error = codec.Decode(item, out);
  if (decode_error.ok()) return absl::OkStatus();
  if (!doc.is_alive()) {
    return absl::InvalidArgumentError(
        Cat("skipped object: the JSON cannot be read past it: ", decode_error.message()));
  }
  bool not_empty = false;
  if (auto e = item.reset().get(not_empty); e) return internal::JsonError(e, "skipped object");
  std::string_view raw;
  if (auto e = item.raw_json().get(raw); e) return internal::JsonError(e, "skipped object");
  skipped = ReadObjectIdentity(raw);
  return absl::OkStatus();
}

template <typename Codec>
class Informer {
 public:
  using T = typename Codec::Object;
  using Ptr = std::shared_ptr<const T>;

  Informer(Client& client, const Resource& resource, Codec codec, InformerOptions options = {})
      : client_(client),
        resource_(resource),
        codec_(std::move(codec)),
        options_(std::move(options)),
        decode_errors_(options_.metrics == nullptr
                           ? nullptr
                           : &options_.metrics->NewCounter(
                                 kInformerDecodeErrorsMetric,
                                 "Objects an informer skipped because they could not be decoded, "
                                 "per list item or watch event that carried one.",
                                 {"kind"})) {}
  ~Informer() { Stop(); }
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  Store<T>& store() { return store_; }
  const Store<T>& store() const { return store_; }

  // Registers `handler` until the registration is reset or destroyed (the contract in the header
  // and in handler_registration.h).
  [[nodiscard]] HandlerRegistration AddHandler(EventHandler<T> handler) {
    auto slot = std::make_shared<Slot>(std::move(handler));
    absl::MutexLock lock(&handlers_mu_);
    auto next = std::make_shared<Handlers>();
    for (const std::shared_ptr<Slot>& s : *handlers_) {
      if (!s->removed()) next->push_back(s);
    }
    next->push_back(slot);
    handlers_ = std::move(next);
    return HandlerRegistration(std::move(slot));
  }

  void Start() {
    absl::MutexLock lock(&mu_);
    if (started_) return;
    started_ = true;
    thread_ = StartThread("informer", [this] { Run(); });
    if (options_.resync_period > absl::ZeroDuration()) {
      resync_thread_ = StartThread("informer-resync", [this] { ResyncLoop(); });
    }
  }

  void Stop() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    cancel_.store(true);
    if (thread_.joinable()) thread_.join();
    if (resync_thread_.joinable()) resync_thread_.join();
  }

  bool HasSynced() const {
    absl::MutexLock lock(&mu_);
    return synced_;
  }

  // True once synced; false when `deadline` passed or the informer was stopped first.
  bool WaitForSync(absl::Time deadline) const {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return synced_ || stopping_; };
    mu_.AwaitWithDeadline(absl::Condition(&ready), deadline);
    return synced_;
  }

  std::string last_resource_version() const {
    absl::MutexLock lock(&mu_);
    return resource_version_;
  }

  InformerStats stats() const {
    absl::MutexLock lock(&mu_);
    return stats_;
  }

 private:
  void Run() {
    Backoff backoff(options_.backoff);
    bool need_list = true;
    while (!IsStopping()) {
      absl::Status status;
      if (need_list) {
        status = Relist();
        if (status.ok()) {
          need_list = false;
        } else if (IsStopping()) {
          break;
        } else {
          CountError(status);
          WaitOrStop(backoff.Next());
          continue;
        }
      }
      bool received = false;
      status = WatchOnce(received);
      if (IsStopping()) break;
      if (IsGone(status)) {
        absl::MutexLock lock(&mu_);
        ++stats_.gone;
        need_list = true;
        continue;
      }
      if (!status.ok()) {
        CountError(status);
        // A decode failure or a dropped mid-line event leaves a possible gap: re-list.
        if (absl::IsInvalidArgument(status) && HttpCodeOf(status) == 0) need_list = true;
        WaitOrStop(backoff.Next());
        continue;
      }
      if (received) {
        backoff.Reset();
      } else {
        WaitOrStop(backoff.Next());
      }
    }
  }

  bool IsStopping() const {
    absl::MutexLock lock(&mu_);
    return stopping_;
  }

  void CountError(const absl::Status& status) {
    absl::MutexLock lock(&mu_);
    ++stats_.errors;
    stats_.last_error = status.ToString();
  }

  void WaitOrStop(absl::Duration d) const {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), d);
  }

  absl::Status Relist() {
    ListOptions list_options{.label_selector = options_.label_selector,
                             .field_selector = options_.field_selector,
                             .limit = options_.page_size};
    absl::flat_hash_set<std::string> seen;
    std::string list_rv;
    absl::Status decode_status;
    RETURN_IF_ERROR(client_.ListAll(
        resource_, options_.ns, list_options, [&](const ListPage& page) -> absl::Status {
          if (IsStopping()) return absl::CancelledError("informer stopped");
          std::string body = page.body;
          ListMeta meta;
          std::vector<Ptr> objects;
          std::vector<std::string> undecodable_keys;
          RETURN_IF_ERROR(ParseList(parser_, body, meta,
                                    [&](simdjson::ondemand::object item,
                                        simdjson::ondemand::document& doc) -> absl::Status {
                                      Ptr obj;
                                      std::optional<ObjectIdentity> skipped;
                                      RETURN_IF_ERROR(DecodeOrSkip(item, doc, obj, skipped));
                                      if (obj != nullptr) {
                                        objects.push_back(std::move(obj));
                                      } else if (std::string key = skipped->Key(); !key.empty()) {
                                        undecodable_keys.push_back(std::move(key));
                                      }
                                      return absl::OkStatus();
                                    }));
          if (list_rv.empty()) list_rv = meta.resource_version;
          // Present but undecodable: still on the server, so its cached version is not swept.
          for (std::string& key : undecodable_keys) seen.insert(std::move(key));
          absl::MutexLock dispatch(&dispatch_mu_);
          for (Ptr& obj : objects) {
            std::string key = codec_.Key(*obj);
            Ptr old = store_.Get(key);
            seen.insert(key);
            if (old != nullptr && codec_.ResourceVersion(*old) == codec_.ResourceVersion(*obj)) {
              continue;
            }
            store_.Upsert(key, obj);
            Dispatch(old, obj, /*deleted=*/false);
          }
          return absl::OkStatus();
        }));
    {
      absl::MutexLock dispatch(&dispatch_mu_);
      for (const std::string& key : store_.Keys()) {
        if (seen.contains(key)) continue;
        Ptr old = store_.Remove(key);
        if (old != nullptr) Dispatch(old, old, /*deleted=*/true);
      }
    }
    absl::MutexLock lock(&mu_);
    resource_version_ = list_rv;
    synced_ = true;
    ++stats_.lists;
    return absl::OkStatus();
  }

  absl::Status WatchOnce(bool& received) {
    const std::string rv = last_resource_version();
    thread_local absl::BitGen gen;
    const int timeout = options_.watch_timeout_seconds +
                        absl::Uniform(gen, 0, std::max(1, options_.watch_timeout_seconds));
    {
      absl::MutexLock lock(&mu_);
      ++stats_.watches;
    }
    WatchLineSplitter splitter;
    absl::Status stream_error;
    const ListOptions filter{.label_selector = options_.label_selector,
                             .field_selector = options_.field_selector};
    absl::Status status = client_.Watch(
        resource_, options_.ns, rv, filter, timeout,
        [&](std::string_view chunk) {
          received = true;
          stream_error = splitter.Feed(chunk, [&](const char* line, size_t len, size_t cap) {
            return ApplyEvent(line, len, cap);
          });
          return stream_error.ok();
        },
        &cancel_);
    if (!stream_error.ok()) return stream_error;
    return status;
  }

  absl::Status ApplyEvent(const char* line, size_t length, size_t capacity) {
    WatchEventType type = WatchEventType::kError;
    std::string bookmark_rv;
    absl::Status error;
    Ptr obj;
    std::optional<ObjectIdentity> skipped;
    RETURN_IF_ERROR(
        ParseWatchEvent(parser_, line, length, capacity, type, bookmark_rv, error,
                        [&](simdjson::ondemand::object o, simdjson::ondemand::document& doc) {
                          return DecodeOrSkip(o, doc, obj, skipped);
                        }));
    if (type == WatchEventType::kError) {
      return error.ok() ? absl::UnknownError("watch ERROR event") : error;
    }
    if (type == WatchEventType::kBookmark) {
      absl::MutexLock lock(&mu_);
      if (!bookmark_rv.empty()) resource_version_ = bookmark_rv;
      ++stats_.bookmarks;
      return absl::OkStatus();
    }
    if (skipped.has_value()) return ApplyUndecodable(type, *skipped);
    if (obj == nullptr) return absl::InvalidArgumentError("watch event without object");
    const std::string key = codec_.Key(*obj);
    {
      absl::MutexLock dispatch(&dispatch_mu_);
      if (type == WatchEventType::kDeleted) {
        Ptr old = store_.Remove(key);
        if (old != nullptr) Dispatch(old, obj, /*deleted=*/true);
      } else {
        Ptr old = store_.Upsert(key, obj);
        Dispatch(old, obj, /*deleted=*/false);
      }
    }
    absl::MutexLock lock(&mu_);
    resource_version_ = std::string(codec_.ResourceVersion(*obj));
    ++stats_.events;
    return absl::OkStatus();
  }

  // An ADDED/MODIFIED/DELETED event whose object did not decode (the rule in the header).
  absl::Status ApplyUndecodable(WatchEventType type, const ObjectIdentity& id) {
    if (type == WatchEventType::kDeleted) {
      const std::string key = id.Key();
      if (key.empty()) {
        // Not deletable by key: a re-list (InvalidArgument without an HTTP code) sweeps it.
        return absl::InvalidArgumentError("watch: DELETED object without a readable name");
      }
      absl::MutexLock dispatch(&dispatch_mu_);
      Ptr old = store_.Remove(key);
      if (old != nullptr) Dispatch(old, old, /*deleted=*/true);
    }
    absl::MutexLock lock(&mu_);
    if (!id.resource_version.empty()) resource_version_ = id.resource_version;
    if (type == WatchEventType::kDeleted) ++stats_.events;
    return absl::OkStatus();
  }

  // Decodes one list item or event object into `out` (DecodeOrIdentify). An object the codec
  // refuses is skipped: `out` stays null, `skipped` gets its identity, it is counted and (the
  // first time) logged. Errors: those of DecodeOrIdentify.
  absl::Status DecodeOrSkip(simdjson::ondemand::object item, simdjson::ondemand::document& doc,
                            Ptr& out, std::optional<ObjectIdentity>& skipped) {
    auto decoded = std::make_shared<T>();
    absl::Status status;
    std::optional<ObjectIdentity> refused;
    RETURN_IF_ERROR(DecodeOrIdentify(codec_, item, doc, *decoded, status, refused));
    if (!refused.has_value()) {
      out = std::move(decoded);
      return absl::OkStatus();
    }
    ObjectIdentity id = std::move(*refused);
    UndecodableReports& reports =
        options_.undecodable != nullptr ? *options_.undecodable : own_reports_;
    if (reports.FirstReport(resource_.kind, id)) LogUndecodable(resource_.kind, id, status);
    if (decode_errors_ != nullptr) decode_errors_->Inc({std::string(resource_.kind)});
    {
      absl::MutexLock lock(&mu_);
      ++stats_.decode_errors;
    }
    skipped = std::move(id);
    return absl::OkStatus();
  }

  // Calls the handlers registered now (a copy of the list, so that handlers may add and reset
  // registrations), each unless removed, then drops the removed ones from the list.
  void Dispatch(const Ptr& old, const Ptr& now, bool deleted)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(dispatch_mu_) {
    std::shared_ptr<const Handlers> handlers;
    {
      absl::MutexLock lock(&handlers_mu_);
      handlers = handlers_;
    }
    bool removed = false;
    for (const std::shared_ptr<Slot>& slot : *handlers) {
      internal::HandlerCall call(*slot);
      if (!call) {
        removed = true;
        continue;
      }
      const EventHandler<T>& h = slot->handler;
      if (deleted) {
        if (h.on_delete) h.on_delete(now);
      } else if (old == nullptr) {
        if (h.on_add) h.on_add(now);
      } else if (h.on_update) {
        h.on_update(old, now);
      }
    }
    if (!removed) return;
    absl::MutexLock lock(&handlers_mu_);
    auto next = std::make_shared<Handlers>();
    for (const std::shared_ptr<Slot>& s : *handlers_) {
      if (!s->removed()) next->push_back(s);
    }
    handlers_ = std::move(next);
  }

  void ResyncLoop() {
    while (true) {
      WaitOrStop(options_.resync_period);
      if (IsStopping()) return;
      absl::MutexLock dispatch(&dispatch_mu_);
      for (const Ptr& obj : store_.List()) Dispatch(obj, obj, /*deleted=*/false);
    }
  }

  // One registered handler: its gate and its function objects.
  struct Slot final : internal::HandlerGate {
    explicit Slot(EventHandler<T> h) : handler(std::move(h)) {}
    void Release() override { handler = {}; }
    EventHandler<T> handler;
  };
  using Handlers = std::vector<std::shared_ptr<Slot>>;

  Client& client_;
  const Resource resource_;
  const Codec codec_;
  const InformerOptions options_;
  metrics::Counter* const decode_errors_;  // null without options_.metrics
  Store<T> store_;
  absl::Mutex handlers_mu_;  // never held while a handler runs
  // Replaced, never changed in place, so that a dispatch iterates over the list it took.
  std::shared_ptr<const Handlers> handlers_ ABSL_GUARDED_BY(handlers_mu_) =
      std::make_shared<const Handlers>();
  simdjson::ondemand::parser parser_;  // watch thread only
  UndecodableReports own_reports_;     // without options_.undecodable

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
  std::string resource_version_ ABSL_GUARDED_BY(mu_);
  InformerStats stats_ ABSL_GUARDED_BY(mu_);
  absl::Mutex dispatch_mu_;  // serialises store updates with handler calls
  std::atomic<bool> cancel_{false};
  std::thread thread_;
  std::thread resync_thread_;
};

// Index functions for the indexes the issue names.
inline void PodsByNodeName(const PodInfo& pod, std::vector<std::string>& out) {
  if (!pod.node_name.empty()) out.push_back(pod.node_name);
}
inline void PodsByNamespace(const PodInfo& pod, std::vector<std::string>& out) {
  out.push_back(*pod.meta.namespace_);
}
inline void PodsByOwnerUid(const PodInfo& pod, std::vector<std::string>& out) {
  for (const OwnerRef& owner : pod.meta.owners) out.push_back(owner.uid);
}
inline void NodesByProviderId(const NodeInfo& node, std::vector<std::string>& out) {
  if (!node.provider_id.empty()) out.push_back(node.provider_id);
}
// NodeClaims (apis::v1::NodeClaim) by their karpenter.sh/nodepool label.
template <typename NodeClaimT>
void NodeClaimsByNodePool(const NodeClaimT& claim, std::vector<std::string>& out) {
  auto it = claim.metadata.labels.find("karpenter.sh/nodepool");
  if (it != claim.metadata.labels.end()) out.push_back(it->second);
}

inline constexpr char kIndexNodeName[] = "spec.nodeName";
inline constexpr char kIndexNamespace[] = "metadata.namespace";
inline constexpr char kIndexOwnerUid[] = "metadata.ownerReferences.uid";
inline constexpr char kIndexProviderId[] = "spec.providerID";
inline constexpr char kIndexNodePool[] = "karpenter.sh/nodepool";

}  // namespace dovetail::kube
