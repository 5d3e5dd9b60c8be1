// kube::Client, TypedClient, controller helpers, events and informers against a real
// kube-apiserver (fixture kube_integration).
#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "dovetail/apis/core/node.h"
#include "dovetail/apis/core/pod_disruption_budget.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/controller_util.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/event_recorder.h"
#include "dovetail/kube/informer.h"
#include "dovetail/kube/typed_client.h"
#include "gtest/gtest.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::kube {
namespace {

using ::dovetail::kube::testing::CreateNamespace;
using ::dovetail::kube::testing::KubeconfigFromEnv;
using ::dovetail::kube::testing::NewRestClient;
using ::dovetail::kube::testing::PodJson;
using ::dovetail::kube::testing::UniqueName;
using ::dovetail::kube::testing::WaitFor;

class ClientIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rest_ = NewRestClient(KubeconfigFromEnv());
    ASSERT_NE(rest_, nullptr);
    client_ = std::make_unique<Client>(*rest_);
    ns_ = UniqueName("kube");
    CreateNamespace(*client_, ns_);
  }

  nlohmann::json ConfigMap(const std::string& name, nlohmann::json data) {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}, {"namespace", ns_}}},
            {"data", std::move(data)}};
  }

  nlohmann::json MustJson(const absl::StatusOr<std::string>& body) {
    EXPECT_TRUE(body.ok()) << body.status();
    return body.ok() ? nlohmann::json::parse(*body) : nlohmann::json();
  }

  std::unique_ptr<RestClient> rest_;
  std::unique_ptr<Client> client_;
  std::string ns_;
};

TEST_F(ClientIntegrationTest, CreateGetUpdateDeleteWithPreconditions) {
  const auto created =
      MustJson(client_->Create(resources::kConfigMaps, ns_, ConfigMap("a", {{"k", "1"}}).dump()));
  const std::string uid = created["metadata"]["uid"];
  EXPECT_TRUE(kube::IsAlreadyExists(
      client_->Create(resources::kConfigMaps, ns_, ConfigMap("a", {}).dump()).status()));

  // Update with the current resourceVersion succeeds; with the old one it conflicts.
  nlohmann::json updated = created;
  updated["data"]["k"] = "2";
  ASSERT_TRUE(client_->Update(resources::kConfigMaps, ns_, "a", updated.dump()).ok());
  updated["data"]["k"] = "3";
  EXPECT_TRUE(
      IsConflict(client_->Update(resources::kConfigMaps, ns_, "a", updated.dump()).status()));
  EXPECT_EQ(MustJson(client_->Get(resources::kConfigMaps, ns_, "a"))["data"]["k"], "2");

  // Delete preconditions: a wrong UID or resourceVersion is refused with a conflict.
  EXPECT_TRUE(IsConflict(
      client_->Delete(resources::kConfigMaps, ns_, "a", {.precondition_uid = "not-the-uid"})
          .status()));
  EXPECT_TRUE(IsConflict(
      client_->Delete(resources::kConfigMaps, ns_, "a", {.precondition_resource_version = "1"})
          .status()));
  ASSERT_TRUE(client_
                  ->Delete(resources::kConfigMaps, ns_, "a",
                           {.precondition_uid = uid,
                            .propagation_policy = PropagationPolicy::kBackground,
                            .grace_period_seconds = 0})
                  .ok());
  EXPECT_TRUE(WaitFor(
      [&] { return kube::IsNotFound(client_->Get(resources::kConfigMaps, ns_, "a").status()); }));
}

