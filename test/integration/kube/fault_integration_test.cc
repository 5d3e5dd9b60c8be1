// Informers and leader election against a real kube-apiserver behind a fault-injecting proxy
// (fixture kube_integration).
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/informer.h"
#include "dovetail/kube/leader_election.h"
#include "dovetail/kube/undecodable.h"
#include "dovetail/metrics/registry.h"
#include "gtest/gtest.h"
#include "test/integration/kube/fault_proxy.h"
#include "test/integration/kube/test_env.h"

namespace dovetail::kube {
namespace {

using ::dovetail::kube::testing::CreateNamespace;
using ::dovetail::kube::testing::FaultProxy;
using ::dovetail::kube::testing::KubeconfigFromEnv;
using ::dovetail::kube::testing::NewRestClient;
using ::dovetail::kube::testing::PodJson;
using ::dovetail::kube::testing::UniqueName;
using ::dovetail::kube::testing::WaitFor;

std::map<std::string, std::string> ServerPods(Client& client, const std::string& ns) {
  std::map<std::string, std::string> state;
  EXPECT_TRUE(client
                  .ListAll(resources::kPods, ns, {},
                           [&](const ListPage& page) {
                             const nlohmann::json list = nlohmann::json::parse(page.body);
                             for (const auto& item : list["items"]) {
                               state[ns + "/" + item["metadata"]["name"].get<std::string>()] =
                                   item["metadata"]["resourceVersion"];
                             }
                             return absl::OkStatus();
                           })
                  .ok());
  return state;
}

TEST(FaultIntegrationTest, InformerCacheSurvivesErrorsCutWatchesAndSlowResponses) {
  const RestConfig config = KubeconfigFromEnv();
  auto direct_rest = NewRestClient(config);
  Client direct(*direct_rest);
  const std::string ns = UniqueName("faults");
  CreateNamespace(direct, ns);

  FaultProxy proxy(config);
  proxy.SetFaults({.fail_every = 4, .cut_watch_after = 2500, .delay = absl::Milliseconds(5)});
  auto proxied_rest = NewRestClient(proxy.ClientConfig());
  Client proxied(*proxied_rest);

  StringPool pool;
  DecodeContext ctx{.pool = &pool};
  Informer<PodCodec> informer(
      proxied, resources::kPods, PodCodec{&ctx},
      {.ns = ns,
       .page_size = 20,
       .backoff = {.initial = absl::Milliseconds(10), .max = absl::Milliseconds(200)}});
  absl::Mutex mu;
  absl::flat_hash_map<std::string, int> adds;
  std::map<std::string, std::string> mirror;
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
            mirror.erase(p->meta.Key());
          },
  });
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(
        direct.Create(resources::kPods, ns, PodJson(ns, "pre-" + std::to_string(i)).dump()).ok());
  }
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Now() + absl::Seconds(60)));

  for (int i = 0; i < 150; ++i) {
    const std::string name = "p-" + std::to_string(i);
    ASSERT_TRUE(direct.Create(resources::kPods, ns, PodJson(ns, name).dump()).ok());
    if (i % 2 == 0) {
      ASSERT_TRUE(direct
                      .Patch(resources::kPods, ns, name, PatchType::kMerge,
                             R"({"metadata":{"labels":{"n":")" + std::to_string(i) + R"("}}})")
                      .ok());
    }
    if (i % 7 == 0) {
      ASSERT_TRUE(direct.Delete(resources::kPods, ns, name, {.grace_period_seconds = 0}).ok());
    }
    if (i % 10 == 0) {
      ASSERT_TRUE(direct
                      .Delete(resources::kPods, ns, "pre-" + std::to_string(i / 10),
                              {.grace_period_seconds = 0})
                      .ok());
    }
  }
  // Faults stop; the cache must converge to the server's exact state.
  proxy.SetFaults({});
  const auto expected = ServerPods(direct, ns);
  auto cache = [&] {
    std::map<std::string, std::string> state;
    for (const auto& p : informer.store().List()) state[p->meta.Key()] = p->meta.resource_version;
    return state;
  };
  ASSERT_TRUE(WaitFor([&] { return cache() == expected; }, absl::Seconds(120)))
      << "cache has " << cache().size() << " pods, server " << expected.size() << "; lists "
      << informer.stats().lists << " watches " << informer.stats().watches << " errors "
      << informer.stats().errors << " events " << informer.stats().events << " gone "
      << informer.stats().gone << " last error " << informer.stats().last_error;
  const InformerStats stats = informer.stats();
  EXPECT_GT(proxy.injected(), 0);
  EXPECT_GT(stats.errors, 0) << "no fault reached the informer";
  EXPECT_GT(stats.watches, 1);
  absl::MutexLock l(&mu);
  EXPECT_EQ(mirror, expected) << "handlers saw a different history than the cache";
  for (const auto& [key, n] : adds) {
    // A key is added again only if a re-list found it deleted meanwhile; names are unique here.
    EXPECT_EQ(n, 1) << key;
  }
  informer.Stop();
}

