// Typed access over kube::Client for the dovetail/apis structs (Pod, Node, NodePool, NodeClaim,
// EC2NodeClass, DaemonSet, PodDisruptionBudget, PV, PVC, StorageClass, CSINode, Namespace, ...):
// the same verbs, with objects encoded/decoded by the apis JSON codec (nlohmann; fine for
// writes and low-volume reads; informers use the simdjson decoders instead).
// Thread-safe (stateless apart from the Client reference).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/kube/client.h"
#include "nlohmann/json.hpp"

namespace dovetail::kube {

// Parses a JSON body. Errors: Internal (the API server never sends malformed JSON).
absl::StatusOr<nlohmann::json> ParseJsonBody(std::string_view body);

template <typename T>
class TypedClient {
 public:
  TypedClient(Client& client, const Resource& resource) : client_(client), resource_(resource) {}

  absl::StatusOr<T> Get(std::string_view ns, std::string_view name) {
    ASSIGN_OR_RETURN(const std::string body, client_.Get(resource_, ns, name));
    return Decode(body);
  }

  // Every page (limit/continue) of a list.
  absl::StatusOr<std::vector<T>> List(std::string_view ns, const ListOptions& options = {}) {
    std::vector<T> out;
    RETURN_IF_ERROR(client_.ListAll(resource_, ns, options, [&](const ListPage& page) {
      ASSIGN_OR_RETURN(const nlohmann::json json, ParseJsonBody(page.body));
      if (auto it = json.find("items"); it != json.end() && it->is_array()) {
        for (const nlohmann::json& item : *it) {
          T obj;
          RETURN_IF_ERROR(apis::core::DecodeJson(item, obj));
          out.push_back(std::move(obj));
        }
      }
      return absl::OkStatus();
    }));
    return out;
  }

  absl::StatusOr<T> Create(const T& obj) {
    ASSIGN_OR_RETURN(const std::string body,
                     client_.Create(resource_, obj.metadata.namespace_, Encode(obj)));
    return Decode(body);
  }
  // Optimistic concurrency: fails with IsConflict when obj.metadata.resource_version is stale.
  absl::StatusOr<T> Update(const T& obj) {
    ASSIGN_OR_RETURN(const std::string body, client_.Update(resource_, obj.metadata.namespace_,
                                                            obj.metadata.name, Encode(obj)));
    return Decode(body);
  }
  absl::StatusOr<T> UpdateStatus(const T& obj) {
    ASSIGN_OR_RETURN(
        const std::string body,
        client_.UpdateStatus(resource_, obj.metadata.namespace_, obj.metadata.name, Encode(obj)));
    return Decode(body);
  }
  absl::StatusOr<T> Patch(std::string_view ns, std::string_view name, PatchType type,
                          std::string_view patch, const PatchOptions& options = {},
                          std::string_view subresource = {}) {
    ASSIGN_OR_RETURN(const std::string body,
                     client_.Patch(resource_, ns, name, type, patch, options, subresource));
    return Decode(body);
  }
  absl::Status Delete(std::string_view ns, std::string_view name,
                      const DeleteOptions& options = {}) {
    return client_.Delete(resource_, ns, name, options).status();
  }

  // The object as the API server expects it, apiVersion and kind filled in.
  std::string Encode(const T& obj) const {
    nlohmann::json json = apis::core::EncodeJson(obj);
    json["apiVersion"] = resource_.api_version();
    json["kind"] = std::string(resource_.kind);
    return json.dump();
  }

 private:
  absl::StatusOr<T> Decode(std::string_view body) const {
    ASSIGN_OR_RETURN(const nlohmann::json json, ParseJsonBody(body));
    T obj;
    RETURN_IF_ERROR(apis::core::DecodeJson(json, obj));
    return obj;
  }

  Client& client_;
  const Resource resource_;
};

}  // namespace dovetail::kube
