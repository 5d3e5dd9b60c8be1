#include "dovetail/kube/objects.h"

#include <optional>
#include <string>
#include <vector>

#include "dovetail/kube/errors.h"
#include "dovetail/kube/informer.h"
#include "dovetail/kube/store.h"
#include "dovetail/kube/watch_event.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::kube {
namespace {

constexpr char kPodJson[] = R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "web-1", "namespace": "prod", "uid": "u-1", "resourceVersion": "42",
    "creationTimestamp": "2024-05-01T10:00:00Z",
    "labels": {"app": "web", "pod-template-hash": "abc"},
    "annotations": {"karpenter.sh/do-not-disrupt": "true", "huge": "dropped"},
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc",
                         "uid": "rs-1", "controller": true}],
    "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]},
  "spec": {
    "nodeName": "node-a", "priority": 100, "nodeSelector": {"zone": "a"},
    "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute",
                     "tolerationSeconds": 30}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "arch", "operator": "In",
                                                      "values": ["arm64"]}]}]}}},
    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-web-1"}},
                {"name": "cfg", "configMap": {"name": "x"}}],
    "initContainers": [
      {"name": "sidecar", "restartPolicy": "Always",
       "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
      {"name": "migrate", "resources": {"requests": {"cpu": "2", "memory": "32Mi"}}}],
    "containers": [
      {"name": "a", "image": "nginx", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"},
                                                    "limits": {"cpu": "1", "memory": "1Gi"}},
       "ports": [{"containerPort": 80, "hostPort": 8080}]},
      {"name": "b", "resources": {"requests": {"cpu": "250m"}}}]},
  "status": {"phase": "Running", "nominatedNodeName": "",
    "conditions": [{"type": "Ready", "status": "True",
                    "lastTransitionTime": "2024-05-01T10:01:30Z"},
                   {"type": "PodScheduled", "status": "True",
                    "lastTransitionTime": "2024-05-01T10:00:05Z"}]}
})";

absl::Status DecodePodText(const std::string& text, StringPool& pool, PodInfo& pod,
                           PodConstraintPool* constraints = nullptr) {
  DecodeContext ctx{.pool = &pool, .constraints = constraints};
  simdjson::ondemand::parser parser;
  simdjson::padded_string padded(text);
  simdjson::ondemand::document doc;
  if (parser.iterate(padded).get(doc)) return absl::InvalidArgumentError("iterate");
  simdjson::ondemand::object obj;
  if (doc.get_object().get(obj)) return absl::InvalidArgumentError("object");
  return DecodePod(obj, ctx, pod);
}

TEST(DecodePodTest, KeepsSchedulingFieldsAndComputesEffectiveRequests) {
  StringPool pool;
  PodInfo pod;
  ASSERT_TRUE(DecodePodText(kPodJson, pool, pod).ok());
  EXPECT_EQ(pod.meta.Key(), "prod/web-1");
  EXPECT_EQ(pod.meta.resource_version, "42");
  ASSERT_NE(pod.meta.Label("app"), nullptr);
  EXPECT_EQ(*pod.meta.Label("app"), "web");
  ASSERT_NE(pod.meta.Annotation("karpenter.sh/do-not-disrupt"), nullptr);
  EXPECT_EQ(pod.meta.Annotation("huge"), nullptr);
  ASSERT_EQ(pod.meta.owners.size(), 1u);
  EXPECT_EQ(*pod.meta.owners[0].kind, "ReplicaSet");
  EXPECT_EQ(*pod.meta.owners[0].api_version, "apps/v1");
  EXPECT_TRUE(pod.meta.owners[0].controller);
  EXPECT_EQ(pod.node_name, "node-a");
  EXPECT_EQ(pod.priority, 100);
  EXPECT_EQ(pod.phase, apis::core::PodPhase::kRunning);
  EXPECT_TRUE(pod.ready);
  EXPECT_FALSE(pod.unschedulable);
  EXPECT_EQ(pod.scheduled_transition, absl::FromUnixSeconds(1714557605));
  EXPECT_EQ(pod.ready_transition, absl::FromUnixSeconds(1714557690));
  // Limits as Kubernetes computes them: only container a sets any.
  ASSERT_EQ(pod.limits.size(), 2u);
  for (const ResourceAmount& l : pod.limits) {
    EXPECT_EQ(l.milli, *l.name == "cpu" ? 1000 : (int64_t{1} << 30) * 1000) << *l.name;
  }
  // cpu: max(containers 500m + sidecar 100m, sidecar 100m + init 2000m) = 2100m.
  EXPECT_EQ(pod.RequestMilli("cpu"), 2100);
  // memory: max(1Gi + 64Mi, 64Mi + 32Mi).
  EXPECT_EQ(pod.RequestMilli("memory"), (int64_t{1} << 30) * 1000 + (int64_t{64} << 20) * 1000);
  EXPECT_EQ(pod.host_ports, std::vector<int32_t>{8080});
  EXPECT_EQ(pod.pvc_names, std::vector<std::string>{"data-web-1"});
  ASSERT_EQ(pod.tolerations.size(), 1u);
  EXPECT_EQ(pod.tolerations[0].op, 1);
  EXPECT_EQ(pod.tolerations[0].seconds, 30);
  ASSERT_NE(pod.affinity, nullptr);
  EXPECT_EQ(pod.affinity->node_affinity->required->terms[0].match_expressions[0].values,
            std::vector<std::string>{"arm64"});
}

