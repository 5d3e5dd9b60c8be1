// An HTTP proxy in front of the real API server that injects faults: every Nth request answered
// 500, every Nth write answered 409 Conflict, every Nth request answered 429 with Retry-After,
// watch streams cut abruptly after N bytes (mid-event), responses delayed, everything refused
// (a partition), or one named object rewritten into well-formed JSON that no decoder accepts,
// wherever a List or a watch event carries it. Clients talk plain HTTP to it; it talks to the API
// server with the fixture's credentials through a kube::RestClient without retries.
// Test-only. Thread-safe (httplib serves requests on its own thread pool).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "dovetail/kube/config.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/rest_client.h"
#include "httplib.h"
#include "nlohmann/json.hpp"

namespace dovetail::kube::testing {

struct Faults {
  int fail_every = 0;          // every Nth request gets a 500 (0: never)
  size_t cut_watch_after = 0;  // cut a watch mid-chunk once it carried this many bytes
  absl::Duration delay = absl::ZeroDuration();  // before answering
  bool partition = false;                       // refuse everything with 503 and end open watches
  // Every Nth write that the API server could answer 409 Conflict (an update, a patch carrying a
  // resourceVersion or a JSON-patch `test`, a delete with preconditions) gets 409 Conflict, as if
  // another writer had changed the object first (0: never). The API server never saw it.
  int conflict_every = 0;
  // Every Nth request gets 429 TooManyRequests with `Retry-After: retry_after_seconds`, as the
  // API server's priority and fairness answers (0: never). Not applied to watches.
  int throttle_every = 0;
  int retry_after_seconds = 1;
  // metadata.name of an object to rewrite in List items and watch events: its metadata is kept,
  // its spec becomes a string and its status an array (see Undecodable()). Empty: none.
  std::string undecodable;
};

class FaultProxy {
 public:
  explicit FaultProxy(const RestConfig& upstream) {
    auto rest = RestClient::Create(upstream, {.max_retries = 0});
    upstream_ = std::move(*rest);
    auto handler = [this](const httplib::Request& req, httplib::Response& res) { Serve(req, res); };
    server_.Get(".*", handler);
    server_.Post(".*", handler);
    server_.Put(".*", handler);
    server_.Patch(".*", handler);
    server_.Delete(".*", handler);
    // Every informer's watch holds one server thread for as long as it runs, and the process has
    // one informer per kind (state/cluster_informers.h): httplib's default pool (8 threads on a
    // small machine) would leave the last informers' lists waiting forever.
    server_.new_task_queue = [] { return new httplib::ThreadPool(64); };
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (!server_.is_running() && absl::Now() < deadline) std::this_thread::yield();
  }

  ~FaultProxy() {
    SetFaults({.partition = true});  // ends open watches
    server_.stop();
    thread_.join();
  }

  RestConfig ClientConfig() const {
    RestConfig config;
    config.server = "http://127.0.0.1:" + std::to_string(port_);
    config.qps = 0;
    return config;
  }

  void SetFaults(Faults faults) {
    absl::MutexLock lock(&mu_);
    faults_ = faults;
    partitioned_.store(faults.partition);
  }

  int64_t injected() const { return injected_.load(); }
  int64_t throttled() const { return throttled_.load(); }

  // `object` with its spec and status replaced by values of the wrong JSON type, independent of
  // the object's kind and fields; metadata is kept, so a client can still name it. Ordered JSON
  // throughout: the API server writes a watch event's "type" before its "object", and clients
  // may rely on it.
  static nlohmann::ordered_json Undecodable(const nlohmann::ordered_json& object) {
    nlohmann::ordered_json out = object;
    out["spec"] = "undecodable: rewritten by the fault proxy";
    out["status"] = nlohmann::ordered_json::array({1, 2, 3});
    return out;
  }

 private:
  Faults faults() {
    absl::MutexLock lock(&mu_);
    return faults_;
  }

  static void WriteStatus(httplib::Response& res, int code, const std::string& reason,
                          const std::string& message) {
    res.status = code;
    res.set_content(nlohmann::json({{"kind", "Status"},
                                    {"apiVersion", "v1"},
                                    {"status", "Failure"},
                                    {"code", code},
                                    {"reason", reason},
                                    {"message", message}})
                        .dump(),
                    "application/json");
  }

  // A List body with the items named `name` made undecodable; other bodies unchanged.
  std::string RewriteList(const std::string& body, const std::string& name) {
    nlohmann::ordered_json list =
        nlohmann::ordered_json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) return body;
    bool rewritten = false;
    for (nlohmann::ordered_json& item : list["items"]) {
      if (item.value("/metadata/name"_json_pointer, "") != name) continue;
      item = Undecodable(item);
      rewritten = true;
      ++injected_;
    }
    return rewritten ? list.dump() : body;
  }

