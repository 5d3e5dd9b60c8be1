// The orchestration queue of disruption against a real kube-apiserver: the real informers, cluster
// state, event recorder and KubeQueueWriter. The test plays the NodeClaim lifecycle itself: it
// registers candidate Nodes and NodeClaims, and "initializes" a replacement by writing its
// provider id and Initialized condition, as the lifecycle controller would.
//
// Checks: a replace command taints the candidate Node and sets DisruptionReason on its NodeClaim,
// creates the replacement, and deletes the candidate NodeClaim once the replacement is
// initialized; a command whose replacement is deleted rolls back (taint and condition removed,
// unmarked); stale taints and conditions left by a killed process are removed at start; under a
// 409/429 storm from the fault proxy, with another writer on the same objects, the marks go on
// and off and no one else's taint, condition or finalizer is lost.
//
// Other integration tests share the API server, so every object is this test's own.

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/common/clock.h"
#include "dovetail/controllers/disruption/queue.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/event_recorder.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/state/cluster.h"
#include "dovetail/state/cluster_informers.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/kube/crds.h"
#include "test/integration/kube/fault_proxy.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::controllers::disruption {
namespace {

using kube::testing::UniqueName;
using kube::testing::WaitFor;
using nlohmann::json;
namespace v1 = apis::v1;

json NodePoolJson(const std::string& name) {
  return {{"apiVersion", "karpenter.sh/v1"},
          {"kind", "NodePool"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"template",
             {{"spec",
               {{"requirements", json::array()},
                {"nodeClassRef",
                 {{"group", "karpenter.kwok.sh"},
                  {"kind", "KWOKNodeClass"},
                  {"name", "default"}}}}}}}}}};
}

class QueueIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rest_ = kube::testing::NewRestClient(kube::testing::KubeconfigFromEnv());
    ASSERT_NE(rest_, nullptr);
    client_ = std::make_unique<kube::Client>(*rest_);
    kube::testing::InstallCrds(*client_, DOVETAIL_SOURCE_DIR, "dovetail-disruption-test");
    events_ = std::make_unique<kube::EventRecorder>(*client_, clock_, kube::EventRecorderOptions{});
    informers_ = std::make_unique<state::ClusterInformers>(*client_, cluster_);
    writer_ = std::make_unique<KubeQueueWriter>(*client_, *events_, clock_);
    queue_ = std::make_unique<Queue>(cluster_, clock_, &metrics_, *writer_,
                                     QueueOptions{.poll = absl::Milliseconds(100)});
    pool_name_ = UniqueName("disr-it");
    auto created =
        client_->Create(kube::resources::kNodePools, "", NodePoolJson(pool_name_).dump());
    ASSERT_TRUE(created.ok()) << created.status();
    ASSERT_TRUE(apis::core::DecodeJson(json::parse(*created), pool_).ok());
    pools_[pool_name_] = pool_;
    informers_->Start();
    ASSERT_TRUE(informers_->WaitForSync(absl::Now() + absl::Seconds(60)));
  }

  void TearDown() override {
    if (queue_ != nullptr) queue_->Stop();
    if (informers_ != nullptr) informers_->Stop();
    if (client_ == nullptr) return;
    for (const std::string& name : nodes_) (void)client_->Delete(kube::resources::kNodes, "", name);
    auto list = client_->List(kube::resources::kNodeClaims, "");
    if (list.ok()) {
      const json body = json::parse(list->body);
      for (const json& item : body["items"]) {
        if (item["metadata"]["labels"].value("karpenter.sh/nodepool", "") != pool_name_) continue;
        (void)client_->Delete(kube::resources::kNodeClaims, "",
                              item["metadata"]["name"].get<std::string>());
      }
    }
    (void)client_->Delete(kube::resources::kNodePools, "", pool_name_);
  }

  // A registered, initialized candidate: a NodeClaim with a provider id and its Node. `stale`
  // leaves a disrupted taint and a DisruptionReason condition behind, as a killed process would.
  std::string AddCandidate(const std::string& prefix, bool stale = false) {
    const std::string name = UniqueName(prefix);
    const std::string provider = absl::StrCat("kwok://", name);
    json claim = {
        {"apiVersion", "karpenter.sh/v1"},
        {"kind", "NodeClaim"},
        {"metadata",
         {{"name", name},
          {"labels",
           {{"karpenter.sh/nodepool", pool_name_}, {"karpenter.sh/capacity-type", "on-demand"}}}}},
        {"spec",
         {{"requirements", json::array()},
          {"nodeClassRef",
           {{"group", "karpenter.kwok.sh"}, {"kind", "KWOKNodeClass"}, {"name", "default"}}}}}};
    auto created = client_->Create(kube::resources::kNodeClaims, "", claim.dump());
    EXPECT_TRUE(created.ok()) << created.status();
    json status = {{"status",
                    {{"providerID", provider},
                     {"capacity", {{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "110"}}},
                     {"allocatable", {{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "110"}}},
                     {"conditions", json::array()}}}};
    status["status"]["conditions"].push_back(Condition("Initialized", "True", "Initialized"));
    if (stale) {
      status["status"]["conditions"].push_back(
          Condition("DisruptionReason", "True", "Underutilized"));
    }
    auto patched = client_->Patch(kube::resources::kNodeClaims, "", name, kube::PatchType::kMerge,
                                  status.dump(), {}, "status");
    EXPECT_TRUE(patched.ok()) << patched.status();
    json node = {{"apiVersion", "v1"},
                 {"kind", "Node"},
                 {"metadata",
                  {{"name", name},
                   {"labels",
                    {{"karpenter.sh/nodepool", pool_name_},
                     {"karpenter.sh/capacity-type", "on-demand"},
                     {"karpenter.sh/registered", "true"},
                     {"karpenter.sh/initialized", "true"},
                     {"kubernetes.io/hostname", name}}}}},
                 {"spec", {{"providerID", provider}}}};
    if (stale) {
      node["spec"]["taints"] = {{{"key", "karpenter.sh/disrupted"}, {"effect", "NoSchedule"}}};
    }
    auto node_created = client_->Create(kube::resources::kNodes, "", node.dump());
    EXPECT_TRUE(node_created.ok()) << node_created.status();
    nodes_.push_back(name);
    EXPECT_TRUE(WaitFor([&] {
      auto s = cluster_.GetByNodeName(name);
      return s.has_value() && s->node != nullptr && s->node_claim != nullptr &&
             !s->node_claim->status.conditions.empty();
    }));
    return name;
  }

  static json Condition(const std::string& type, const std::string& status,
                        const std::string& reason) {
    return {{"type", type},
            {"status", status},
            {"reason", reason},
            {"message", ""},
            {"lastTransitionTime", "2026-01-01T00:00:00Z"}};
  }

  Command ReplaceCommand(const std::string& name) {
    Command command;
    command.method = Method::kSingleNodeConsolidation;
    Candidate c;
    c.node = *cluster_.GetByNodeName(name);
    c.name = name;
    c.node_claim = name;
    c.node_pool = pool_name_;
    command.candidates.push_back(c);
    solver::NewNodeClaim r;
    r.pool = pool_name_;
    command.replacements.push_back(r);
    return command;
  }

  bool Tainted(const std::string& node) {
    auto body = client_->Get(kube::resources::kNodes, "", node);
    if (!body.ok()) return false;
    for (const json& t : json::parse(*body)["spec"].value("taints", json::array())) {
      if (t.value("key", "") == "karpenter.sh/disrupted" && t.value("effect", "") == "NoSchedule")
        return true;
    }
    return false;
  }
  // The DisruptionReason condition's reason, "" when absent.
  std::string DisruptionReason(const std::string& claim) {
    auto body = client_->Get(kube::resources::kNodeClaims, "", claim);
    if (!body.ok()) return "";
    for (const json& c : json::parse(*body)["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "DisruptionReason" && c.value("status", "") == "True")
        return c.value("reason", "?");
    }
    return "";
  }
  bool Gone(const std::string& claim) {
    auto body = client_->Get(kube::resources::kNodeClaims, "", claim);
    if (!body.ok()) return kube::IsNotFound(body.status());
    return json::parse(*body)["metadata"].contains("deletionTimestamp");
  }
  // Replacements: this pool's NodeClaims other than the candidates.
  std::vector<std::string> Replacements() {
    std::vector<std::string> out;
    auto list = client_->List(kube::resources::kNodeClaims, "");
    EXPECT_TRUE(list.ok());
    if (!list.ok()) return out;
    const json body = json::parse(list->body);
    for (const json& item : body["items"]) {
      const std::string name = item["metadata"]["name"];
      if (item["metadata"]["labels"].value("karpenter.sh/nodepool", "") != pool_name_) continue;
      if (std::find(nodes_.begin(), nodes_.end(), name) != nodes_.end()) continue;
      out.push_back(name);
    }
    return out;
  }

  RealClock clock_;
  metrics::Registry metrics_;
  state::Cluster cluster_{clock_};
  std::unique_ptr<kube::RestClient> rest_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<kube::EventRecorder> events_;
  std::unique_ptr<state::ClusterInformers> informers_;
  std::unique_ptr<KubeQueueWriter> writer_;
  std::unique_ptr<Queue> queue_;
  std::string pool_name_;
  v1::NodePool pool_;
  absl::flat_hash_map<std::string, v1::NodePool> pools_;
  std::vector<std::string> nodes_;
};

