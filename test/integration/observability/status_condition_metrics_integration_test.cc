// metrics.status_condition against a real kube-apiserver: a NodePool and a NodeClaim (CRDs from
// charts/) whose status the test writes, and the shared informers (the NodePool one among them).
// Checks that the leader's gauges show their conditions, that a status change seen by
// the informer counts as a transition, that a NodeClaim held by a finalizer is exported as
// terminating and timed once it is gone, and that Stop() clears the gauges. Other integration
// tests share the API server, so every assertion is about this test's objects (its NodePool name
// is the karpenter_sh_nodepool label value).

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "dovetail/common/clock.h"
#include "dovetail/controllers/observability/status_condition_metrics_controller.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/state/cluster.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/kube/crds.h"
#include "test/integration/kube/kwok_controller_env.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::controllers::observability {
namespace {

using kube::testing::UniqueName;
using kube::testing::WaitFor;

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

const nlohmann::json kNodeClassRef = {
    {"group", "karpenter.kwok.sh"}, {"kind", "KWOKNodeClass"}, {"name", "default"}};

nlohmann::json Condition(const std::string& type, const std::string& status,
                         const std::string& reason, absl::Time at) {
  return {{"type", type},  {"status", status},        {"reason", reason},
          {"message", ""}, {"observedGeneration", 1}, {"lastTransitionTime", Rfc3339(at)}};
}

class StatusConditionMetricsIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rest_ = kube::testing::NewRestClient(kube::testing::KubeconfigFromEnv());
    ASSERT_NE(rest_, nullptr);
    client_ = std::make_unique<kube::Client>(*rest_);
    ASSERT_NO_FATAL_FAILURE(
        kube::testing::InstallCrds(*client_, DOVETAIL_SOURCE_DIR, "dovetail-observability-test"));

    ASSERT_NO_FATAL_FAILURE(env_.Init(*client_, cluster_, clock_, &metrics_));
    controller_ = std::make_unique<StatusConditionMetricsController>(
        *env_.deps, StatusConditionMetricsOptions{.period = absl::Milliseconds(200)});
    ASSERT_NO_FATAL_FAILURE(env_.StartInformers());
    controller_->Start();
    ASSERT_TRUE(controller_->node_pools().WaitForSync(absl::Now() + absl::Seconds(60)));
  }

  void TearDown() override {
    if (controller_ != nullptr) controller_->Stop();
    env_.StopInformers();
    controller_.reset();
    if (client_ == nullptr) return;
    if (!claim_.empty()) {
      (void)client_->Patch(kube::resources::kNodeClaims, "", claim_, kube::PatchType::kMerge,
                           R"({"metadata":{"finalizers":null}})");
      (void)client_->Delete(kube::resources::kNodeClaims, "", claim_);
    }
    if (!pool_.empty()) (void)client_->Delete(kube::resources::kNodePools, "", pool_);
  }

  void PatchStatus(const kube::Resource& r, const std::string& name,
                   std::initializer_list<nlohmann::json> conds) {
    nlohmann::json list = nlohmann::json::array();
    for (const nlohmann::json& c : conds) list.push_back(c);
    nlohmann::json patch;
    patch["status"]["conditions"] = std::move(list);
    auto patched = client_->Patch(r, "", name, kube::PatchType::kMerge, patch.dump(), {}, "status");
    ASSERT_TRUE(patched.ok()) << patched.status();
  }

  double Gauge(const std::string& name, const metrics::LabelValues& labels) {
    return metrics_.NewGauge(name, "").Value(labels);
  }

  std::unique_ptr<kube::RestClient> rest_;
  std::unique_ptr<kube::Client> client_;
  RealClock clock_;
  metrics::Registry metrics_;
  state::Cluster cluster_{clock_};
  kube::testing::KwokControllerEnv env_;
  std::unique_ptr<StatusConditionMetricsController> controller_;
  std::string pool_;
  std::string claim_;
};

