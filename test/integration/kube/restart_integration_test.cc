// Informers across an API server restart and across a 410 Gone forced by etcd compaction, against
// a real kube-apiserver and etcd (fixture kube_restart: a cluster of its own, because these tests
// restart its API server; configmaps have no watch cache there, so their watches are served by
// etcd and see its compaction).
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/informer.h"
#include "gtest/gtest.h"
#include "httplib.h"
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

// key -> resourceVersion
using State = std::map<std::string, std::string>;

// ConfigMaps cached as their metadata only.
struct MetaCodec {
  using Object = CompactMeta;
  const DecodeContext* ctx;
  absl::Status Decode(simdjson::ondemand::object obj, CompactMeta& out) const {
    return DecodeMeta(obj, *ctx, out);
  }
  std::string Key(const CompactMeta& meta) const { return meta.Key(); }
  std::string_view ResourceVersion(const CompactMeta& meta) const { return meta.resource_version; }
};

const CompactMeta& MetaOf(const CompactMeta& meta) { return meta; }
const CompactMeta& MetaOf(const PodInfo& pod) { return pod.meta; }

// What the handlers saw: the mirror they build and how often each key was added and deleted.
template <typename T>
struct HandlerLog {
  absl::Mutex mu;
  State mirror;
  absl::flat_hash_map<std::string, int> adds;
  absl::flat_hash_map<std::string, int> deletes;

  EventHandler<T> Handler() {
    return {
        .on_add =
            [this](const std::shared_ptr<const T>& o) {
              absl::MutexLock l(&mu);
              ++adds[MetaOf(*o).Key()];
              mirror[MetaOf(*o).Key()] = MetaOf(*o).resource_version;
            },
        .on_update =
            [this](const std::shared_ptr<const T>&, const std::shared_ptr<const T>& o) {
              absl::MutexLock l(&mu);
              mirror[MetaOf(*o).Key()] = MetaOf(*o).resource_version;
            },
        .on_delete =
            [this](const std::shared_ptr<const T>& o) {
              absl::MutexLock l(&mu);
              ++deletes[MetaOf(*o).Key()];
              mirror.erase(MetaOf(*o).Key());
            },
    };
  }

  // Every key was added exactly once (names are never reused here) and deleted at most once.
  void ExpectNoDuplicates() {
    absl::MutexLock l(&mu);
    for (const auto& [key, n] : adds) EXPECT_EQ(n, 1) << "added " << n << " times: " << key;
    for (const auto& [key, n] : deletes) EXPECT_EQ(n, 1) << "deleted " << n << " times: " << key;
  }
};