TEST_F(QueueIntegrationTest, ReplacesThenDeletesTheCandidateOnceTheReplacementInitializes) {
  const std::string candidate = AddCandidate("disr-cand");
  absl::StatusOr<std::string> id = queue_->StartCommand(ReplaceCommand(candidate), pools_);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_TRUE(Tainted(candidate));
  EXPECT_EQ(DisruptionReason(candidate), "Underutilized");
  EXPECT_TRUE(cluster_.GetByNodeName(candidate)->marked_for_deletion);
  const std::vector<std::string> replacements = Replacements();
  ASSERT_EQ(replacements.size(), 1u);
  const std::string replacement = replacements[0];
  EXPECT_EQ(replacement.rfind(pool_name_ + "-", 0), 0u);

  queue_->Start();
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_FALSE(Gone(candidate)) << "the replacement is not initialized yet";

  // The lifecycle controller's part: launched, then initialized.
  const json status = {{"status",
                        {{"providerID", absl::StrCat("kwok://", replacement)},
                         {"conditions", {Condition("Initialized", "True", "Initialized")}}}}};
  ASSERT_TRUE(client_
                  ->Patch(kube::resources::kNodeClaims, "", replacement, kube::PatchType::kMerge,
                          status.dump(), {}, "status")
                  .ok());
  // The queue deletes the NodeClaim first, then records events and the metric and finishes the
  // command: wait for all of it, not just the deletion.
  ASSERT_TRUE(WaitFor([&] { return Gone(candidate) && queue_->size() == 0; }))
      << queue_->stats().terminated;
  EXPECT_FALSE(Gone(replacement));
  EXPECT_EQ(queue_->size(), 0u);
  EXPECT_TRUE(queue_->Held().empty());
  EXPECT_EQ(metrics_
                .NewCounter("karpenter_nodeclaims_disrupted_total", "",
                            {"reason", "nodepool", "capacity_type"})
                .Value({"underutilized", pool_name_, "on-demand"}),
            1);
}