  // One watch event line (without its newline), rewritten if its object is named `name`.
  std::string RewriteEvent(std::string line, const std::string& name) {
    if (name.empty() || line.find("\"" + name + "\"") == std::string::npos) return line;
    nlohmann::ordered_json event =
        nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!event.is_object() || !event.contains("object") ||
        event["object"].value("/metadata/name"_json_pointer, "") != name) {
      return line;
    }
    event["object"] = Undecodable(event["object"]);
    ++injected_;
    return event.dump();
  }

  void Serve(const httplib::Request& req, httplib::Response& res) {
    const Faults f = faults();
    const int64_t n = ++requests_;
    if (f.delay > absl::ZeroDuration()) absl::SleepFor(f.delay);
    if (f.partition) {
      ++injected_;
      return WriteStatus(res, 503, "ServiceUnavailable", "injected partition");
    }
    if (f.fail_every > 0 && n % f.fail_every == 0) {
      ++injected_;
      return WriteStatus(res, 500, "InternalError", "injected failure");
    }
    const bool may_conflict =
        req.method == "PUT" ||
        (req.method == "PATCH" && (req.body.find("\"resourceVersion\"") != std::string::npos ||
                                   req.body.find("\"test\"") != std::string::npos)) ||
        (req.method == "DELETE" && req.body.find("\"preconditions\"") != std::string::npos);
    if (may_conflict && f.conflict_every > 0 && ++writes_ % f.conflict_every == 0) {
      ++injected_;
      return WriteStatus(res, 409, "Conflict",
                         "Operation cannot be fulfilled: the object has been modified (injected)");
    }
    const bool watch = req.target.find("watch=1") != std::string::npos ||
                       req.target.find("watch=true") != std::string::npos;
    if (!watch && f.throttle_every > 0 && n % f.throttle_every == 0) {
      ++injected_;
      ++throttled_;
      res.set_header("Retry-After", std::to_string(f.retry_after_seconds));
      return WriteStatus(res, 429, "TooManyRequests",
                         "injected throttling, please try again later");
    }
    HttpRequest up{.method = req.method,
                   .path = req.target,
                   .body = req.body,
                   .content_type = req.get_header_value("Content-Type"),
                   .retry = false};
    if (!watch) {
      absl::StatusOr<HttpResponse> response = upstream_->Do(up);
      if (response.ok()) {
        res.status = response->code;
        res.set_content(
            f.undecodable.empty() ? response->body : RewriteList(response->body, f.undecodable),
            "application/json");
      } else {
        const int code = HttpCodeOf(response.status());
        WriteStatus(res, code == 0 ? 502 : code, ReasonOf(response.status()),
                    std::string(response.status().message()));
      }
      return;
    }
    up.timeout = absl::ZeroDuration();
    const size_t cut = f.cut_watch_after;
    // The API server's watch media type; httplib does not gzip it (gzip would buffer events).
    res.set_chunked_content_provider(
        "application/json;stream=watch", [this, up, cut](size_t, httplib::DataSink& sink) {
          size_t sent = 0;
          bool cut_now = false;
          std::string pending;    // an incomplete event line (while `undecodable` is set)
          std::string rewritten;  // the complete lines of one chunk, rewritten
          absl::Status status = upstream_->Stream(
              up,
              [&](std::string_view chunk) {
                if (partitioned_.load()) return false;
                // Read at every chunk: clearing the fault takes effect on open watches too.
                const std::string undecodable = faults().undecodable;
                if (!undecodable.empty() || !pending.empty()) {
                  pending.append(chunk);
                  rewritten.clear();
                  size_t start = 0;
                  for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos;
                       start = nl + 1) {
                    rewritten += RewriteEvent(pending.substr(start, nl - start), undecodable);
                    rewritten += '\n';
                  }
                  pending.erase(0, start);
                  if (rewritten.empty()) return true;
                  chunk = rewritten;
                }
                if (cut > 0 && sent >= cut) {
                  // Send part of the chunk, then drop the connection mid-event.
                  sink.write(chunk.data(), chunk.size() / 2);
                  cut_now = true;
                  ++injected_;
                  return false;
                }
                sent += chunk.size();
                return sink.write(chunk.data(), chunk.size());
              },
              &partitioned_);
          if (cut_now || partitioned_.load()) return false;  // abrupt close
          if (!status.ok()) {
            const std::string line =
                nlohmann::json({{"type", "ERROR"},
                                {"object",
                                 {{"kind", "Status"},
                                  {"code", HttpCodeOf(status) == 0 ? 500 : HttpCodeOf(status)},
                                  {"reason", ReasonOf(status)},
                                  {"message", std::string(status.message())}}}})
                    .dump() +
                "\n";
            sink.write(line.data(), line.size());
          }
          sink.done();
          return true;
        });
  }

  std::unique_ptr<RestClient> upstream_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  absl::Mutex mu_;
  Faults faults_;
  std::atomic<bool> partitioned_{false};
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> injected_{0};
  std::atomic<int64_t> throttled_{0};
  std::atomic<int64_t> writes_{0};
};

}  // namespace dovetail::kube::testing