TEST_F(ClientIntegrationTest, MergePatchJsonPatchWithTestOpsAndServerSideApply) {
  ASSERT_TRUE(
      client_->Create(resources::kConfigMaps, ns_, ConfigMap("p", {{"a", "1"}}).dump()).ok());
  auto merged = MustJson(client_->Patch(resources::kConfigMaps, ns_, "p", PatchType::kMerge,
                                        R"({"data":{"b":"2","a":null}})"));
  EXPECT_EQ(merged["data"], nlohmann::json({{"b", "2"}}));

  // A JSON patch whose test op fails changes nothing (422).
  absl::Status failed = client_
                            ->Patch(resources::kConfigMaps, ns_, "p", PatchType::kJson,
                                    R"([{"op":"test","path":"/data/b","value":"nope"},
                                        {"op":"replace","path":"/data/b","value":"3"}])")
                            .status();
  EXPECT_TRUE(IsInvalid(failed)) << failed;
  auto patched = MustJson(client_->Patch(resources::kConfigMaps, ns_, "p", PatchType::kJson,
                                         R"([{"op":"test","path":"/data/b","value":"2"},
                                             {"op":"replace","path":"/data/b","value":"3"}])"));
  EXPECT_EQ(patched["data"]["b"], "3");

  // Server-side apply: two managers own different keys; a conflicting apply needs force.
  const nlohmann::json mine = {{"apiVersion", "v1"},
                               {"kind", "ConfigMap"},
                               {"metadata", {{"name", "s"}, {"namespace", ns_}}},
                               {"data", {{"mine", "1"}}}};
  ASSERT_TRUE(
      client_->Apply(resources::kConfigMaps, ns_, "s", mine.dump(), {.field_manager = "one"}).ok());
  nlohmann::json theirs = mine;
  theirs["data"] = {{"theirs", "1"}};
  auto both = MustJson(
      client_->Apply(resources::kConfigMaps, ns_, "s", theirs.dump(), {.field_manager = "two"}));
  EXPECT_EQ(both["data"], nlohmann::json({{"mine", "1"}, {"theirs", "1"}}));
  nlohmann::json steal = mine;
  steal["data"] = {{"mine", "2"}};
  absl::Status conflict =
      client_->Apply(resources::kConfigMaps, ns_, "s", steal.dump(), {.field_manager = "two"})
          .status();
  EXPECT_TRUE(IsConflict(conflict)) << conflict;
  auto forced = MustJson(client_->Apply(resources::kConfigMaps, ns_, "s", steal.dump(),
                                        {.field_manager = "two", .force = true}));
  EXPECT_EQ(forced["data"]["mine"], "2");
}

TEST_F(ClientIntegrationTest, TypedNodeStatusSubresourceAndConflicts) {
  TypedClient<apis::core::Node> nodes(*client_, resources::kNodes);
  apis::core::Node node;
  node.metadata.name = UniqueName("node");
  node.metadata.labels["kubernetes.io/hostname"] = node.metadata.name;
  node.spec.provider_id = "kwok://" + node.metadata.name;
  absl::StatusOr<apis::core::Node> created = nodes.Create(node);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_FALSE(created->metadata.uid.empty());

  apis::core::Node with_status = *created;
  with_status.status.capacity["cpu"] = *Quantity::Parse("4");
  with_status.status.allocatable["cpu"] = *Quantity::Parse("3800m");
  absl::StatusOr<apis::core::Node> status_updated = nodes.UpdateStatus(with_status);
  ASSERT_TRUE(status_updated.ok()) << status_updated.status();
  EXPECT_EQ(status_updated->status.allocatable.at("cpu").MilliValue(), 3800);

  // The stale copy (resourceVersion before the status update) conflicts.
  apis::core::Node stale = *created;
  stale.spec.unschedulable = true;
  EXPECT_TRUE(IsConflict(nodes.Update(stale).status()));

  // RetryOnConflict re-reads and succeeds.
  ASSERT_TRUE(RetryOnConflict([&]() -> absl::Status {
                ASSIGN_OR_RETURN(apis::core::Node fresh, nodes.Get("", node.metadata.name));
                fresh.spec.unschedulable = true;
                return nodes.Update(fresh).status();
              }).ok());
  EXPECT_TRUE(nodes.Get("", node.metadata.name)->spec.unschedulable);
  ASSERT_TRUE(nodes.Delete("", node.metadata.name).ok());
}

TEST_F(ClientIntegrationTest, ConcurrentWritersAreSerialisedByConflictRetries) {
  ASSERT_TRUE(
      client_->Create(resources::kConfigMaps, ns_, ConfigMap("counter", {{"n", "0"}}).dump()).ok());
  constexpr int kWriters = 4;
  constexpr int kIncrements = 15;
  std::atomic<int> conflicts{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        absl::Status status = RetryOnConflict(
            [&]() -> absl::Status {
              ASSIGN_OR_RETURN(std::string body,
                               client_->Get(resources::kConfigMaps, ns_, "counter"));
              nlohmann::json cm = nlohmann::json::parse(body);
              cm["data"]["n"] = std::to_string(std::stoi(cm["data"]["n"].get<std::string>()) + 1);
              absl::Status s =
                  client_->Update(resources::kConfigMaps, ns_, "counter", cm.dump()).status();
              if (IsConflict(s)) conflicts.fetch_add(1);
              return s;
            },
            {.attempts = 100});
        EXPECT_TRUE(status.ok()) << status;
      }
    });
  }
  for (std::thread& t : writers) t.join();
  EXPECT_EQ(MustJson(client_->Get(resources::kConfigMaps, ns_, "counter"))["data"]["n"],
            std::to_string(kWriters * kIncrements));
  EXPECT_GT(conflicts.load(), 0) << "the writers never raced; the test proves nothing";
}

