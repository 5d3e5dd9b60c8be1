// Test builders for dovetail/state: Nodes and Pods are written as the API server's JSON and
// decoded by the informers' own decoders (kube::DecodeNode / DecodePod), NodeClaims by the apis
// codec, so the unit tests feed Cluster exactly what the informers would. Test-only;
// thread-compatible.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/kube/objects.h"
#include "dovetail/kube/string_pool.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "simdjson.h"

namespace dovetail::state::testing {

class Objects {
 public:
  std::shared_ptr<const kube::NodeInfo> Node(const nlohmann::json& json) {
    auto out = std::make_shared<kube::NodeInfo>();
    Decode(json, [&](simdjson::ondemand::object obj) { return kube::DecodeNode(obj, ctx_, *out); });
    return out;
  }
  std::shared_ptr<const kube::PodInfo> Pod(const nlohmann::json& json) {
    auto out = std::make_shared<kube::PodInfo>();
    Decode(json, [&](simdjson::ondemand::object obj) { return kube::DecodePod(obj, ctx_, *out); });
    return out;
  }
  std::shared_ptr<const apis::v1::NodeClaim> NodeClaim(const nlohmann::json& json) {
    auto out = std::make_shared<apis::v1::NodeClaim>();
    const absl::Status status = apis::core::DecodeJson(json, *out);
    EXPECT_TRUE(status.ok()) << status;
    return out;
  }

 private:
  template <typename Fn>
  void Decode(const nlohmann::json& json, Fn&& fn) {
    simdjson::padded_string text(json.dump());
    simdjson::ondemand::document doc;
    ASSERT_FALSE(parser_.iterate(text).get(doc));
    simdjson::ondemand::object obj;
    ASSERT_FALSE(doc.get_object().get(obj));
    const absl::Status status = fn(obj);
    ASSERT_TRUE(status.ok()) << status;
  }

  kube::StringPool pool_;
  kube::DecodeContext ctx_{.pool = &pool_};
  simdjson::ondemand::parser parser_;
};

// A Node as kubelet (or the kwok provider) registers it.
inline nlohmann::json NodeJson(const std::string& name, const std::string& provider_id,
                               const std::string& cpu, const std::string& memory,
                               nlohmann::json labels = nlohmann::json::object()) {
  labels["kubernetes.io/hostname"] = name;
  nlohmann::json node = {{"apiVersion", "v1"},
                         {"kind", "Node"},
                         {"metadata", {{"name", name}, {"uid", "uid-" + name}, {"labels", labels}}},
                         {"spec", nlohmann::json::object()},
                         {"status",
                          {{"capacity", {{"cpu", cpu}, {"memory", memory}, {"pods", "110"}}},
                           {"allocatable", {{"cpu", cpu}, {"memory", memory}, {"pods", "110"}}},
                           {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
  if (!provider_id.empty()) node["spec"]["providerID"] = provider_id;
  return node;
}

// A NodeClaim of `pool`; launched (status filled) when provider_id is not empty.
inline nlohmann::json NodeClaimJson(const std::string& name, const std::string& pool,
                                    const std::string& provider_id, const std::string& cpu = "4",
                                    const std::string& memory = "16Gi") {
  nlohmann::json claim = {
      {"apiVersion", "karpenter.sh/v1"},
      {"kind", "NodeClaim"},
      {"metadata",
       {{"name", name}, {"uid", "uid-" + name}, {"labels", {{"karpenter.sh/nodepool", pool}}}}},
      {"spec",
       {{"requirements", nlohmann::json::array()},
        {"resources", {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}, {"pods", "3"}}}}},
        {"nodeClassRef",
         {{"group", "karpenter.kwok.sh"}, {"kind", "KWOKNodeClass"}, {"name", "default"}}}}}};
  if (!provider_id.empty()) {
    claim["status"] = {{"providerID", provider_id},
                       {"capacity", {{"cpu", cpu}, {"memory", memory}, {"pods", "110"}}},
                       {"allocatable", {{"cpu", cpu}, {"memory", memory}, {"pods", "110"}}}};
  }
  return claim;
}

inline nlohmann::json PodJson(const std::string& ns, const std::string& name,
                              const std::string& node, const std::string& cpu,
                              const std::string& memory = "128Mi") {
  nlohmann::json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name}, {"namespace", ns}, {"uid", "uid-" + name}, {"labels", {{"app", name}}}}},
      {"spec",
       {{"containers",
         {{{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}, {"memory", memory}}}}}}}}}},
      {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

}  // namespace dovetail::state::testing
