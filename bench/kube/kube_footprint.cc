// Footprint of Dovetail's informer cache (issue 4, item 7): caches N pods and M nodes from a real
// kube-apiserver and reports the memory the cache costs and how fast lists decode.
//
//   kube_footprint [--pods 100000] [--nodes 10000] [--namespaces 100] [--writers 16]
//                  [--skip-create] [--save-pages DIR] [--json FILE]
//   kube_footprint --decode-only DIR [--rounds 5]
//
// With KUBECONFIG pointing at a test cluster (bench/kube/run.sh starts one with tools/k8s), it
//  1. creates the nodes and pods (unless --skip-create) with many concurrent writers: realistic
//     objects with labels, owner references, resource requests/limits, tolerations, a node
//     selector, some affinity, a few annotations; pods have spec.nodeName set (no scheduler);
//  2. starts a node informer and then a pod informer (page size 500) and waits for each to sync,
//     measuring wall time (list + decode + store, end to end) and the process's memory before and
//     after: live heap (mallinfo2 uordblks + hblkhd), RSS, and the decoders' own estimate
//     (ApproximateBytes);
//  3. lists every page once more and decodes the kept pages in a loop (no network): the decode
//     throughput of the simdjson decoders alone. --save-pages keeps those pages on disk, and
//     --decode-only DIR repeats just this step on them (to compare builds).
// Prints a markdown table and, with --json, writes the figures as JSON.
// Not a unit of CI: a benchmark; it never asserts on time.
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/config.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/informer.h"
#include "dovetail/kube/objects.h"
#include "dovetail/kube/rest_client.h"
#include "dovetail/kube/watch_event.h"
#include "nlohmann/json.hpp"
#include "simdjson.h"

namespace dovetail::kube {
namespace {

struct Flags {
  int64_t pods = 100000;
  int64_t nodes = 10000;
  int namespaces = 100;
  int writers = 16;
  bool skip_create = false;
  std::string save_pages;
  std::string decode_only;
  std::string json;
  int rounds = 5;
};

bool ParseFlags(int argc, char** argv, Flags& f) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--pods") {
      f.pods = std::atoll(next().c_str());
    } else if (a == "--nodes") {
      f.nodes = std::atoll(next().c_str());
    } else if (a == "--namespaces") {
      f.namespaces = std::atoi(next().c_str());
    } else if (a == "--writers") {
      f.writers = std::atoi(next().c_str());
    } else if (a == "--skip-create") {
      f.skip_create = true;
    } else if (a == "--save-pages") {
      f.save_pages = next();
    } else if (a == "--decode-only") {
      f.decode_only = next();
    } else if (a == "--json") {
      f.json = next();
    } else if (a == "--rounds") {
      f.rounds = std::atoi(next().c_str());
    } else {
      std::cerr << "unknown flag " << a << "\n";
      return false;
    }
  }
  return f.pods >= 0 && f.nodes > 0 && f.namespaces > 0 && f.writers > 0;
}

// Live heap bytes (small blocks in use + mmapped blocks).
int64_t HeapBytes() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
}

int64_t StatusKb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(in, line)) {
    if (line.compare(0, n, field) == 0) return std::atoll(line.c_str() + n + 1);
  }
  return 0;
}
int64_t RssBytes() { return StatusKb("VmRSS:") * 1024; }
int64_t PeakRssBytes() { return StatusKb("VmHWM:") * 1024; }

std::string Mb(double bytes) { return absl::StrFormat("%.1f MB", bytes / 1e6); }

// ------------------------------------------------------------------------------ object builders

constexpr const char* kZones[] = {"us-west-2a", "us-west-2b", "us-west-2c"};
constexpr const char* kTypes[] = {"m5.large",    "m5.xlarge", "c5.2xlarge", "r5.xlarge",
                                  "m6i.4xlarge", "c6g.large", "t3.medium",  "m7i.2xlarge"};