// Affinity and topology spread are decoded with the pod, once: replicas with the same text share
// one value through the pool; a field of the wrong type refuses the pod (the informer skips it and
// reports it, undecodable.h) rather than failing every later pass that reads it.
TEST(DecodePodTest, DecodesAffinityAndTopologySpreadOnce) {
  StringPool pool;
  PodConstraintPool constraints;
  const std::string spec = R"("spec": {"affinity": {"podAntiAffinity":
        {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname",
          "labelSelector": {"matchLabels": {"app": "web"}}}]}},
      "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}]})";
  PodInfo a;
  PodInfo b;
  ASSERT_TRUE(
      DecodePodText(R"({"metadata": {"name": "a"}, )" + spec + "}", pool, a, &constraints).ok());
  ASSERT_TRUE(
      DecodePodText(R"({"metadata": {"name": "b"}, )" + spec + "}", pool, b, &constraints).ok());
  ASSERT_NE(a.affinity, nullptr);
  ASSERT_NE(a.topology_spread, nullptr);
  EXPECT_EQ(a.affinity, b.affinity);
  EXPECT_EQ(a.topology_spread, b.topology_spread);
  EXPECT_EQ(a.affinity->pod_anti_affinity->required[0].topology_key, "kubernetes.io/hostname");
  ASSERT_EQ(a.topology_spread->size(), 1u);
  EXPECT_EQ((*a.topology_spread)[0].max_skew, 1);

  PodInfo plain;
  ASSERT_TRUE(DecodePodText(R"({"metadata": {"name": "c"},
      "spec": {"affinity": {}, "topologySpreadConstraints": []}})",
                            pool, plain, &constraints)
                  .ok());
  EXPECT_EQ(plain.affinity, nullptr);
  EXPECT_EQ(plain.topology_spread, nullptr);

  PodInfo bad;
  const absl::Status status = DecodePodText(R"({"metadata": {"name": "d"},
      "spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        [{"topologyKey": 5}]}}}})",
                                            pool, bad);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("spec.affinity"));
}