// The proxy rewrites one pod ("bad") into JSON no decoder accepts, in every List and watch event
// that carries it. The informer must sync without it, count and skip it, and keep following the
// other pods: no failed list or watch, no re-list.
TEST(FaultIntegrationTest, InformerSkipsAnUndecodableObjectAndKeepsFollowingTheOthers) {
  const RestConfig config = KubeconfigFromEnv();
  auto direct_rest = NewRestClient(config);
  Client direct(*direct_rest);
  const std::string ns = UniqueName("undecodable");
  CreateNamespace(direct, ns);
  for (const std::string name : {"a", "bad", "b"}) {
    ASSERT_TRUE(direct.Create(resources::kPods, ns, PodJson(ns, name).dump()).ok());
  }

  FaultProxy proxy(config);
  proxy.SetFaults({.undecodable = "bad"});
  auto proxied_rest = NewRestClient(proxy.ClientConfig());
  Client proxied(*proxied_rest);
  StringPool pool;
  DecodeContext ctx{.pool = &pool};
  metrics::Registry registry;
  Informer<PodCodec> informer(proxied, resources::kPods, PodCodec{&ctx},
                              {.ns = ns, .page_size = 2, .metrics = &registry});
  const metrics::Counter& decode_errors =
      registry.NewCounter(kInformerDecodeErrorsMetric, "", {"kind"});
  auto cached = [&] {
    std::map<std::string, std::string> state;
    for (const auto& p : informer.store().List()) state[p->meta.name] = p->meta.resource_version;
    return state;
  };
  auto names = [&] {
    std::vector<std::string> out;
    for (const auto& [name, rv] : cached()) out.push_back(name);
    return out;
  };
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Now() + absl::Seconds(60))) << informer.stats().last_error;
  EXPECT_EQ(names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_GE(proxy.injected(), 1);
  EXPECT_EQ(decode_errors.Value({"Pod"}), 1);
  EXPECT_EQ(informer.stats().decode_errors, 1);

  // The bad pod changes (a watch event the proxy rewrites too), then pods around it change.
  ASSERT_TRUE(direct
                  .Patch(resources::kPods, ns, "bad", PatchType::kMerge,
                         R"({"metadata":{"labels":{"changed":"1"}}})")
                  .ok());
  ASSERT_TRUE(direct.Create(resources::kPods, ns, PodJson(ns, "after").dump()).ok());
  auto a_patched = direct.Patch(resources::kPods, ns, "a", PatchType::kMerge,
                                R"({"metadata":{"labels":{"changed":"1"}}})");
  ASSERT_TRUE(a_patched.ok()) << a_patched.status();
  const std::string a_rv = nlohmann::json::parse(*a_patched)["metadata"]["resourceVersion"];
  ASSERT_TRUE(direct.Delete(resources::kPods, ns, "b", {.grace_period_seconds = 0}).ok());
  ASSERT_TRUE(WaitFor([&] {
    auto state = cached();
    return state.size() == 2 && state.contains("after") && state["a"] == a_rv;
  })) << "cache: "
      << absl::StrJoin(names(), ",") << "; " << informer.stats().last_error;
  EXPECT_EQ(decode_errors.Value({"Pod"}), 2);  // the list item and the MODIFIED event

  // Once the object decodes again (the fault is gone), its next change brings it in.
  proxy.SetFaults({});
  ASSERT_TRUE(direct
                  .Patch(resources::kPods, ns, "bad", PatchType::kMerge,
                         R"({"metadata":{"labels":{"changed":"2"}}})")
                  .ok());
  ASSERT_TRUE(WaitFor([&] { return cached().contains("bad"); }))
      << "cache: " << absl::StrJoin(names(), ",");

  const InformerStats stats = informer.stats();
  EXPECT_EQ(stats.errors, 0) << stats.last_error;  // no list or watch failed
  EXPECT_EQ(stats.lists, 1);                       // and nothing forced a re-list
  EXPECT_EQ(stats.decode_errors, 2);
  informer.Stop();
}