std::string NodeName(int64_t i) {
  return absl::StrFormat("ip-10-%d-%d-%d.us-west-2.compute.internal", (i >> 16) & 255,
                         (i >> 8) & 255, i & 255);
}

nlohmann::json NodeJson(int64_t i) {
  const std::string name = NodeName(i);
  const char* zone = kZones[i % 3];
  const char* type = kTypes[i % 8];
  const std::string instance = absl::StrFormat("i-0%016x", 0x1234567ull * (i + 1));
  nlohmann::json node = {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"labels",
         {{"kubernetes.io/hostname", name},
          {"kubernetes.io/os", "linux"},
          {"kubernetes.io/arch", i % 8 == 5 ? "arm64" : "amd64"},
          {"node.kubernetes.io/instance-type", type},
          {"topology.kubernetes.io/zone", zone},
          {"topology.kubernetes.io/region", "us-west-2"},
          {"karpenter.sh/nodepool", i % 4 == 0 ? "gpu" : "default"},
          {"karpenter.sh/capacity-type", i % 5 == 0 ? "spot" : "on-demand"},
          {"karpenter.k8s.aws/instance-family",
           std::string(type).substr(0, std::string(type).find('.'))},
          {"karpenter.sh/initialized", "true"},
          {"karpenter.sh/registered", "true"}}},
        {"annotations",
         {{"karpenter.sh/nodepool-hash", "4012513481623584108"},
          {"karpenter.k8s.aws/ec2nodeclass-hash", "15535182697325354914"},
          {"node.alpha.kubernetes.io/ttl", "0"},
          {"volumes.kubernetes.io/controller-managed-attach-detach", "true"}}},
        {"finalizers", {"karpenter.sh/termination"}}}},
      {"spec", {{"providerID", absl::StrCat("aws:///", zone, "/", instance)}}},
      {"status",
       {{"capacity",
         {{"cpu", "8"},
          {"memory", "32329544Ki"},
          {"pods", "58"},
          {"ephemeral-storage", "104845292Ki"}}},
        {"allocatable",
         {{"cpu", "7910m"},
          {"memory", "31312712Ki"},
          {"pods", "58"},
          {"ephemeral-storage", "95551679124"}}},
        {"conditions",
         {{{"type", "MemoryPressure"},
           {"status", "False"},
           {"reason", "KubeletHasSufficientMemory"},
           {"lastHeartbeatTime", "2026-11-30T12:00:00Z"},
           {"lastTransitionTime", "2026-11-30T11:00:00Z"}},
          {{"type", "DiskPressure"},
           {"status", "False"},
           {"reason", "KubeletHasNoDiskPressure"},
           {"lastHeartbeatTime", "2026-11-30T12:00:00Z"},
           {"lastTransitionTime", "2026-11-30T11:00:00Z"}},
          {{"type", "Ready"},
           {"status", "True"},
           {"reason", "KubeletReady"},
           {"lastHeartbeatTime", "2026-11-30T12:00:00Z"},
           {"lastTransitionTime", "2026-11-30T11:00:05Z"}}}},
        {"addresses",
         {{{"type", "InternalIP"},
           {"address", absl::StrFormat("10.%d.%d.%d", (i >> 16) & 255, (i >> 8) & 255, i & 255)}},
          {{"type", "Hostname"}, {"address", name}}}},
        {"nodeInfo",
         {{"kubeletVersion", "v1.34.4"},
          {"containerRuntimeVersion", "containerd://1.7.27"},
          {"osImage", "Amazon Linux 2023"},
          {"kernelVersion", "6.1.0"},
          {"architecture", "amd64"},
          {"operatingSystem", "linux"},
          {"machineID", "ec2" + instance},
          {"systemUUID", "ec2" + instance},
          {"bootID", "b" + instance},
          {"kubeProxyVersion", ""}}}}}};
  if (i % 4 == 0) {
    node["spec"]["taints"] = {
        {{"key", "nvidia.com/gpu"}, {"value", "true"}, {"effect", "NoSchedule"}}};
  }
  return node;
}