// Dynamic Resource Allocation: a pod-level claim or a container's resources.claims; empty lists
// are no requirement.
TEST(DecodePodTest, NotesDynamicResourceAllocationClaims) {
  StringPool pool;
  PodInfo plain;
  ASSERT_TRUE(DecodePodText(kPodJson, pool, plain).ok());
  EXPECT_FALSE(plain.has_dra_requirements);
  for (const char* text : {
           R"({"metadata": {"name": "a"}, "spec": {"resourceClaims": [{"name": "gpu",
                "resourceClaimTemplateName": "gpu"}], "containers": [{"name": "c"}]}})",
           R"({"metadata": {"name": "b"}, "spec": {"containers": [{"name": "c",
                "resources": {"claims": [{"name": "gpu"}]}}]}})",
           R"({"metadata": {"name": "c"}, "spec": {"initContainers": [{"name": "i",
                "resources": {"claims": [{"name": "gpu"}]}}]}})"}) {
    PodInfo pod;
    ASSERT_TRUE(DecodePodText(text, pool, pod).ok()) << text;
    EXPECT_TRUE(pod.has_dra_requirements) << text;
  }
  PodInfo empty;
  ASSERT_TRUE(DecodePodText(R"({"metadata": {"name": "d"}, "spec": {"resourceClaims": [],
      "containers": [{"name": "c", "resources": {"claims": []}}]}})",
                            pool, empty)
                  .ok());
  EXPECT_FALSE(empty.has_dra_requirements);
}

TEST(DecodePodTest, InternsRepeatedKeysAcrossPods) {
  StringPool pool;
  PodInfo a, b;
  ASSERT_TRUE(DecodePodText(kPodJson, pool, a).ok());
  ASSERT_TRUE(DecodePodText(kPodJson, pool, b).ok());
  EXPECT_EQ(a.meta.namespace_, b.meta.namespace_);
  EXPECT_EQ(a.meta.labels[0].key, b.meta.labels[0].key);
  EXPECT_LT(ApproximateBytes(a), 2048u);
}

TEST(DecodePodTest, RejectsMistypedFields) {
  StringPool pool;
  PodInfo pod;
  EXPECT_EQ(DecodePodText(R"({"metadata": {"name": 5}})", pool, pod).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodePodText(R"({"spec": {"containers": [{"resources": {"requests":
                              {"cpu": "lots"}}}]}})",
                          pool, pod)
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// What the drain reads (controllers/termination/drain.h): the priority class and the grace period.
TEST(DecodePodTest, ReadsPriorityClassAndTerminationGracePeriod) {
  StringPool pool;
  PodInfo pod;
  ASSERT_TRUE(DecodePodText(R"({"metadata": {"name": "a"}, "spec": {
      "priorityClassName": "system-node-critical", "terminationGracePeriodSeconds": 120}})",
                            pool, pod)
                  .ok());
  ASSERT_NE(pod.priority_class_name, nullptr);
  EXPECT_EQ(*pod.priority_class_name, "system-node-critical");
  EXPECT_EQ(pod.termination_grace_period_seconds, 120);

  PodInfo absent;
  ASSERT_TRUE(DecodePodText(kPodJson, pool, absent).ok());
  ASSERT_NE(absent.priority_class_name, nullptr);
  EXPECT_EQ(*absent.priority_class_name, "");
  EXPECT_EQ(absent.termination_grace_period_seconds, std::nullopt);

  PodInfo null_grace;
  ASSERT_TRUE(DecodePodText(R"({"spec": {"priorityClassName": null,
      "terminationGracePeriodSeconds": null}})",
                            pool, null_grace)
                  .ok());
  EXPECT_EQ(*null_grace.priority_class_name, "");
  EXPECT_EQ(null_grace.termination_grace_period_seconds, std::nullopt);

  PodInfo bad;
  absl::Status status =
      DecodePodText(R"({"spec": {"terminationGracePeriodSeconds": "30"}})", pool, bad);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("spec.terminationGracePeriodSeconds"));
  status = DecodePodText(R"({"spec": {"priorityClassName": 5}})", pool, bad);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("spec.priorityClassName"));
}

// An owner reference without apiVersion or kind keeps "" (never null).
TEST(DecodePodTest, OwnerFieldsAbsentAreEmpty) {
  StringPool pool;
  PodInfo pod;
  ASSERT_TRUE(
      DecodePodText(R"({"metadata": {"name": "a", "ownerReferences": [{"name": "x"}]}})", pool, pod)
          .ok());
  ASSERT_EQ(pod.meta.owners.size(), 1u);
  ASSERT_NE(pod.meta.owners[0].api_version, nullptr);
  ASSERT_NE(pod.meta.owners[0].kind, nullptr);
  EXPECT_EQ(*pod.meta.owners[0].api_version, "");
  EXPECT_EQ(*pod.meta.owners[0].kind, "");
}

