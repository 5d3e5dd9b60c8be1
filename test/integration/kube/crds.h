// The chart's CRDs for integration tests against the fixture's API server.
// Test-only; thread-compatible.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>

#include "dovetail/common/absl_compat.h"
#include "dovetail/kube/client.h"
#include "gtest/gtest.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::kube::testing {

// Applies `source_dir`/charts/dovetail/crds with the fixture's kubectl ($DOVETAIL_K8S_BIN) and
// waits until NodeClaims are served.
inline void InstallCrds(Client& client, std::string_view source_dir,
                        std::string_view field_manager) {
  const char* bin = std::getenv("DOVETAIL_K8S_BIN");
  ASSERT_NE(bin, nullptr) << "DOVETAIL_K8S_BIN is not set (run under ctest)";
  const std::string command =
      Cat(bin, "/kubectl apply --server-side --force-conflicts --field-manager=", field_manager,
          " -f ", source_dir, "/charts/dovetail/crds > /dev/null");
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  ASSERT_TRUE(WaitFor([&] { return client.List(resources::kNodeClaims, "").ok(); }))
      << "NodeClaims are not served";
}

}  // namespace dovetail::kube::testing
