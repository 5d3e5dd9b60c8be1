// NodeRegistrationBlock: a ValidatingAdmissionPolicy, and its binding, that deny the creation of
// every Node labelled registration=fail, so that the kubelet of a machine launched for a NodeClaim
// carrying that label never registers (as upstream's e2e tests block registration). Created by the
// constructor, which returns once the API server enforces it (a probe Node is refused); deleted by
// the destructor. Other Nodes are untouched, so tests sharing the API server are unaffected.
// Test-only; thread-compatible.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/resource.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/kube/test_env.h"

namespace dovetail::kube::testing {

inline constexpr char kBlockedRegistrationLabel[] = "registration";
inline constexpr char kBlockedRegistrationValue[] = "fail";
inline constexpr char kBlockedRegistrationMessage[] = "node registration is blocked by the test";

class NodeRegistrationBlock {
 public:
  static constexpr Resource kPolicies{"admissionregistration.k8s.io", "v1",
                                      "validatingadmissionpolicies", "ValidatingAdmissionPolicy",
                                      false};
  static constexpr Resource kBindings{"admissionregistration.k8s.io", "v1",
                                      "validatingadmissionpolicybindings",
                                      "ValidatingAdmissionPolicyBinding", false};

  explicit NodeRegistrationBlock(Client& client)
      : client_(client), name_(UniqueName("block-registration")) {
    const nlohmann::json policy = {
        {"apiVersion", "admissionregistration.k8s.io/v1"},
        {"kind", "ValidatingAdmissionPolicy"},
        {"metadata", {{"name", name_}}},
        {"spec",
         {{"failurePolicy", "Fail"},
          {"matchConstraints",
           {{"resourceRules",
             {{{"apiGroups", {""}},
               {"apiVersions", {"v1"}},
               {"operations", {"CREATE"}},
               {"resources", {"nodes"}}}}}}},
          {"validations",
           {{{"expression",
              Cat("!has(object.metadata.labels) || !('", kBlockedRegistrationLabel,
                  "' in object.metadata.labels) || object.metadata.labels['",
                  kBlockedRegistrationLabel, "'] != '", kBlockedRegistrationValue, "'")},
             {"message", kBlockedRegistrationMessage}}}}}}};
    auto created = client_.Create(kPolicies, "", policy.dump());
    EXPECT_TRUE(created.ok()) << created.status();
    const nlohmann::json binding = {
        {"apiVersion", "admissionregistration.k8s.io/v1"},
        {"kind", "ValidatingAdmissionPolicyBinding"},
        {"metadata", {{"name", name_}}},
        {"spec", {{"policyName", name_}, {"validationActions", {"Deny"}}}}};
    created = client_.Create(kBindings, "", binding.dump());
    EXPECT_TRUE(created.ok()) << created.status();
    // The API server's policy informer takes a moment: probe until a labelled Node is refused.
    enforced_ = WaitFor(
        [&] {
          const std::string probe = UniqueName("registration-probe");
          const nlohmann::json node = {
              {"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata",
               {{"name", probe},
                {"labels", {{kBlockedRegistrationLabel, kBlockedRegistrationValue}}}}}};
          auto made = client_.Create(resources::kNodes, "", node.dump());
          if (made.ok()) {
            (void)client_.Delete(resources::kNodes, "", probe);
            return false;
          }
          return Refused(made.status());
        },
        absl::Seconds(60), absl::Milliseconds(200));
    EXPECT_TRUE(enforced_) << "the ValidatingAdmissionPolicy " << name_ << " is not enforced";
  }
  ~NodeRegistrationBlock() {
    (void)client_.Delete(kBindings, "", name_);
    (void)client_.Delete(kPolicies, "", name_);
  }
  NodeRegistrationBlock(const NodeRegistrationBlock&) = delete;
  NodeRegistrationBlock& operator=(const NodeRegistrationBlock&) = delete;

  bool enforced() const { return enforced_; }

  // Whether `status` is this policy's refusal.
  static bool Refused(const absl::Status& status) {
    return !status.ok() && absl::StrContains(status.message(), kBlockedRegistrationMessage);
  }

 private:
  Client& client_;
  const std::string name_;
  bool enforced_ = false;
};

}  // namespace dovetail::kube::testing