TEST(DecodePodListTest, DecodesTheItemsInOrder) {
  StringPool pool;
  const DecodeContext ctx{.pool = &pool};
  absl::StatusOr<std::vector<PodInfo>> pods =
      DecodePodList(std::string(R"({"kind": "PodList", "metadata": {"resourceVersion": "7"},
          "items": [)") +
                        kPodJson + R"(, {"metadata": {"name": "b", "namespace": "prod"},
                     "spec": {"nodeName": "node-a", "terminationGracePeriodSeconds": 5}}]})",
                    ctx);
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[0].meta.Key(), "prod/web-1");
  EXPECT_EQ((*pods)[0].pvc_names, std::vector<std::string>{"data-web-1"});
  EXPECT_EQ((*pods)[1].meta.Key(), "prod/b");
  EXPECT_EQ((*pods)[1].termination_grace_period_seconds, 5);
  EXPECT_EQ((*pods)[0].meta.namespace_, (*pods)[1].meta.namespace_);

  for (const char* empty : {R"({"items": []})", R"({"items": null})", R"({"metadata": {}})"}) {
    absl::StatusOr<std::vector<PodInfo>> none = DecodePodList(empty, ctx);
    ASSERT_TRUE(none.ok()) << empty << ": " << none.status();
    EXPECT_TRUE(none->empty()) << empty;
  }
}

// A pod that does not decode fails the whole list, naming it; so does a malformed body.
TEST(DecodePodListTest, RefusesTheListOnABadItem) {
  StringPool pool;
  const DecodeContext ctx{.pool = &pool};
  absl::StatusOr<std::vector<PodInfo>> pods = DecodePodList(
      R"({"items": [{"metadata": {"name": "a", "namespace": "ns"}},
                    {"metadata": {"name": "b", "namespace": "ns"},
                     "spec": {"terminationGracePeriodSeconds": "soon"}}]})",
      ctx);
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(pods.status().message(), ::testing::HasSubstr("pod list item 1 (ns/b)"));
  EXPECT_THAT(pods.status().message(), ::testing::HasSubstr("spec.terminationGracePeriodSeconds"));
  EXPECT_FALSE(DecodePodList(R"({"items": [)", ctx).ok());
  EXPECT_FALSE(DecodePodList(R"({"items": [5]})", ctx).ok());
}

TEST(DecodeNodeTest, ReadsProviderIdTaintsResourcesAndReadiness) {
  StringPool pool;
  DecodeContext ctx{.pool = &pool};
  simdjson::ondemand::parser parser;
  simdjson::padded_string text(std::string(R"({"metadata": {"name": "n1", "uid": "u",
    "labels": {"karpenter.sh/nodepool": "default"}, "finalizers": ["karpenter.sh/termination"]},
    "spec": {"providerID": "aws:///us-west-2a/i-1", "unschedulable": true,
             "taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]},
    "status": {"capacity": {"cpu": "4", "pods": "110"}, "allocatable": {"cpu": "3800m"},
               "conditions": [{"type": "Ready", "status": "False",
                               "lastTransitionTime": "2024-01-01T00:00:00Z"}],
               "images": [{"names": ["big"], "sizeBytes": 1}]}})"));
  auto doc = parser.iterate(text);
  NodeInfo node;
  ASSERT_TRUE(DecodeNode(doc.get_object().value(), ctx, node).ok());
  EXPECT_EQ(node.meta.Key(), "n1");
  EXPECT_EQ(node.provider_id, "aws:///us-west-2a/i-1");
  EXPECT_TRUE(node.unschedulable);
  ASSERT_EQ(node.taints.size(), 1u);
  EXPECT_EQ(*node.taints[0].key, "karpenter.sh/disrupted");
  EXPECT_EQ(node.ready, apis::core::ConditionStatus::kFalse);
  ASSERT_EQ(node.allocatable.size(), 1u);
  EXPECT_EQ(node.allocatable[0].milli, 3800);
  ASSERT_EQ(node.meta.finalizers.size(), 1u);
}