State ServerState(Client& client, const Resource& resource, const std::string& ns) {
  State state;
  EXPECT_TRUE(client
                  .ListAll(resource, ns, {},
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

template <typename Store>
State CacheState(const Store& store) {
  State state;
  store.ForEach([&](const auto& o) { state[MetaOf(o).Key()] = MetaOf(o).resource_version; });
  return state;
}

std::string StatsString(const InformerStats& s) {
  std::ostringstream out;
  out << "lists " << s.lists << " gone " << s.gone << " watches " << s.watches << " errors "
      << s.errors << " events " << s.events << " bookmarks " << s.bookmarks << " last error '"
      << s.last_error << "'";
  return out.str();
}

nlohmann::json ClusterState() {
  const char* dir = std::getenv("DOVETAIL_KUBE_DIR");
  if (dir == nullptr) {
    ADD_FAILURE() << "DOVETAIL_KUBE_DIR is not set";
    return {};
  }
  std::ifstream in(std::string(dir) + "/state.json");
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// tools/k8s/cluster.py restart-apiserver: stops kube-apiserver and starts it from the same argv.
bool RestartApiServer() {
  const std::string command = std::string("python3 '") + DOVETAIL_CLUSTER_PY +
                              "' restart-apiserver --grace 5 --dir '" +
                              std::getenv("DOVETAIL_KUBE_DIR") + "'";
  return std::system(command.c_str()) == 0;
}

// Compacts etcd's history up to its current revision (etcd's gRPC gateway, as `etcdctl compact`
// does) and returns that revision, or 0 on failure.
int64_t CompactEtcd() {
  const nlohmann::json state = ClusterState();
  const int port = state["components"]["etcd"]["ports"]["client"];
  httplib::Client etcd("127.0.0.1", port);
  auto range =
      etcd.Post("/v3/kv/range", R"({"key":"AA==","limit":1,"keys_only":true})", "application/json");
  if (!range || range->status != 200) return 0;
  const std::string revision =
      nlohmann::json::parse(range->body)["header"]["revision"].get<std::string>();
  auto compact =
      etcd.Post("/v3/kv/compaction", R"({"revision":")" + revision + R"(","physical":true})",
                "application/json");
  if (!compact || compact->status != 200) {
    ADD_FAILURE() << "compaction failed: " << (compact ? compact->body : "no answer");
    return 0;
  }
  return std::stoll(revision);
}

TEST(RestartIntegrationTest, InformerWatchSurvivesApiServerRestart) {
  const RestConfig config = KubeconfigFromEnv();
  auto rest = NewRestClient(config);
  Client client(*rest);
  const std::string ns = UniqueName("restart");
  CreateNamespace(client, ns);
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(
        client.Create(resources::kPods, ns, PodJson(ns, "a-" + std::to_string(i)).dump()).ok());
  }

  // The informer has a client of its own, so the test's writes never share its connections.
  auto informer_rest = NewRestClient(config);
  Client informer_client(*informer_rest);
  StringPool pool;
  DecodeContext ctx{.pool = &pool};
  Informer<PodCodec> informer(
      informer_client, resources::kPods, PodCodec{&ctx},
      {.ns = ns,
       .page_size = 25,
       .backoff = {.initial = absl::Milliseconds(20), .max = absl::Milliseconds(500)}});
  HandlerLog<PodInfo> log;
  const HandlerRegistration registration = informer.AddHandler(log.Handler());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Now() + absl::Seconds(60)));
  for (int i = 0; i < 40; i += 3) {
    ASSERT_TRUE(client
                    .Patch(resources::kPods, ns, "a-" + std::to_string(i), PatchType::kMerge,
                           R"({"metadata":{"labels":{"phase":"before"}}})")
                    .ok());
  }
  ASSERT_TRUE(WaitFor([&] {
    return CacheState(informer.store()) == ServerState(client, resources::kPods, ns);
  })) << StatsString(informer.stats());
  const InformerStats before = informer.stats();

  ASSERT_TRUE(RestartApiServer());

  // Changes after the restart: creates, updates of objects cached before it, deletions.
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(
        client.Create(resources::kPods, ns, PodJson(ns, "b-" + std::to_string(i)).dump()).ok());
  }
  for (int i = 1; i < 40; i += 3) {
    ASSERT_TRUE(client
                    .Patch(resources::kPods, ns, "a-" + std::to_string(i), PatchType::kMerge,
                           R"({"metadata":{"labels":{"phase":"after"}}})")
                    .ok());
  }
  for (int i = 2; i < 40; i += 5) {
    ASSERT_TRUE(
        client.Delete(resources::kPods, ns, "a-" + std::to_string(i), {.grace_period_seconds = 0})
            .ok());
  }
  const State expected = ServerState(client, resources::kPods, ns);
  ASSERT_TRUE(WaitFor([&] { return CacheState(informer.store()) == expected; }, absl::Seconds(120)))
      << "cache " << CacheState(informer.store()).size() << " pods, server " << expected.size()
      << "; " << StatsString(informer.stats());
  const InformerStats after = informer.stats();
  std::cout << "after the restart: " << StatsString(after) << "\n";
  EXPECT_GT(after.watches, before.watches) << "the informer never opened a new watch";
  EXPECT_GT(after.events, before.events);
  {
    absl::MutexLock l(&log.mu);
    EXPECT_EQ(log.mirror, expected) << "handlers saw a different history than the cache";
  }
  log.ExpectNoDuplicates();
  informer.Stop();
}

