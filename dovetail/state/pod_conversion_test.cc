#include "dovetail/state/pod_conversion.h"

#include <string>

#include "dovetail/apis/core/pod_requests.h"
#include "dovetail/state/state_test_util.h"
#include "gtest/gtest.h"

namespace dovetail::state {
namespace {

namespace core = apis::core;
using testing::Objects;
using testing::PodJson;

int64_t Milli(const ResourceList& list, const std::string& name) {
  auto it = list.find(name);
  return it == list.end() ? 0 : it->second.MilliValue();
}

TEST(ToPodTest, KeepsEffectiveRequestsTolerationsOwnersAndSpread) {
  Objects objects;
  nlohmann::json json = PodJson("kube-system", "agent-x", "n1", "100m", "64Mi");
  json["spec"]["initContainers"] = {
      {{"name", "init"}, {"resources", {{"requests", {{"cpu", "2"}, {"memory", "32Mi"}}}}}}};
  json["spec"]["overhead"] = {{"cpu", "50m"}};
  json["spec"]["tolerations"] = {{{"operator", "Exists"}},
                                 {{"key", "k"}, {"value", "v"}, {"effect", "NoExecute"}}};
  json["spec"]["containers"][0]["ports"] = {{{"containerPort", 80}, {"hostPort", 8080}}};
  json["spec"]["topologySpreadConstraints"] = {
      {{"maxSkew", 1},
       {"topologyKey", "topology.kubernetes.io/zone"},
       {"whenUnsatisfiable", "DoNotSchedule"},
       {"labelSelector", {{"matchLabels", {{"a", "b"}}}}}}};
  json["metadata"]["ownerReferences"] = {
      {{"apiVersion", "apps/v1"}, {"kind", "DaemonSet"}, {"name", "agent"}, {"uid", "u"}}};
  auto info = objects.Pod(json);
  const core::Pod converted = ToPod(*info);
  const core::Pod* pod = &converted;

  const ResourceList requests = core::PodRequests(*pod);
  EXPECT_EQ(Milli(requests, "cpu"), 2050);  // the init container's peak, plus overhead
  EXPECT_EQ(Milli(requests, "memory"), 64ll * 1024 * 1024 * 1000);
  EXPECT_EQ(Milli(requests, "pods"), 1000);
  ASSERT_EQ(pod->metadata.owner_references.size(), 1u);
  EXPECT_EQ(pod->metadata.owner_references[0].kind, "DaemonSet");
  EXPECT_EQ(pod->metadata.owner_references[0].api_version, "apps/v1");
  ASSERT_EQ(pod->spec.tolerations.size(), 2u);
  EXPECT_EQ(pod->spec.tolerations[0].op, core::TolerationOperator::kExists);
  EXPECT_FALSE(pod->spec.tolerations[0].effect.has_value());
  EXPECT_EQ(pod->spec.tolerations[1].effect, core::TaintEffect::kNoExecute);
  ASSERT_EQ(pod->spec.topology_spread_constraints.size(), 1u);
  EXPECT_EQ(pod->spec.topology_spread_constraints[0].topology_key, "topology.kubernetes.io/zone");
  ASSERT_EQ(pod->spec.containers.size(), 1u);
  ASSERT_EQ(pod->spec.containers[0].ports.size(), 1u);
  EXPECT_EQ(pod->spec.containers[0].ports[0].host_port, 8080);
  EXPECT_EQ(pod->spec.node_name, "n1");
  EXPECT_EQ(pod->metadata.namespace_, "kube-system");
  EXPECT_EQ(pod->status.phase, core::PodPhase::kRunning);
}

}  // namespace
}  // namespace dovetail::state