TEST_F(ClientIntegrationTest, FinalizerHelpersAreIdempotentAndKeepOtherFinalizers) {
  ASSERT_TRUE(client_->Create(resources::kConfigMaps, ns_, ConfigMap("f", {}).dump()).ok());
  std::thread a([&] {
    for (int i = 0; i < 5; ++i) {
      EXPECT_TRUE(AddFinalizer(*client_, resources::kConfigMaps, ns_, "f", "example.com/a").ok());
    }
  });
  std::thread b([&] {
    for (int i = 0; i < 5; ++i) {
      EXPECT_TRUE(AddFinalizer(*client_, resources::kConfigMaps, ns_, "f", "example.com/b").ok());
    }
  });
  a.join();
  b.join();
  auto cm = MustJson(client_->Get(resources::kConfigMaps, ns_, "f"));
  std::set<std::string> finalizers;
  for (const auto& f : cm["metadata"]["finalizers"]) finalizers.insert(f.get<std::string>());
  EXPECT_EQ(finalizers, (std::set<std::string>{"example.com/a", "example.com/b"}));
  EXPECT_EQ(cm["metadata"]["finalizers"].size(), 2u);
  ASSERT_TRUE(client_->Delete(resources::kConfigMaps, ns_, "f").ok());
  ASSERT_TRUE(RemoveFinalizer(*client_, resources::kConfigMaps, ns_, "f", "example.com/a").ok());
  ASSERT_TRUE(RemoveFinalizer(*client_, resources::kConfigMaps, ns_, "f", "example.com/b").ok());
  EXPECT_TRUE(WaitFor(
      [&] { return kube::IsNotFound(client_->Get(resources::kConfigMaps, ns_, "f").status()); }));
  EXPECT_TRUE(RemoveFinalizer(*client_, resources::kConfigMaps, ns_, "f", "example.com/a").ok());
}