TEST(RestartIntegrationTest, InformerRelistsAfterEtcdCompactionForcesGone) {
  const RestConfig config = KubeconfigFromEnv();
  auto rest = NewRestClient(config);
  Client client(*rest);
  const std::string ns = UniqueName("compact");
  CreateNamespace(client, ns);
  auto configmap = [&](const std::string& name) {
    return nlohmann::json({{"apiVersion", "v1"},
                           {"kind", "ConfigMap"},
                           {"metadata", {{"name", name}, {"namespace", ns}}},
                           {"data", {{"v", "0"}}}})
        .dump();
  };
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(
        client.Create(resources::kConfigMaps, ns, configmap("a-" + std::to_string(i))).ok());
  }

  FaultProxy proxy(config);
  auto proxied_rest = NewRestClient(proxy.ClientConfig());
  Client proxied(*proxied_rest);
  StringPool pool;
  DecodeContext ctx{.pool = &pool};
  Informer<MetaCodec> informer(
      proxied, resources::kConfigMaps, MetaCodec{&ctx},
      {.ns = ns,
       .page_size = 10,
       .backoff = {.initial = absl::Milliseconds(20), .max = absl::Milliseconds(300)}});
  HandlerLog<CompactMeta> log;
  const HandlerRegistration registration = informer.AddHandler(log.Handler());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Now() + absl::Seconds(60)));
  // A watch event first, so the informer's version is a watched one, not only the list's.
  ASSERT_TRUE(
      client.Patch(resources::kConfigMaps, ns, "a-0", PatchType::kMerge, R"({"data":{"v":"1"}})")
          .ok());
  ASSERT_TRUE(WaitFor([&] {
    return CacheState(informer.store()) == ServerState(client, resources::kConfigMaps, ns);
  })) << StatsString(informer.stats());
  const InformerStats before = informer.stats();
  ASSERT_EQ(before.gone, 0);

  // Partition the informer, change things it cannot see, and compact them out of etcd's history.
  proxy.SetFaults({.partition = true});
  ASSERT_TRUE(WaitFor([&] { return informer.stats().errors > before.errors; }))
      << StatsString(informer.stats());
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(
        client.Create(resources::kConfigMaps, ns, configmap("b-" + std::to_string(i))).ok());
  }
  for (int i = 1; i < 30; i += 3) {
    ASSERT_TRUE(client
                    .Patch(resources::kConfigMaps, ns, "a-" + std::to_string(i), PatchType::kMerge,
                           R"({"data":{"v":"2"}})")
                    .ok());
  }
  for (int i = 2; i < 30; i += 3) {
    ASSERT_TRUE(client.Delete(resources::kConfigMaps, ns, "a-" + std::to_string(i)).ok());
  }
  const int64_t compacted = CompactEtcd();
  ASSERT_GT(compacted, 0);
  ASSERT_LT(std::stoll(informer.last_resource_version()), compacted);

  proxy.SetFaults({});
  const State expected = ServerState(client, resources::kConfigMaps, ns);
  ASSERT_TRUE(WaitFor([&] { return CacheState(informer.store()) == expected; }, absl::Seconds(120)))
      << "cache " << CacheState(informer.store()).size() << " objects, server " << expected.size()
      << "; " << StatsString(informer.stats());
  const InformerStats after = informer.stats();
  std::cout << "after compaction at revision " << compacted << ": " << StatsString(after) << "\n";
  EXPECT_GT(after.gone, 0) << "no 410 Gone reached the informer";
  EXPECT_GT(after.lists, before.lists) << "no re-list after the 410";
  {
    absl::MutexLock l(&log.mu);
    EXPECT_EQ(log.mirror, expected) << "handlers saw a different history than the cache";
    for (int i = 2; i < 30; i += 3) {
      EXPECT_EQ(log.deletes[ns + "/a-" + std::to_string(i)], 1) << "delete not delivered: a-" << i;
    }
  }
  log.ExpectNoDuplicates();

  // And the new watch works: a change after the re-list arrives as an event.
  const int64_t events = informer.stats().events;
  ASSERT_TRUE(
      client.Patch(resources::kConfigMaps, ns, "b-0", PatchType::kMerge, R"({"data":{"v":"3"}})")
          .ok());
  EXPECT_TRUE(WaitFor([&] {
    return CacheState(informer.store()) == ServerState(client, resources::kConfigMaps, ns);
  })) << StatsString(informer.stats());
  EXPECT_GT(informer.stats().events, events);
  informer.Stop();
}

}  // namespace
}  // namespace dovetail::kube