TEST_F(StatusConditionMetricsIntegrationTest, ConditionsTransitionsAndTermination) {
  const absl::Time t0 = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now())) - absl::Minutes(5);
  pool_ = UniqueName("cond-it");
  const nlohmann::json pool = {
      {"apiVersion", "karpenter.sh/v1"},
      {"kind", "NodePool"},
      {"metadata", {{"name", pool_}}},
      {"spec",
       {{"template",
         {{"spec",
           {{"requirements", nlohmann::json::array()}, {"nodeClassRef", kNodeClassRef}}}}}}}};
  auto created = client_->Create(kube::resources::kNodePools, "", pool.dump());
  ASSERT_TRUE(created.ok()) << created.status();
  PatchStatus(kube::resources::kNodePools, pool_, {Condition("Ready", "True", "Ready", t0)});

  claim_ = UniqueName(pool_);
  const nlohmann::json claim = {
      {"apiVersion", "karpenter.sh/v1"},
      {"kind", "NodeClaim"},
      {"metadata",
       {{"name", claim_},
        {"labels", {{"karpenter.sh/nodepool", pool_}}},
        {"finalizers", {"example.com/hold"}}}},
      {"spec", {{"requirements", nlohmann::json::array()}, {"nodeClassRef", kNodeClassRef}}}};
  created = client_->Create(kube::resources::kNodeClaims, "", claim.dump());
  ASSERT_TRUE(created.ok()) << created.status();
  PatchStatus(
      kube::resources::kNodeClaims, claim_,
      {Condition("Launched", "True", "Launched", t0), Condition("Ready", "False", "NotReady", t0)});

  // The gauges, within a period of the informers seeing the objects.
  const metrics::LabelValues not_ready = {"", claim_, "Ready", "False", "NotReady", "", pool_};
  ASSERT_TRUE(WaitFor([&] {
    return Gauge("operator_nodeclaim_status_condition_count", not_ready) == 1 &&
           Gauge("operator_nodepool_status_condition_count",
                 {"", pool_, "Ready", "True", "Ready"}) == 1;
  }));
  EXPECT_GE(Gauge("operator_nodeclaim_status_condition_current_status_seconds", not_ready), 300);
  EXPECT_EQ(Gauge("operator_status_condition_count",
                  {"", pool_, "Ready", "True", "Ready", "karpenter.sh", "NodePool"}),
            1);

  // Ready False -> True 60 s later: one transition, timed from the lastTransitionTimes.
  metrics::Counter& transitions =
      metrics_.NewCounter("operator_nodeclaim_status_condition_transitions_total", "");
  metrics::Histogram& durations =
      metrics_.NewHistogram("operator_nodeclaim_status_condition_transition_seconds", "", {}, {});
  EXPECT_EQ(transitions.Value({"Ready", "False", "NotReady", "", pool_}), 1);
  PatchStatus(kube::resources::kNodeClaims, claim_,
              {Condition("Launched", "True", "Launched", t0),
               Condition("Ready", "True", "Ready", t0 + absl::Seconds(60))});
  // The controller counts the transition and then observes its duration; wait for both, a scrape
  // between the two would see the count alone.
  ASSERT_TRUE(WaitFor([&] {
    return transitions.Value({"Ready", "True", "Ready", "", pool_}) == 1 &&
           durations.Count({"Ready", "False", "", pool_}) >= 1;
  }));
  EXPECT_EQ(durations.Count({"Ready", "False", "", pool_}), 1u);
  EXPECT_EQ(durations.Sum({"Ready", "False", "", pool_}), 60);
  ASSERT_TRUE(WaitFor([&] {
    return Gauge("operator_nodeclaim_status_condition_count", not_ready) == 0 &&
           Gauge("operator_nodeclaim_status_condition_count",
                 {"", claim_, "Ready", "True", "Ready", "", pool_}) == 1;
  }));

  // Deleted but held by its finalizer: terminating; released: gone and timed.
  ASSERT_TRUE(client_->Delete(kube::resources::kNodeClaims, "", claim_).ok());
  ASSERT_TRUE(WaitFor([&] {
    return Gauge("operator_nodeclaim_termination_current_time_seconds", {"", claim_, "", pool_}) >
           0;
  }));
  metrics::Histogram& terminations =
      metrics_.NewHistogram("operator_nodeclaim_termination_duration_seconds", "", {}, {});
  EXPECT_EQ(terminations.Count({"", pool_}), 0u);
  ASSERT_TRUE(client_
                  ->Patch(kube::resources::kNodeClaims, "", claim_, kube::PatchType::kMerge,
                          R"({"metadata":{"finalizers":null}})")
                  .ok());
  ASSERT_TRUE(WaitFor([&] { return terminations.Count({"", pool_}) == 1; }));
  ASSERT_TRUE(WaitFor([&] {
    return Gauge("operator_nodeclaim_termination_current_time_seconds", {"", claim_, "", pool_}) ==
               0 &&
           Gauge("operator_nodeclaim_status_condition_count",
                 {"", claim_, "Ready", "True", "Ready", "", pool_}) == 0;
  }));
  claim_.clear();

  // A replica that stops leading exports no gauges.
  controller_->Stop();
  EXPECT_EQ(
      Gauge("operator_nodepool_status_condition_count", {"", pool_, "Ready", "True", "Ready"}), 0);
}

}  // namespace
}  // namespace dovetail::controllers::observability