struct Timeline {
  absl::Mutex mu;
  std::vector<std::pair<std::string, absl::Time>> events;
  void Add(std::string what) {
    absl::MutexLock l(&mu);
    events.emplace_back(std::move(what), absl::Now());
  }
  std::optional<absl::Time> First(const std::string& what) {
    absl::MutexLock l(&mu);
    for (const auto& [w, t] : events) {
      if (w == what) return t;
    }
    return std::nullopt;
  }
  std::optional<absl::Time> Last(const std::string& what) {
    absl::MutexLock l(&mu);
    std::optional<absl::Time> last;
    for (const auto& [w, t] : events) {
      if (w == what) last = t;
    }
    return last;
  }
};

TEST(FaultIntegrationTest, LeaderHandsOverOnPartitionWithoutOverlappingWriters) {
  const RestConfig config = KubeconfigFromEnv();
  auto direct_rest = NewRestClient(config);
  Client direct(*direct_rest);
  const std::string ns = UniqueName("lease");
  CreateNamespace(direct, ns);
  ASSERT_TRUE(
      direct.Create(resources::kConfigMaps, ns, R"({"metadata":{"name":"writes"},"data":{}})")
          .ok());

  FaultProxy proxy(config);  // elector A reaches the API server through it
  RealClock clock;
  const LeaderElectionConfig base{.lease_namespace = ns,
                                  .lease_name = "dovetail-test",
                                  .lease_duration = absl::Seconds(3),
                                  .renew_deadline = absl::Seconds(2),
                                  .retry_period = absl::Milliseconds(300)};
  Timeline timeline;
  WriteGate gate_a(&clock), gate_b(&clock);
  auto make = [&](const std::string& id, RestConfig rc, WriteGate* gate) {
    LeaderElectionConfig c = base;
    c.identity = id;
    return std::make_unique<LeaderElector>(
        NewRestClient(rc), c, clock, gate,
        LeaderCallbacks{.on_started_leading = [&, id] { timeline.Add(id + " lead"); },
                        .on_stopped_leading = [&, id] { timeline.Add(id + " stop"); }});
  };
  auto a = make("a", proxy.ClientConfig(), &gate_a);
  auto b = make("b", config, &gate_b);

  // Each candidate has a writer that writes through its gate as fast as it can.
  std::atomic<bool> done{false};
  std::atomic<bool> both_led{false};
  auto writer = [&](const std::string& id, WriteGate* gate) {
    auto rest = NewRestClient(config);
    Client gated(*rest, gate);
    while (!done.load()) {
      const absl::Time before = absl::Now();
      if (gated
              .Patch(resources::kConfigMaps, ns, "writes", PatchType::kMerge,
                     R"({"data":{"last":")" + id + R"("}})")
              .ok()) {
        timeline.Add(id + " write");
        (void)before;
      }
      if (gate_a.is_open() && gate_b.is_open()) both_led.store(true);
      std::this_thread::yield();
    }
  };
  a->Start();
  ASSERT_TRUE(WaitFor([&] { return a->IsLeader(); }, absl::Seconds(30)));
  b->Start();
  std::thread writer_a(writer, "a", &gate_a);
  std::thread writer_b(writer, "b", &gate_b);
  ASSERT_TRUE(WaitFor([&] { return timeline.First("a write").has_value(); }));
  EXPECT_FALSE(b->IsLeader());

  // Partition A from the API server: it cannot renew, stops writing at its renew deadline, and
  // B takes over once the lease has not changed for the lease duration.
  const absl::Time partitioned_at = absl::Now();
  proxy.SetFaults({.partition = true});
  ASSERT_TRUE(WaitFor([&] { return b->IsLeader(); }, absl::Seconds(30)));
  ASSERT_TRUE(WaitFor([&] { return timeline.First("b write").has_value(); }));
  const absl::Time b_lead = *timeline.First("b lead");
  EXPECT_LT(*timeline.Last("a write"), b_lead) << "A wrote after B started leading";
  EXPECT_LE(b_lead - partitioned_at, base.lease_duration + base.renew_deadline)
      << "hand-over took longer than the lease allows";
  ASSERT_TRUE(WaitFor([&] { return timeline.First("a stop").has_value(); }));

  // A reconnects but must not lead while B renews.
  proxy.SetFaults({});
  const absl::Time healed = absl::Now();
  ASSERT_TRUE(WaitFor([&] { return absl::Now() - healed > base.lease_duration; }));
  EXPECT_FALSE(a->IsLeader());
  EXPECT_TRUE(b->IsLeader());

  // B steps down and releases the lease: A takes over well within a lease duration.
  const absl::Time released = absl::Now();
  b->Stop();
  ASSERT_TRUE(WaitFor([&] { return a->IsLeader(); }, absl::Seconds(30)));
  EXPECT_LT(absl::Now() - released, base.lease_duration);
  ASSERT_TRUE(WaitFor([&] { return timeline.Last("a write") > timeline.Last("b write"); }));
  done.store(true);
  writer_a.join();
  writer_b.join();
  a->Stop();
  EXPECT_FALSE(both_led.load()) << "both write gates were open at the same time";
  // After B stopped, no write of B follows A's second lead.
  absl::MutexLock l(&timeline.mu);
  absl::Time a_second_lead = absl::InfinitePast();
  int a_leads = 0;
  for (const auto& [w, t] : timeline.events) {
    if (w == "a lead" && ++a_leads == 2) a_second_lead = t;
  }
  ASSERT_EQ(a_leads, 2);
  for (const auto& [w, t] : timeline.events) {
    if (w == "b write") {
      EXPECT_LT(t, a_second_lead);
    }
  }
}

