#include "dovetail/kube/controller_util.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/typed_client.h"
#include "nlohmann/json.hpp"

namespace dovetail::kube {
namespace {

// Reads an object's finalizers, lets `edit` change them, and writes them back with the
// resourceVersion they were read at. No write when `edit` returns false.
absl::Status EditFinalizers(Client& client, const Resource& resource, std::string_view ns,
                            std::string_view name,
                            absl::FunctionRef<bool(std::vector<std::string>&)> edit) {
  return RetryOnConflict([&]() -> absl::Status {
    ASSIGN_OR_RETURN(const std::string body, client.Get(resource, ns, name));
    ASSIGN_OR_RETURN(const nlohmann::json object, ParseJsonBody(body));
    const nlohmann::json& metadata = object.at("metadata");
    std::vector<std::string> finalizers;
    if (auto it = metadata.find("finalizers"); it != metadata.end() && it->is_array()) {
      for (const auto& f : *it) {
        if (f.is_string()) finalizers.push_back(f.get<std::string>());
      }
    }
    if (!edit(finalizers)) return absl::OkStatus();
    const nlohmann::json patch = {
        {"metadata",
         {{"resourceVersion", metadata.value("resourceVersion", "")},
          {"finalizers",
           finalizers.empty() ? nlohmann::json(nullptr) : nlohmann::json(finalizers)}}}};
    return client.Patch(resource, ns, name, PatchType::kMerge, patch.dump()).status();
  });
}

}  // namespace

absl::StatusOr<nlohmann::json> ParseJsonBody(std::string_view body) {
  nlohmann::json json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return absl::InternalError("API server sent malformed JSON");
  return json;
}

absl::Status RetryOnConflict(absl::FunctionRef<absl::Status()> fn,
                             const ConflictRetryOptions& options) {
  Backoff backoff(options.backoff);
  absl::Status status;
  for (int attempt = 0; attempt < std::max(1, options.attempts); ++attempt) {
    if (attempt > 0) absl::SleepFor(backoff.Next());
    status = fn();
    if (!IsConflict(status)) return status;
  }
  return status;
}

absl::Status AddFinalizer(Client& client, const Resource& resource, std::string_view ns,
                          std::string_view name, std::string_view finalizer) {
  return EditFinalizers(client, resource, ns, name, [&](std::vector<std::string>& finalizers) {
    if (std::find(finalizers.begin(), finalizers.end(), finalizer) != finalizers.end()) {
      return false;
    }
    finalizers.emplace_back(finalizer);
    return true;
  });
}

absl::Status RemoveFinalizer(Client& client, const Resource& resource, std::string_view ns,
                             std::string_view name, std::string_view finalizer) {
  absl::Status status =
      EditFinalizers(client, resource, ns, name, [&](std::vector<std::string>& finalizers) {
        auto it = std::find(finalizers.begin(), finalizers.end(), finalizer);
        if (it == finalizers.end()) return false;
        finalizers.erase(it);
        return true;
      });
  if (kube::IsNotFound(status)) return absl::OkStatus();
  return status;
}

apis::core::OwnerReference ControllerReference(std::string_view api_version, std::string_view kind,
                                               std::string_view name, std::string_view uid) {
  return apis::core::OwnerReference{.api_version = std::string(api_version),
                                    .kind = std::string(kind),
                                    .name = std::string(name),
                                    .uid = std::string(uid),
                                    .controller = true,
                                    .block_owner_deletion = true};
}

const OwnerRef* ControllerOf(const CompactMeta& meta) {
  for (const OwnerRef& owner : meta.owners) {
    if (owner.controller) return &owner;
  }
  return nullptr;
}

const apis::core::OwnerReference* ControllerOf(const apis::core::ObjectMeta& meta) {
  for (const apis::core::OwnerReference& owner : meta.owner_references) {
    if (owner.controller.value_or(false)) return &owner;
  }
  return nullptr;
}

bool IsOwnedBy(const CompactMeta& meta, std::string_view owner_uid) {
  return std::any_of(meta.owners.begin(), meta.owners.end(),
                     [&](const OwnerRef& owner) { return owner.uid == owner_uid; });
}

}  // namespace dovetail::kube