nlohmann::json PodJson(int64_t i, const Flags& f) {
  const int64_t deployment = i / 10;  // 10 replicas per ReplicaSet
  const std::string ns = absl::StrCat("team-", deployment % f.namespaces);
  const std::string app = absl::StrCat("svc-", deployment);
  const std::string hash = absl::StrFormat("%08x", static_cast<uint32_t>(deployment * 2654435761u));
  const std::string rs = absl::StrCat(app, "-", hash);
  const std::string name =
      absl::StrFormat("%s-%05x", rs, static_cast<uint32_t>(i * 40503u) & 0xfffff);
  const std::string rs_uid =
      absl::StrFormat("%08x-0000-4000-8000-%012x", deployment, deployment * 7919);
  nlohmann::json container = {
      {"name", "app"},
      {"image",
       absl::StrCat("123456789012.dkr.ecr.us-west-2.amazonaws.com/", app, ":v1.", deployment % 50)},
      {"ports", {{{"containerPort", 8080}, {"protocol", "TCP"}, {"name", "http"}}}},
      {"env", {{{"name", "LOG_LEVEL"}, {"value", "info"}}, {{"name", "SERVICE"}, {"value", app}}}},
      {"resources",
       {{"requests",
         {{"cpu", absl::StrCat(100 * (1 + i % 8), "m")},
          {"memory", absl::StrCat(128 * (1 + i % 4), "Mi")}}},
        {"limits", {{"cpu", "2"}, {"memory", absl::StrCat(256 * (1 + i % 4), "Mi")}}}}},
      {"readinessProbe",
       {{"httpGet", {{"path", "/healthz"}, {"port", 8080}}}, {"periodSeconds", 10}}},
      {"terminationMessagePolicy", "File"},
      {"imagePullPolicy", "IfNotPresent"}};
  nlohmann::json containers = {container};
  if (i % 3 == 0) {
    containers.push_back({{"name", "sidecar"},
                          {"image", "public.ecr.aws/aws-observability/aws-for-fluent-bit:2.32.0"},
                          {"resources", {{"requests", {{"cpu", "50m"}, {"memory", "64Mi"}}}}}});
  }
  nlohmann::json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", ns},
        {"labels",
         {{"app.kubernetes.io/name", app},
          {"app.kubernetes.io/part-of", absl::StrCat("product-", deployment % 20)},
          {"pod-template-hash", hash},
          {"tier", i % 2 ? "backend" : "frontend"}}},
        {"annotations",
         {{"kubectl.kubernetes.io/restartedAt", "2026-11-29T08:15:00Z"},
          {"prometheus.io/scrape", "true"},
          {"prometheus.io/port", "8080"},
          {"karpenter.sh/do-not-disrupt", i % 50 == 0 ? "true" : "false"}}},
        {"ownerReferences",
         {{{"apiVersion", "apps/v1"},
           {"kind", "ReplicaSet"},
           {"name", rs},
           {"uid", rs_uid},
           {"controller", true},
           {"blockOwnerDeletion", true}}}}}},
      {"spec",
       {{"nodeName", NodeName(i % f.nodes)},
        {"containers", containers},
        {"serviceAccountName", "default"},
        {"terminationGracePeriodSeconds", 30},
        {"nodeSelector", {{"kubernetes.io/os", "linux"}}},
        {"tolerations",
         {{{"key", "node.kubernetes.io/not-ready"},
           {"operator", "Exists"},
           {"effect", "NoExecute"},
           {"tolerationSeconds", 300}},
          {{"key", "node.kubernetes.io/unreachable"},
           {"operator", "Exists"},
           {"effect", "NoExecute"},
           {"tolerationSeconds", 300}}}}}}};
  if (i % 5 == 0) {
    pod["spec"]["affinity"] = nlohmann::json::parse(absl::StrCat(
        R"({"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":100,)",
        R"("podAffinityTerm":{"labelSelector":{"matchLabels":{"app.kubernetes.io/name":")", app,
        R"("}},"topologyKey":"topology.kubernetes.io/zone"}}]}})"));
  }
  if (i % 7 == 0) {
    pod["spec"]["topologySpreadConstraints"] = nlohmann::json::parse(absl::StrCat(
        R"([{"maxSkew":1,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"ScheduleAnyway",)",
        R"("labelSelector":{"matchLabels":{"app.kubernetes.io/name":")", app, R"("}}}])"));
  }
  return pod;
}