// A write waiting to be retried (429 with Retry-After) when its process loses the lease is never
// retried: the WriteGate is asked before every attempt, so nothing the old leader sends lands
// after the new leader writes. Without that, the retry below would overwrite the new leader's
// write two seconds later.
TEST(FaultIntegrationTest, NoRetryOfTheOldLeaderLandsAfterTheNewOneLeads) {
  const RestConfig config = KubeconfigFromEnv();
  auto direct_rest = NewRestClient(config);
  Client direct(*direct_rest);
  const std::string ns = UniqueName("fence");
  CreateNamespace(direct, ns);
  ASSERT_TRUE(
      direct.Create(resources::kConfigMaps, ns, R"({"metadata":{"name":"writes"},"data":{}})")
          .ok());
  FaultProxy proxy(config);  // A's writer reaches the API server through it
  RealClock clock;
  const LeaderElectionConfig base{.lease_namespace = ns,
                                  .lease_name = "dovetail-fence-test",
                                  .lease_duration = absl::Seconds(3),
                                  .renew_deadline = absl::Seconds(2),
                                  .retry_period = absl::Milliseconds(300)};
  WriteGate gate_a(&clock), gate_b(&clock);
  auto make = [&](const std::string& id, WriteGate* gate) {
    LeaderElectionConfig c = base;
    c.identity = id;
    return std::make_unique<LeaderElector>(NewRestClient(config), c, clock, gate,
                                           LeaderCallbacks{});
  };
  auto a = make("a", &gate_a);
  auto b = make("b", &gate_b);
  a->Start();
  ASSERT_TRUE(WaitFor([&] { return a->IsLeader(); }, absl::Seconds(30)));
  b->Start();

  // A writes while the API server throttles it for two seconds.
  proxy.SetFaults({.throttle_every = 1, .retry_after_seconds = 2});
  absl::Status a_status;
  std::thread writer([&] {
    auto rest = NewRestClient(proxy.ClientConfig());
    Client gated(*rest, &gate_a);
    a_status = gated
                   .Patch(resources::kConfigMaps, ns, "writes", PatchType::kMerge,
                          R"({"data":{"last":"a"}})")
                   .status();
  });
  ASSERT_TRUE(WaitFor([&] { return proxy.throttled() >= 1; }, absl::Seconds(30)));
  // The leader changes while A's write waits: A steps down, B leads and writes.
  a->Stop();
  ASSERT_TRUE(WaitFor([&] { return b->IsLeader(); }, absl::Seconds(30)));
  Client gated_b(*direct_rest, &gate_b);
  ASSERT_TRUE(gated_b
                  .Patch(resources::kConfigMaps, ns, "writes", PatchType::kMerge,
                         R"({"data":{"last":"b"}})")
                  .ok());
  proxy.SetFaults({});  // a retry sent from now on would land
  writer.join();
  EXPECT_EQ(a_status.code(), absl::StatusCode::kFailedPrecondition) << a_status;
  EXPECT_EQ(proxy.throttled(), 1) << "A's write was retried after it lost the lease";
  auto got = direct.Get(resources::kConfigMaps, ns, "writes");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(nlohmann::json::parse(*got)["data"].value("last", ""), "b");
  b->Stop();
}

}  // namespace
}  // namespace dovetail::kube