TEST_F(ClientIntegrationTest, PaginatesOverFiveThousandObjects) {
  constexpr int kObjects = 5000;
  constexpr int kThreads = 8;
  std::vector<std::thread> creators;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    creators.emplace_back([&, t] {
      for (int i = t; i < kObjects; i += kThreads) {
        if (!client_
                 ->Create(resources::kConfigMaps, ns_,
                          ConfigMap("cm-" + std::to_string(i), {{"i", std::to_string(i)}}).dump())
                 .ok()) {
          failures.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : creators) t.join();
  ASSERT_EQ(failures.load(), 0);

  std::set<std::string> names;
  int pages = 0;
  std::string first_rv;
  ASSERT_TRUE(client_
                  ->ListAll(resources::kConfigMaps, ns_, {.limit = 500},
                            [&](const ListPage& page) -> absl::Status {
                              ++pages;
                              if (first_rv.empty()) first_rv = page.resource_version;
                              const nlohmann::json list = nlohmann::json::parse(page.body);
                              for (const auto& item : list["items"]) {
                                names.insert(item["metadata"]["name"].get<std::string>());
                              }
                              return absl::OkStatus();
                            })
                  .ok());
  // kube-root-ca.crt is not published without the controller manager; count ours only.
  int ours = 0;
  for (const std::string& n : names) ours += n.rfind("cm-", 0) == 0 ? 1 : 0;
  EXPECT_EQ(ours, kObjects);
  EXPECT_GE(pages, kObjects / 500);
  EXPECT_FALSE(first_rv.empty());
}

TEST_F(ClientIntegrationTest, EvictionIsRefusedWith429WhileThePdbAllowsNoDisruption) {
  nlohmann::json pod = PodJson(ns_, "guarded");
  pod["metadata"]["labels"] = {{"app", "guarded"}};
  ASSERT_TRUE(client_->Create(resources::kPods, ns_, pod.dump()).ok());
  // Mark the pod running and ready (there is no kubelet): a pending pod is never PDB-protected.
  auto current = MustJson(client_->Get(resources::kPods, ns_, "guarded"));
  current["status"] = {{"phase", "Running"},
                       {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}};
  ASSERT_TRUE(client_->UpdateStatus(resources::kPods, ns_, "guarded", current.dump()).ok());

  const nlohmann::json pdb = {
      {"apiVersion", "policy/v1"},
      {"kind", "PodDisruptionBudget"},
      {"metadata", {{"name", "guard"}, {"namespace", ns_}}},
      {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "guarded"}}}}}}}};
  auto created_pdb = MustJson(client_->Create(resources::kPodDisruptionBudgets, ns_, pdb.dump()));
  // No disruption controller runs here: publish the PDB status it would compute.
  auto set_pdb_status = [&](int allowed) {
    auto current_pdb = MustJson(client_->Get(resources::kPodDisruptionBudgets, ns_, "guard"));
    current_pdb["status"] = {{"observedGeneration", current_pdb["metadata"]["generation"]},
                             {"disruptionsAllowed", allowed},
                             {"currentHealthy", 1 + allowed},
                             {"desiredHealthy", 1},
                             {"expectedPods", 1 + allowed}};
    ASSERT_TRUE(
        client_->UpdateStatus(resources::kPodDisruptionBudgets, ns_, "guard", current_pdb.dump())
            .ok());
  };
  set_pdb_status(0);
  absl::Status refused = client_->Evict(ns_, "guarded");
  EXPECT_TRUE(IsTooManyRequests(refused)) << refused;
  EXPECT_TRUE(client_->Get(resources::kPods, ns_, "guarded").ok());

  set_pdb_status(1);
  absl::Status evicted = client_->Evict(ns_, "guarded");
  EXPECT_TRUE(evicted.ok()) << evicted;
  EXPECT_TRUE(WaitFor([&] {
    auto got = client_->Get(resources::kPods, ns_, "guarded");
    return kube::IsNotFound(got.status()) ||
           (got.ok() && nlohmann::json::parse(*got)["metadata"].contains("deletionTimestamp"));
  }));
  EXPECT_TRUE(kube::IsNotFound(client_->Evict(ns_, "no-such-pod")));
}

TEST_F(ClientIntegrationTest, EventsAreDeduplicatedIntoSeriesAndRateLimitedPerObject) {
  RealClock clock;
  EventRecorder recorder(*client_, clock, {.reporting_instance = "test", .burst = 2});
  const ObjectReference regarding{
      .api_version = "v1", .kind = "ConfigMap", .ns = ns_, .name = "subject", .uid = "uid-1"};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(recorder.Record(regarding, "Normal", "Launched", "Launch", "same note").ok());
  }
  ASSERT_TRUE(recorder.Record(regarding, "Warning", "Failed", "Launch", "other note").ok());
  // A third distinct event for the same object exceeds the burst of 2.
  EXPECT_EQ(recorder.Record(regarding, "Warning", "Failed", "Launch", "third").code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(recorder.dropped(), 1);

  auto list = client_->List(resources::kEvents, ns_);
  ASSERT_TRUE(list.ok()) << list.status();
  const nlohmann::json items = nlohmann::json::parse(list->body)["items"];
  ASSERT_EQ(items.size(), 2u);
  int launched_count = 0;
  for (const auto& event : items) {
    if (event["reason"] == "Launched") launched_count = event["series"]["count"].get<int>();
    EXPECT_EQ(event["regarding"]["name"], "subject");
  }
  EXPECT_EQ(launched_count, 3);
}

