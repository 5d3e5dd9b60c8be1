#include "dovetail/kube/client.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "nlohmann/json.hpp"

namespace dovetail::kube {
namespace {

void AddParam(std::string& query, std::string_view name, std::string_view value) {
  if (value.empty()) return;
  CatTo(&query, query.empty() ? "?" : "&", name, "=", UrlEncode(value));
}

std::string ListQuery(const ListOptions& options) {
  std::string query;
  AddParam(query, "labelSelector", options.label_selector);
  AddParam(query, "fieldSelector", options.field_selector);
  if (options.limit > 0) AddParam(query, "limit", absl::StrCat(options.limit));
  AddParam(query, "continue", options.continue_token);
  AddParam(query, "resourceVersion", options.resource_version);
  return query;
}

std::string_view PropagationName(PropagationPolicy policy) {
  switch (policy) {
    case PropagationPolicy::kOrphan:
      return "Orphan";
    case PropagationPolicy::kBackground:
      return "Background";
    case PropagationPolicy::kForeground:
      return "Foreground";
  }
  return "Background";
}

std::string_view PatchContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

nlohmann::json DeleteOptionsObject(const DeleteOptions& options) {
  nlohmann::json body = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (options.precondition_uid || options.precondition_resource_version) {
    nlohmann::json pre = nlohmann::json::object();
    if (options.precondition_uid) pre["uid"] = *options.precondition_uid;
    if (options.precondition_resource_version) {
      pre["resourceVersion"] = *options.precondition_resource_version;
    }
    body["preconditions"] = std::move(pre);
  }
  if (options.propagation_policy) {
    body["propagationPolicy"] = std::string(PropagationName(*options.propagation_policy));
  }
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  return body;
}

}  // namespace

std::string DeleteOptionsJson(const DeleteOptions& options) {
  return DeleteOptionsObject(options).dump();
}

absl::Status Client::CheckGate() const {
  if (gate_ != nullptr && !gate_->is_open()) {
    return absl::FailedPreconditionError("writes are disabled: not the leader");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Client::Send(std::string method, std::string path, std::string body,
                                         std::string content_type, bool retry) {
  const bool write = method != "GET";
  if (write) RETURN_IF_ERROR(CheckGate());
  HttpRequest request{.method = std::move(method),
                      .path = std::move(path),
                      .body = std::move(body),
                      .content_type = std::move(content_type),
                      .retry = retry};
  // Every retry of a write passes the gate again: none goes out once leadership is lost.
  if (write && gate_ != nullptr) request.precondition = [this] { return CheckGate(); };
  ASSIGN_OR_RETURN(HttpResponse response, rest_.Do(request));
  return std::move(response.body);
}

absl::StatusOr<std::string> Client::Get(const Resource& r, std::string_view ns,
                                        std::string_view name) {
  return Send("GET", ResourcePath(r, ns, name), "", "");
}

absl::StatusOr<ListPage> Client::List(const Resource& r, std::string_view ns,
                                      const ListOptions& options) {
  ASSIGN_OR_RETURN(std::string body, Send("GET", ResourcePath(r, ns) + ListQuery(options), "", ""));
  ListPage page;
  // Only the list metadata is read here; items stay text for the caller's decoder.
  const nlohmann::json json = nlohmann::json::parse(body, nullptr, false);
  if (!json.is_object()) return absl::InternalError("list response is not a JSON object");
  if (auto it = json.find("metadata"); it != json.end() && it->is_object()) {
    page.resource_version = it->value("resourceVersion", "");
    page.continue_token = it->value("continue", "");
  }
  page.body = std::move(body);
  return page;
}

absl::Status Client::ListAll(const Resource& r, std::string_view ns, ListOptions options,
                             absl::FunctionRef<absl::Status(const ListPage&)> on_page) {
  while (true) {
    ASSIGN_OR_RETURN(const ListPage page, List(r, ns, options));
    RETURN_IF_ERROR(on_page(page));
    if (page.continue_token.empty()) return absl::OkStatus();
    options.continue_token = page.continue_token;
    options.resource_version.clear();  // not allowed together with continue
  }
}

absl::StatusOr<std::string> Client::Create(const Resource& r, std::string_view ns,
                                           std::string_view object_json) {
  return Send("POST", ResourcePath(r, ns), std::string(object_json), "application/json");
}

absl::StatusOr<std::string> Client::Update(const Resource& r, std::string_view ns,
                                           std::string_view name, std::string_view object_json) {
  return Send("PUT", ResourcePath(r, ns, name), std::string(object_json), "application/json");
}

absl::StatusOr<std::string> Client::UpdateStatus(const Resource& r, std::string_view ns,
                                                 std::string_view name,
                                                 std::string_view object_json) {
  return Send("PUT", ResourcePath(r, ns, name, "status"), std::string(object_json),
              "application/json");
}

absl::StatusOr<std::string> Client::Patch(const Resource& r, std::string_view ns,
                                          std::string_view name, PatchType type,
                                          std::string_view patch, const PatchOptions& options,
                                          std::string_view subresource) {
  std::string query;
  AddParam(query, "fieldManager", options.field_manager);
  if (type == PatchType::kApply && options.force) AddParam(query, "force", "true");
  return Send("PATCH", ResourcePath(r, ns, name, subresource) + query, std::string(patch),
              std::string(PatchContentType(type)));
}

absl::StatusOr<std::string> Client::Apply(const Resource& r, std::string_view ns,
                                          std::string_view name, std::string_view object_json,
                                          const PatchOptions& options) {
  return Patch(r, ns, name, PatchType::kApply, object_json, options);
}

absl::StatusOr<std::string> Client::Delete(const Resource& r, std::string_view ns,
                                           std::string_view name, const DeleteOptions& options) {
  return Send("DELETE", ResourcePath(r, ns, name), DeleteOptionsJson(options), "application/json");
}

absl::Status Client::Evict(std::string_view ns, std::string_view name,
                           const DeleteOptions& options) {
  const nlohmann::json eviction = {
      {"apiVersion", "policy/v1"},
      {"kind", "Eviction"},
      {"metadata", {{"name", std::string(name)}, {"namespace", std::string(ns)}}},
      {"deleteOptions", DeleteOptionsObject(options)}};
  return Send("POST", ResourcePath(resources::kPods, ns, name, "eviction"), eviction.dump(),
              "application/json", /*retry=*/false)
      .status();
}

absl::Status Client::Watch(const Resource& r, std::string_view ns,
                           std::string_view resource_version, const ListOptions& filter,
                           int timeout_seconds, absl::FunctionRef<bool(std::string_view)> on_data,
                           const std::atomic<bool>* cancel) {
  std::string query = "?watch=1&allowWatchBookmarks=true";
  AddParam(query, "resourceVersion", resource_version);
  AddParam(query, "labelSelector", filter.label_selector);
  AddParam(query, "fieldSelector", filter.field_selector);
  AddParam(query, "timeoutSeconds", absl::StrCat(timeout_seconds));
  HttpRequest request{.method = "GET",
                      .path = ResourcePath(r, ns) + query,
                      .timeout = absl::Seconds(timeout_seconds + 30),
                      .retry = false};
  return rest_.Stream(request, on_data, cancel);
}

}  // namespace dovetail::kube