TEST_F(QueueIntegrationTest, DeletedReplacementRollsTheCommandBack) {
  const std::string candidate = AddCandidate("disr-roll");
  ASSERT_TRUE(queue_->StartCommand(ReplaceCommand(candidate), pools_).ok());
  ASSERT_TRUE(Tainted(candidate));
  const std::vector<std::string> replacements = Replacements();
  ASSERT_EQ(replacements.size(), 1u);
  queue_->Start();
  // ICE or the liveness timeout: the replacement is deleted.
  ASSERT_TRUE(client_->Delete(kube::resources::kNodeClaims, "", replacements[0]).ok());
  ASSERT_TRUE(WaitFor([&] { return queue_->size() == 0; }));
  EXPECT_FALSE(Tainted(candidate));
  EXPECT_EQ(DisruptionReason(candidate), "");
  EXPECT_FALSE(Gone(candidate));
  EXPECT_FALSE(cluster_.GetByNodeName(candidate)->marked_for_deletion);
  EXPECT_EQ(queue_->stats().rolled_back, 1);
  EXPECT_EQ(metrics_
                .NewCounter("karpenter_voluntary_disruption_queue_failures_total", "",
                            {"decision", "reason", "consolidation_type"})
                .Value({"replace", "underutilized", "single"}),
            1);
}

TEST_F(QueueIntegrationTest, StaleMarksAreRemovedExceptOnHeldCandidates) {
  const std::string stale = AddCandidate("disr-stale", /*stale=*/true);
  const std::string held = AddCandidate("disr-held");
  ASSERT_TRUE(queue_->StartCommand(ReplaceCommand(held), pools_).ok());
  ASSERT_TRUE(Tainted(stale));
  ASSERT_EQ(DisruptionReason(stale), "Underutilized");
  // The queue's own writes must have reached the cache before the recovery looks at it.
  ASSERT_TRUE(WaitFor([&] {
    auto s = cluster_.GetByNodeName(held);
    return s.has_value() && s->node != nullptr && !s->node->taints.empty();
  }));
  absl::StatusOr<int> removed = RemoveStaleDisruptionMarks(cluster_, queue_->Held(), *writer_);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 2);
  EXPECT_FALSE(Tainted(stale));
  EXPECT_EQ(DisruptionReason(stale), "");
  EXPECT_TRUE(Tainted(held));
  EXPECT_EQ(DisruptionReason(held), "Underutilized");
}

