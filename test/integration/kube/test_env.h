// Shared setup of the kube integration tests: a RestClient/Client for the API server of the
// fixture (KUBECONFIG), unique namespaces, and waiting on conditions with a deadline.
// Test-only; thread-compatible.
#pragma once

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/config.h"
#include "dovetail/kube/rest_client.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dovetail::kube::testing {

inline RestConfig KubeconfigFromEnv() {
  const char* path = std::getenv("KUBECONFIG");
  if (path == nullptr) {
    ADD_FAILURE() << "KUBECONFIG is not set (run under ctest with the kube fixture)";
    return {};
  }
  absl::StatusOr<RestConfig> config = LoadKubeconfigFile(path);
  EXPECT_TRUE(config.ok()) << config.status();
  RestConfig out = config.ok() ? *config : RestConfig{};
  out.qps = 0;  // tests create objects in bulk
  return out;
}

inline std::unique_ptr<RestClient> NewRestClient(RestConfig config) {
  auto client = RestClient::Create(config);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(*client) : nullptr;
}

inline std::string UniqueName(std::string_view prefix) {
  static absl::BitGen gen;
  return std::string(prefix) + "-" + std::to_string(absl::Uniform<uint32_t>(gen, 0, 1u << 30));
}

inline void CreateNamespace(Client& client, const std::string& name) {
  const nlohmann::json ns = {
      {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
  auto created = client.Create(resources::kNamespaces, "", ns.dump());
  ASSERT_TRUE(created.ok()) << created.status();
}

// Polls `condition` until it holds or `timeout` passes, yielding between polls; returns whether
// it held. Each poll is cheap (cache reads) or an API call, so no fixed sleep is needed.
inline bool WaitFor(const std::function<bool()>& condition,
                    absl::Duration timeout = absl::Seconds(60),
                    absl::Duration poll = absl::Milliseconds(20)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (condition()) return true;
    absl::SleepFor(poll);
  }
  return condition();
}

inline nlohmann::json PodJson(const std::string& ns, const std::string& name,
                              const std::string& node = "") {
  nlohmann::json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"app", "test"}}}}},
      {"spec",
       {{"containers",
         {{{"name", "c"},
           {"image", "registry.k8s.io/pause:3.10"},
           {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "64Mi"}}}}}}}}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

}  // namespace dovetail::kube::testing