// Every create/update/delete reaches the cache and the handlers exactly once, and the indexes
// follow.
TEST_F(ClientIntegrationTest, InformerSeesEveryChangeOnceAndIndexesFollow) {
  StringPool pool;
  DecodeContext ctx{.pool = &pool};
  Informer<PodCodec> informer(*client_, resources::kPods, PodCodec{&ctx},
                              {.ns = ns_, .page_size = 50});
  informer.store().AddIndex(kIndexNodeName, PodsByNodeName);
  informer.store().AddIndex(kIndexOwnerUid, PodsByOwnerUid);
  absl::Mutex mu;
  absl::flat_hash_map<std::string, int> adds, deletes;
  absl::flat_hash_map<std::string, std::string> mirror;  // key -> rv, from the handlers alone
  const HandlerRegistration registration = informer.AddHandler({
      .on_add =
          [&](const auto& p) {
            absl::MutexLock l(&mu);
            ++adds[p->meta.Key()];
            mirror[p->meta.Key()] = p->meta.resource_version;
          },
      .on_update =
          [&](const auto&, const auto& p) {
            absl::MutexLock l(&mu);
            mirror[p->meta.Key()] = p->meta.resource_version;
          },
      .on_delete =
          [&](const auto& p) {
            absl::MutexLock l(&mu);
            ++deletes[p->meta.Key()];
            mirror.erase(p->meta.Key());
          },
  });
  // Some objects exist before the informer starts (initial list), the rest arrive by watch.
  for (int i = 0; i < 60; ++i) {
    ASSERT_TRUE(client_
                    ->Create(resources::kPods, ns_,
                             PodJson(ns_, "pre-" + std::to_string(i), "node-a").dump())
                    .ok());
  }
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Now() + absl::Seconds(30)));
  EXPECT_EQ(informer.store().size(), 60u);

  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      for (int i = w; i < 120; i += 4) {
        const std::string name = "live-" + std::to_string(i);
        ASSERT_TRUE(
            client_->Create(resources::kPods, ns_, PodJson(ns_, name, i % 2 ? "node-b" : "").dump())
                .ok());
        if (i % 3 == 0) {
          ASSERT_TRUE(client_
                          ->Patch(resources::kPods, ns_, name, PatchType::kMerge,
                                  R"({"metadata":{"labels":{"touched":"yes"}}})")
                          .ok());
        }
        if (i % 5 == 0) {
          ASSERT_TRUE(
              client_->Delete(resources::kPods, ns_, name, {.grace_period_seconds = 0}).ok());
        }
      }
      for (int i = w; i < 60; i += 4) {
        if (i % 6 == 0) {
          ASSERT_TRUE(client_
                          ->Delete(resources::kPods, ns_, "pre-" + std::to_string(i),
                                   {.grace_period_seconds = 0})
                          .ok());
        }
      }
    });
  }
  for (std::thread& t : writers) t.join();

  // Converges to exactly the server's state.
  auto server_state = [&] {
    std::map<std::string, std::string> state;
    EXPECT_TRUE(client_
                    ->ListAll(resources::kPods, ns_, {},
                              [&](const ListPage& page) {
                                const nlohmann::json list = nlohmann::json::parse(page.body);
                                for (const auto& item : list["items"]) {
                                  state[ns_ + "/" + item["metadata"]["name"].get<std::string>()] =
                                      item["metadata"]["resourceVersion"];
                                }
                                return absl::OkStatus();
                              })
                    .ok());
    return state;
  };
  const auto expected = server_state();
  auto cache_state = [&] {
    std::map<std::string, std::string> state;
    for (const auto& p : informer.store().List()) state[p->meta.Key()] = p->meta.resource_version;
    return state;
  };
  ASSERT_TRUE(WaitFor([&] { return cache_state() == expected; })) << "cache never converged";
  {
    absl::MutexLock l(&mu);
    std::map<std::string, std::string> mirrored(mirror.begin(), mirror.end());
    EXPECT_EQ(mirrored, expected);
    for (const auto& [key, n] : adds) EXPECT_EQ(n, 1) << key << " added " << n << " times";
    for (const auto& [key, n] : deletes) EXPECT_EQ(n, 1) << key << " deleted " << n << " times";
    EXPECT_EQ(adds.size(), 180u);
    EXPECT_EQ(deletes.size(), 24u + 10u);
  }
  size_t on_b = 0;
  for (const auto& [key, rv] : expected) {
    auto pod = informer.store().Get(key);
    ASSERT_NE(pod, nullptr);
    if (pod->node_name == "node-b") ++on_b;
  }
  EXPECT_EQ(informer.store().ByIndex(kIndexNodeName, "node-b").size(), on_b);
  EXPECT_EQ(informer.store().ByIndex(kIndexNodeName, "node-a").size(), 50u);
  EXPECT_EQ(informer.stats().gone, 0);
  informer.Stop();
}

}  // namespace
}  // namespace dovetail::kube