// A 409/429 storm (the fault proxy between the queue's writer and the API server answers every
// second write 409 Conflict and every third request 429 with Retry-After) while another writer
// keeps changing the same Node and NodeClaim: the queue's taint, condition and deletion marks go
// on and come off again, and nobody else's taints, conditions or finalizers are lost.
TEST_F(QueueIntegrationTest, ConflictAndThrottlingStormLosesNoTaintConditionOrFinalizer) {
  const std::string candidate = AddCandidate("disr-storm");
  // Someone else's taint, condition and finalizer.
  const json theirs_node = {{"spec",
                             {{"taints",
                               {{{"key", "example.com/theirs"}, {"effect", "NoSchedule"}},
                                {{"key", "example.com/soft"}, {"effect", "PreferNoSchedule"}}}}}}};
  ASSERT_TRUE(client_
                  ->Patch(kube::resources::kNodes, "", candidate, kube::PatchType::kMerge,
                          theirs_node.dump())
                  .ok());
  const json theirs_claim = {{"metadata", {{"finalizers", {"example.com/keep"}}}}};
  ASSERT_TRUE(client_
                  ->Patch(kube::resources::kNodeClaims, "", candidate, kube::PatchType::kMerge,
                          theirs_claim.dump())
                  .ok());
  {
    auto body = client_->Get(kube::resources::kNodeClaims, "", candidate);
    ASSERT_TRUE(body.ok());
    json conditions = json::parse(*body)["status"]["conditions"];
    conditions.push_back(Condition("ExampleHealthy", "True", "Fine"));
    ASSERT_TRUE(client_
                    ->Patch(kube::resources::kNodeClaims, "", candidate, kube::PatchType::kMerge,
                            json{{"status", {{"conditions", conditions}}}}.dump(), {}, "status")
                    .ok());
  }
  ASSERT_TRUE(WaitFor([&] {
    auto s = cluster_.GetByNodeName(candidate);
    return s.has_value() && s->node != nullptr && s->node->taints.size() == 2;
  }));

  kube::testing::FaultProxy proxy(kube::testing::KubeconfigFromEnv());
  auto storm_rest = kube::testing::NewRestClient(proxy.ClientConfig());
  kube::Client storm(*storm_rest);
  KubeQueueWriter storm_writer(storm, *events_, clock_);
  Queue queue(cluster_, clock_, nullptr, storm_writer,
              QueueOptions{.poll = absl::Milliseconds(100)});
  proxy.SetFaults({.conflict_every = 2, .throttle_every = 3, .retry_after_seconds = 0});

  // The other writer: an annotation on both objects, over and over (real conflicts).
  std::atomic<bool> done{false};
  std::thread other([&] {
    for (int i = 0; !done.load(); ++i) {
      const std::string patch =
          json{{"metadata", {{"annotations", {{"example.com/tick", std::to_string(i)}}}}}}.dump();
      (void)client_->Patch(kube::resources::kNodes, "", candidate, kube::PatchType::kMerge, patch);
      (void)client_->Patch(kube::resources::kNodeClaims, "", candidate, kube::PatchType::kMerge,
                           patch);
      absl::SleepFor(absl::Milliseconds(500));
    }
  });
  auto taint_keys = [&]() {
    std::vector<std::string> keys;
    auto body = client_->Get(kube::resources::kNodes, "", candidate);
    if (!body.ok()) return keys;
    for (const json& t : json::parse(*body)["spec"].value("taints", json::array())) {
      keys.push_back(t.value("key", ""));
    }
    std::sort(keys.begin(), keys.end());
    return keys;
  };
  auto claim_has = [&](const std::string& type, const std::string& finalizer) {
    auto body = client_->Get(kube::resources::kNodeClaims, "", candidate);
    if (!body.ok()) return false;
    const json c = json::parse(*body);
    bool condition = false;
    for (const json& x : c["status"].value("conditions", json::array())) {
      condition |= x.value("type", "") == type;
    }
    bool has_finalizer = false;
    for (const json& f : c["metadata"].value("finalizers", json::array())) {
      has_finalizer |= f == finalizer;
    }
    return condition && has_finalizer;
  };

  absl::StatusOr<std::string> id = queue.StartCommand(ReplaceCommand(candidate), pools_);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(taint_keys(), (std::vector<std::string>{"example.com/soft", "example.com/theirs",
                                                    "karpenter.sh/disrupted"}));
  EXPECT_EQ(DisruptionReason(candidate), "Underutilized");
  EXPECT_TRUE(claim_has("ExampleHealthy", "example.com/keep"));
  const std::vector<std::string> replacements = Replacements();
  ASSERT_EQ(replacements.size(), 1u);

  // Roll back under the storm: the replacement goes away.
  queue.Start();
  ASSERT_TRUE(client_->Delete(kube::resources::kNodeClaims, "", replacements[0]).ok());
  EXPECT_TRUE(WaitFor([&] { return queue.size() == 0; }, absl::Seconds(60)));
  done.store(true);
  other.join();
  queue.Stop();
  EXPECT_EQ(taint_keys(), (std::vector<std::string>{"example.com/soft", "example.com/theirs"}));
  EXPECT_EQ(DisruptionReason(candidate), "");
  EXPECT_TRUE(claim_has("ExampleHealthy", "example.com/keep"));
  EXPECT_FALSE(Gone(candidate));
  EXPECT_GT(proxy.injected(), 0) << "no fault was injected";
  EXPECT_GT(proxy.throttled(), 0) << "no 429 was injected";
  // Let the NodeClaim go in TearDown.
  ASSERT_TRUE(client_
                  ->Patch(kube::resources::kNodeClaims, "", candidate, kube::PatchType::kMerge,
                          R"({"metadata":{"finalizers":null}})")
                  .ok());
}

}  // namespace
}  // namespace dovetail::controllers::disruption