// Runs `count` creates over `writers` threads; AlreadyExists counts as done (re-runs).
absl::Status CreateAll(const RestConfig& config, int writers, int64_t count,
                       const Resource& resource,
                       const std::function<std::pair<std::string, std::string>(int64_t)>& make) {
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> failed{0};
  std::string first_error;
  absl::Mutex mu;
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&] {
      auto rest = RestClient::Create(config);
      if (!rest.ok()) {
        ++failed;
        return;
      }
      Client client(**rest);
      for (int64_t i = next++; i < count; i = next++) {
        const auto [ns, body] = make(i);
        absl::StatusOr<std::string> created = client.Create(resource, ns, body);
        if (!created.ok() && !kube::IsAlreadyExists(created.status())) {
          if (++failed == 1) {
            absl::MutexLock l(&mu);
            first_error = created.status().ToString();
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (failed > 0)
    return absl::InternalError(absl::StrCat(failed.load(), " creates failed: ", first_error));
  return absl::OkStatus();
}

// ------------------------------------------------------------------------------ decode-only

struct DecodeFigures {
  int64_t objects = 0;
  int64_t bytes = 0;
  double seconds = 0;  // best round
};

template <typename Decode>
DecodeFigures DecodePages(const std::vector<std::string>& pages, int rounds, Decode decode) {
  DecodeFigures best;
  simdjson::ondemand::parser parser;
  for (int r = 0; r < rounds; ++r) {
    int64_t objects = 0, bytes = 0;
    const absl::Time start = absl::Now();
    for (const std::string& page : pages) {
      std::string body = page;  // ParseList pads the body in place
      bytes += static_cast<int64_t>(page.size());
      ListMeta meta;
      const absl::Status status = ParseList(
          parser, body, meta, [&](simdjson::ondemand::object item, simdjson::ondemand::document&) {
            ++objects;
            return decode(item);
          });
      if (!status.ok()) {
        std::cerr << "decode failed: " << status << "\n";
        std::exit(1);
      }
    }
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    if (r == 0 || seconds < best.seconds) best = {objects, bytes, seconds};
  }
  return best;
}

std::vector<std::string> ReadPages(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  for (int i = 0;; ++i) {
    std::ifstream in(absl::StrCat(dir, "/", prefix, "-", i, ".json"), std::ios::binary);
    if (!in) break;
    std::ostringstream s;
    s << in.rdbuf();
    out.push_back(s.str());
  }
  return out;
}

nlohmann::json DecodeReport(const std::vector<std::string>& pod_pages,
                            const std::vector<std::string>& node_pages, int rounds) {
  StringPool pool;
  PodConstraintPool constraints;  // as state::ClusterInformers decodes
  DecodeContext ctx{.pool = &pool, .constraints = &constraints};
  const DecodeFigures pods = DecodePages(pod_pages, rounds, [&](simdjson::ondemand::object o) {
    PodInfo pod;
    return DecodePod(o, ctx, pod);
  });
  const DecodeFigures nodes = DecodePages(node_pages, rounds, [&](simdjson::ondemand::object o) {
    NodeInfo node;
    return DecodeNode(o, ctx, node);
  });
  return {{"simdjson_active_implementation", simdjson::get_active_implementation()->name()},
          // The kernel this file's On-Demand code was compiled for (builtin_implementation() would
          // name the shared library's).
          {"simdjson_builtin_implementation", SIMDJSON_STRINGIFY(SIMDJSON_BUILTIN_IMPLEMENTATION)},
          {"decode_pods", pods.objects},
          {"decode_pods_per_s", pods.objects / pods.seconds},
          {"decode_pods_mb_per_s", pods.bytes / pods.seconds / 1e6},
          {"decode_nodes", nodes.objects},
          {"decode_nodes_per_s", nodes.objects / nodes.seconds},
          {"decode_nodes_mb_per_s", nodes.bytes / nodes.seconds / 1e6},
          {"decode_rounds", rounds}};
}

// ------------------------------------------------------------------------------ main

int Main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, flags)) return 2;
  if (!flags.decode_only.empty()) {
    const auto pod_pages = ReadPages(flags.decode_only, "pods");
    const auto node_pages = ReadPages(flags.decode_only, "nodes");
    if (pod_pages.empty() || node_pages.empty()) {
      std::cerr << "no saved pages in " << flags.decode_only << "\n";
      return 1;
    }
    const nlohmann::json report = DecodeReport(pod_pages, node_pages, flags.rounds);
    std::cout << report.dump(2) << "\n";
    if (!flags.json.empty()) std::ofstream(flags.json) << report.dump(2) << "\n";
    return 0;
  }

  absl::StatusOr<RestConfig> config = LoadDefaultConfig();
  if (!config.ok()) {
    std::cerr << config.status() << "\n";
    return 1;
  }
  config->qps = 0;
  auto rest = RestClient::Create(*config);
  if (!rest.ok()) {
    std::cerr << rest.status() << "\n";
    return 1;
  }
  Client client(**rest);
  nlohmann::json report = {{"pods", flags.pods}, {"nodes", flags.nodes}};

  if (!flags.skip_create) {
    for (int n = 0; n < flags.namespaces; ++n) {
      const nlohmann::json ns = {{"apiVersion", "v1"},
                                 {"kind", "Namespace"},
                                 {"metadata", {{"name", absl::StrCat("team-", n)}}}};
      auto created = client.Create(resources::kNamespaces, "", ns.dump());
      if (!created.ok() && !kube::IsAlreadyExists(created.status())) {
        std::cerr << created.status() << "\n";
        return 1;
      }
    }
    absl::Time start = absl::Now();
    absl::Status status =
        CreateAll(*config, flags.writers, flags.nodes, resources::kNodes,
                  [](int64_t i) { return std::make_pair(std::string(), NodeJson(i).dump()); });
    if (!status.ok()) {
      std::cerr << "nodes: " << status << "\n";
      return 1;
    }
    const double node_s = absl::ToDoubleSeconds(absl::Now() - start);
    std::cerr << "created " << flags.nodes << " nodes in " << node_s << " s\n";
    start = absl::Now();
    status = CreateAll(*config, flags.writers, flags.pods, resources::kPods, [&](int64_t i) {
      nlohmann::json pod = PodJson(i, flags);
      return std::make_pair(pod["metadata"]["namespace"].get<std::string>(), pod.dump());
    });
    if (!status.ok()) {
      std::cerr << "pods: " << status << "\n";
      return 1;
    }
    const double pod_s = absl::ToDoubleSeconds(absl::Now() - start);
    std::cerr << "created " << flags.pods << " pods in " << pod_s << " s\n";
    report["create_nodes_per_s"] = flags.nodes / node_s;
    report["create_pods_per_s"] = flags.pods / pod_s;
  }

  // The cache, measured from a quiet heap.
  malloc_trim(0);
  const int64_t heap0 = HeapBytes(), rss0 = RssBytes();
  StringPool pool;
  PodConstraintPool constraints;  // as state::ClusterInformers decodes
  DecodeContext ctx{.pool = &pool, .constraints = &constraints};
  Informer<NodeCodec> nodes(client, resources::kNodes, NodeCodec{&ctx}, {.page_size = 500});
  nodes.store().AddIndex(kIndexProviderId, NodesByProviderId);
  absl::Time start = absl::Now();
  nodes.Start();
  if (!nodes.WaitForSync(absl::Now() + absl::Minutes(10))) {
    std::cerr << "node informer did not sync: " << nodes.stats().last_error << "\n";
    return 1;
  }
  const double node_sync_s = absl::ToDoubleSeconds(absl::Now() - start);
  malloc_trim(0);
  const int64_t heap1 = HeapBytes(), rss1 = RssBytes();

  Informer<PodCodec> pods(client, resources::kPods, PodCodec{&ctx}, {.page_size = 500});
  pods.store().AddIndex(kIndexNodeName, PodsByNodeName);
  pods.store().AddIndex(kIndexNamespace, PodsByNamespace);
  pods.store().AddIndex(kIndexOwnerUid, PodsByOwnerUid);
  start = absl::Now();
  pods.Start();
  if (!pods.WaitForSync(absl::Now() + absl::Minutes(20))) {
    std::cerr << "pod informer did not sync: " << pods.stats().last_error << "\n";
    return 1;
  }
  const double pod_sync_s = absl::ToDoubleSeconds(absl::Now() - start);
  malloc_trim(0);
  const int64_t heap2 = HeapBytes(), rss2 = RssBytes();
  const int64_t cached_pods = static_cast<int64_t>(pods.store().size());
  const int64_t cached_nodes = static_cast<int64_t>(nodes.store().size());
  int64_t approx_pods = 0, approx_nodes = 0;
  pods.store().ForEach([&](const PodInfo& p) { approx_pods += ApproximateBytes(p); });
  nodes.store().ForEach([&](const NodeInfo& n) { approx_nodes += ApproximateBytes(n); });
  const int64_t peak_with_cache = PeakRssBytes();

  report.update({{"cached_pods", cached_pods},
                 {"cached_nodes", cached_nodes},
                 {"interned_strings", pool.size()},
                 {"node_sync_s", node_sync_s},
                 {"pod_sync_s", pod_sync_s},
                 {"informer_nodes_per_s", cached_nodes / node_sync_s},
                 {"informer_pods_per_s", cached_pods / pod_sync_s},
                 {"heap_per_node", static_cast<double>(heap1 - heap0) / cached_nodes},
                 {"heap_per_pod", static_cast<double>(heap2 - heap1) / cached_pods},
                 {"rss_per_node", static_cast<double>(rss1 - rss0) / cached_nodes},
                 {"rss_per_pod", static_cast<double>(rss2 - rss1) / cached_pods},
                 {"approx_per_node", static_cast<double>(approx_nodes) / cached_nodes},
                 {"approx_per_pod", static_cast<double>(approx_pods) / cached_pods},
                 {"cache_heap_bytes", heap2 - heap0},
                 {"cache_rss_bytes", rss2 - rss0},
                 {"rss_before_cache", rss0},
                 {"rss_with_cache", rss2},
                 {"peak_rss_with_cache", peak_with_cache}});

  // Decode alone: the same pages again, decoded from memory.
  std::vector<std::string> pod_pages, node_pages;
  for (auto [resource, pages] :
       {std::pair{&resources::kPods, &pod_pages}, std::pair{&resources::kNodes, &node_pages}}) {
    absl::Status status = client.ListAll(*resource, "", {.limit = 500}, [&](const ListPage& page) {
      pages->push_back(page.body);
      return absl::OkStatus();
    });
    if (!status.ok()) {
      std::cerr << "list: " << status << "\n";
      return 1;
    }
  }
  if (!flags.save_pages.empty()) {
    std::filesystem::create_directories(flags.save_pages);
    for (size_t i = 0; i < pod_pages.size(); ++i) {
      std::ofstream(absl::StrCat(flags.save_pages, "/pods-", i, ".json"), std::ios::binary)
          << pod_pages[i];
    }
    for (size_t i = 0; i < node_pages.size(); ++i) {
      std::ofstream(absl::StrCat(flags.save_pages, "/nodes-", i, ".json"), std::ios::binary)
          << node_pages[i];
    }
  }
  int64_t wire_bytes = 0;
  for (const std::string& p : pod_pages) wire_bytes += static_cast<int64_t>(p.size());
  report["pod_list_json_bytes_per_pod"] = static_cast<double>(wire_bytes) / cached_pods;
  report.update(DecodeReport(pod_pages, node_pages, flags.rounds));
  report["peak_rss"] = PeakRssBytes();

  nodes.Stop();
  pods.Stop();

  const double cache_bytes = static_cast<double>(heap2 - heap0);
  std::cout << "| figure | value | target |\n| --- | --- | --- |\n";
  std::cout << absl::StrFormat("| cached pods / nodes | %d / %d | 100,000 / 10,000 |\n",
                               cached_pods, cached_nodes);
  std::cout << absl::StrFormat(
      "| live heap per cached pod | %.0f B | <= 2,048 B (%.2fx of target) |\n",
      report["heap_per_pod"].get<double>(), report["heap_per_pod"].get<double>() / 2048);
  std::cout << absl::StrFormat("| live heap per cached node | %.0f B | |\n",
                               report["heap_per_node"].get<double>());
  std::cout << absl::StrFormat("| RSS delta per pod / node | %.0f B / %.0f B | |\n",
                               report["rss_per_pod"].get<double>(),
                               report["rss_per_node"].get<double>());
  std::cout << absl::StrFormat("| decoder estimate per pod / node | %.0f B / %.0f B | |\n",
                               report["approx_per_pod"].get<double>(),
                               report["approx_per_node"].get<double>());
  std::cout << absl::StrFormat("| whole cache (live heap) | %s | <= 400 MB (%.2fx) |\n",
                               Mb(cache_bytes), cache_bytes / 400e6);
  std::cout << absl::StrFormat("| whole cache (RSS delta) | %s | |\n",
                               Mb(static_cast<double>(rss2 - rss0)));
  std::cout << absl::StrFormat(
      "| process RSS with cache / peak RSS through the sync / peak RSS overall | %s / %s / %s | "
      "|\n",
      Mb(static_cast<double>(rss2)), Mb(static_cast<double>(peak_with_cache)),
      Mb(report["peak_rss"].get<double>()));
  std::cout << absl::StrFormat("| informer list+decode+store, pods | %.0f pods/s (%.1f s) | |\n",
                               report["informer_pods_per_s"].get<double>(), pod_sync_s);
  std::cout << absl::StrFormat("| informer list+decode+store, nodes | %.0f nodes/s (%.1f s) | |\n",
                               report["informer_nodes_per_s"].get<double>(), node_sync_s);
  std::cout << absl::StrFormat(
      "| decode only, pods | %.0f pods/s (%.0f MB/s) | >= 50,000 pods/s (%.1fx) |\n",
      report["decode_pods_per_s"].get<double>(), report["decode_pods_mb_per_s"].get<double>(),
      report["decode_pods_per_s"].get<double>() / 50000);
  std::cout << absl::StrFormat("| decode only, nodes | %.0f nodes/s (%.0f MB/s) | |\n",
                               report["decode_nodes_per_s"].get<double>(),
                               report["decode_nodes_mb_per_s"].get<double>());
  std::cout << absl::StrFormat("| pod list JSON per pod | %.0f B | |\n",
                               report["pod_list_json_bytes_per_pod"].get<double>());
  std::cout << "| simdjson kernels (stage 1 runtime / On-Demand builtin) | "
            << report["simdjson_active_implementation"].get<std::string>() << " / "
            << report["simdjson_builtin_implementation"].get<std::string>() << " | |\n";
  if (report.contains("create_pods_per_s")) {
    std::cout << absl::StrFormat("| creating (setup, %d writers) | %.0f pods/s, %.0f nodes/s | |\n",
                                 flags.writers, report["create_pods_per_s"].get<double>(),
                                 report["create_nodes_per_s"].get<double>());
  }
  if (!flags.json.empty()) std::ofstream(flags.json) << report.dump(2) << "\n";
  return 0;
}

}  // namespace
}  // namespace dovetail::kube

int main(int argc, char** argv) { return dovetail::kube::Main(argc, argv); }
