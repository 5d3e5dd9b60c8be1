// Upstream's drift hashes: every vector of test/testdata/upstream-hashes.json (what upstream
// v1.14.1's own Hash() returned, bench/upstream/hash) equals Dovetail's, and bad input is an
// error, not a crash.
#include "dovetail/apis/hash/drift_hash.h"

#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace dovetail::apis::hash {
namespace {

using nlohmann::json;

json Vectors() {
  std::ifstream in(std::string(DOVETAIL_TESTDATA_DIR) + "/upstream-hashes.json");
  return json::parse(in);
}

TEST(DriftHashTest, EveryUpstreamVectorMatches) {
  const json doc = Vectors();
  int node_pools = 0, node_classes = 0;
  for (const json& v : doc.at("vectors")) {
    const std::string kind = v.at("kind");
    const std::string name = v.at("name");
    absl::StatusOr<std::string> got;
    if (kind == "NodePool") {
      ++node_pools;
      EXPECT_EQ(v.at("hashVersion"), kNodePoolHashVersion);
      got = NodePoolHash(v.at("object"));
    } else {
      ++node_classes;
      EXPECT_EQ(v.at("hashVersion"), kEC2NodeClassHashVersion);
      const std::string ca = v.contains("caBundle") ? v.at("caBundle").get<std::string>() : "";
      got = EC2NodeClassHash(v.at("object"), ca);
    }
    ASSERT_TRUE(got.ok()) << kind << " " << name << ": " << got.status();
    EXPECT_EQ(*got, v.at("hash").get<std::string>()) << kind << " " << name;
  }
  EXPECT_GE(node_pools, 60);
  EXPECT_GE(node_classes, 40);
}

TEST(DriftHashTest, PresenceAndOrderAsUpstream) {
  const json base = json::parse(R"({"spec":{"template":{"spec":{
      "nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"}}}}})");
  json empty_labels = base;
  empty_labels["spec"]["template"]["metadata"]["labels"] = json::object();
  EXPECT_NE(*NodePoolHash(base), *NodePoolHash(empty_labels));  // present and empty is not absent
  json never = base;
  never["spec"]["template"]["spec"]["expireAfter"] = "Never";
  EXPECT_EQ(*NodePoolHash(base), *NodePoolHash(never));
  json a = base, b = base;
  a["spec"]["template"]["spec"]["taints"] =
      json::parse(R"([{"key":"x","effect":"NoSchedule"},{"key":"y","effect":"NoExecute"}])");
  b["spec"]["template"]["spec"]["taints"] =
      json::parse(R"([{"key":"y","effect":"NoExecute"},{"key":"x","effect":"NoSchedule"}])");
  EXPECT_EQ(*NodePoolHash(a), *NodePoolHash(b));  // lists are sets
  json req = base;
  req["spec"]["template"]["spec"]["requirements"] =
      json::parse(R"([{"key":"kubernetes.io/arch","operator":"In","values":["arm64"]}])");
  EXPECT_EQ(*NodePoolHash(base), *NodePoolHash(req));  // requirements are not hashed
}

TEST(DriftHashTest, BadInputIsAnError) {
  EXPECT_FALSE(NodePoolHash(json::parse("{}")).ok());
  EXPECT_FALSE(NodePoolHash(json::parse(R"({"spec":{"template":[]}})")).ok());
  EXPECT_FALSE(
      NodePoolHash(json::parse(R"({"spec":{"template":{"spec":{"expireAfter":"soon"}}}})")).ok());
  EXPECT_FALSE(
      NodePoolHash(json::parse(R"({"spec":{"template":{"metadata":{"labels":{"a":1}}}}})")).ok());
  EXPECT_FALSE(EC2NodeClassHash(json::parse(R"({"spec":{"kubelet":{"maxPods":"x"}}})"), "").ok());
  EXPECT_FALSE(
      EC2NodeClassHash(json::parse(R"({"spec":{"kubelet":{"maxPods":4294967296}}})"), "").ok());
  EXPECT_FALSE(EC2NodeClassHash(
                   json::parse(R"({"spec":{"amiSelectorTerms":[{"alias":"ubuntu@latest"}]}})"), "")
                   .ok());
}

}  // namespace
}  // namespace dovetail::apis::hash