TEST(WatchLineSplitterTest, ReassemblesEventsSplitAcrossChunks) {
  WatchLineSplitter splitter;
  std::vector<std::string> lines;
  auto collect = [&](const char* data, size_t len, size_t cap) {
    EXPECT_GE(cap, len + simdjson::SIMDJSON_PADDING);
    lines.emplace_back(data, len);
    return absl::OkStatus();
  };
  ASSERT_TRUE(splitter.Feed("{\"a\":1}\n{\"b\"", collect).ok());
  ASSERT_TRUE(splitter.Feed(":2}\n\n{\"c\":", collect).ok());
  EXPECT_EQ(lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
  EXPECT_EQ(splitter.pending(), 5u);
}

absl::Status ParseLine(const std::string& line, WatchEventType& type, std::string& rv,
                       absl::Status& error, std::string* name = nullptr) {
  simdjson::ondemand::parser parser;
  simdjson::padded_string padded(line);
  return ParseWatchEvent(
      parser, padded.data(), padded.size(), padded.size() + simdjson::SIMDJSON_PADDING, type, rv,
      error, [&](simdjson::ondemand::object obj, simdjson::ondemand::document&) -> absl::Status {
        StringPool pool;
        CompactMeta meta;
        RETURN_IF_ERROR(DecodeMeta(obj, DecodeContext{.pool = &pool}, meta));
        if (name != nullptr) *name = meta.name;
        return absl::OkStatus();
      });
}

TEST(ParseWatchEventTest, ReadsObjectsBookmarksAndGoneErrors) {
  WatchEventType type;
  std::string rv;
  absl::Status error;
  std::string name;
  ASSERT_TRUE(
      ParseLine(R"({"type":"MODIFIED","object":{"metadata":{"name":"x"}}})", type, rv, error, &name)
          .ok());
  EXPECT_EQ(type, WatchEventType::kModified);
  EXPECT_EQ(name, "x");
  ASSERT_TRUE(ParseLine(R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":
                          {"resourceVersion":"777"}}})",
                        type, rv, error)
                  .ok());
  EXPECT_EQ(type, WatchEventType::kBookmark);
  EXPECT_EQ(rv, "777");
  ASSERT_TRUE(ParseLine(R"({"type":"ERROR","object":{"kind":"Status","code":410,
                          "reason":"Expired","message":"too old resource version"}})",
                        type, rv, error)
                  .ok());
  EXPECT_EQ(type, WatchEventType::kError);
  EXPECT_TRUE(IsGone(error));
  EXPECT_FALSE(ParseLine(R"({"type":"NOPE","object":{}})", type, rv, error).ok());
}

TEST(StoreTest, IndexesFollowUpdatesAndDeletes) {
  Store<PodInfo> store;
  store.AddIndex(kIndexNodeName, PodsByNodeName);
  StringPool pool;
  auto pod = [&](std::string name, std::string node) {
    auto p = std::make_shared<PodInfo>();
    p->meta.namespace_ = pool.Intern("ns");
    p->meta.name = std::move(name);
    p->node_name = std::move(node);
    return p;
  };
  store.Upsert("ns/a", pod("a", "n1"));
  store.Upsert("ns/b", pod("b", "n1"));
  EXPECT_EQ(store.ByIndex(kIndexNodeName, "n1").size(), 2u);
  store.Upsert("ns/a", pod("a", "n2"));
  EXPECT_EQ(store.ByIndex(kIndexNodeName, "n1").size(), 1u);
  EXPECT_EQ(store.ByIndex(kIndexNodeName, "n2").size(), 1u);
  ASSERT_NE(store.Remove("ns/b"), nullptr);
  EXPECT_TRUE(store.ByIndex(kIndexNodeName, "n1").empty());
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ(store.Remove("ns/missing"), nullptr);
}

}  // namespace
}  // namespace dovetail::kube
