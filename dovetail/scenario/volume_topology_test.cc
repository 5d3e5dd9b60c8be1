#include "dovetail/scenario/volume_topology.h"

#include <string>

#include "dovetail/apis/core/codec.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dovetail::scenario {
namespace {

namespace core = apis::core;

template <typename T>
T Decode(const nlohmann::json& json) {
  absl::StatusOr<T> out = core::DecodeAs<T>(json);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *std::move(out) : T{};
}

core::PersistentVolumeClaim Claim(const std::string& name, const std::string& volume,
                                  const std::string& storage_class = "") {
  nlohmann::json spec = {{"accessModes", {"ReadWriteOnce"}}};
  if (!volume.empty()) spec["volumeName"] = volume;
  if (!storage_class.empty()) spec["storageClassName"] = storage_class;
  return Decode<core::PersistentVolumeClaim>(
      {{"metadata", {{"name", name}, {"namespace", "ns"}}}, {"spec", spec}});
}

// A volume pinned to `zone` on node `host`.
core::PersistentVolume Volume(const std::string& name, const std::string& zone) {
  return Decode<core::PersistentVolume>(
      {{"metadata", {{"name", name}}},
       {"spec",
        {{"nodeAffinity",
          {{"required",
            {{"nodeSelectorTerms",
              {{{"matchExpressions",
                 {{{"key", "topology.kubernetes.io/zone"}, {"operator", "In"}, {"values", {zone}}},
                  {{"key", "kubernetes.io/hostname"},
                   {"operator", "In"},
                   {"values", {"host-1"}}}}}}}}}}}}}}});
}

core::StorageClass Class(const std::string& name, const std::vector<std::string>& zones) {
  return Decode<core::StorageClass>(
      {{"metadata", {{"name", name}}},
       {"provisioner", "ebs.csi.aws.com"},
       {"allowedTopologies",
        {{{"matchLabelExpressions",
           {{{"key", "topology.kubernetes.io/zone"}, {"values", zones}}}}}}}});
}

core::Pod PodClaiming(const std::vector<std::string>& claims) {
  core::Pod pod;
  pod.metadata.namespace_ = "ns";
  pod.metadata.name = "p";
  for (const std::string& c : claims) {
    core::Volume v;
    v.name = c;
    v.persistent_volume_claim = core::PersistentVolumeClaimVolumeSource{.claim_name = c};
    pod.spec.volumes.push_back(v);
  }
  return pod;
}

TEST(VolumeTopologyTest, BoundClaimFollowsItsVolumeWithoutTheHostname) {
  Volumes volumes{.claims = {Claim("data", "pv-1")}, .volumes = {Volume("pv-1", "zone-b")}};
  const VolumeTopology topology(volumes);
  auto alternatives = topology.Alternatives(PodClaiming({"data"}));
  ASSERT_TRUE(alternatives.has_value());
  ASSERT_EQ(alternatives->size(), 1u);
  EXPECT_TRUE((*alternatives)[0].Has("topology.kubernetes.io/zone"));
  EXPECT_FALSE((*alternatives)[0].Has("kubernetes.io/hostname"));
  EXPECT_EQ((*alternatives)[0].SingleValuedLabels().at("topology.kubernetes.io/zone"), "zone-b");
}

TEST(VolumeTopologyTest, UnboundClaimFollowsItsStorageClassAndClaimsIntersect) {
  Volumes volumes{.claims = {Claim("fresh", "", "zonal"), Claim("data", "pv-1")},
                  .volumes = {Volume("pv-1", "zone-b")},
                  .storage_classes = {Class("zonal", {"zone-a", "zone-b"})}};
  const VolumeTopology topology(volumes);
  auto fresh = topology.Alternatives(PodClaiming({"fresh"}));
  ASSERT_TRUE(fresh.has_value());
  ASSERT_EQ(fresh->size(), 1u);
  EXPECT_TRUE((*fresh)[0].Has("topology.kubernetes.io/zone"));
  // Both claims: only zone-b satisfies both.
  auto both = topology.Alternatives(PodClaiming({"fresh", "data"}));
  ASSERT_TRUE(both.has_value());
  ASSERT_EQ(both->size(), 1u);
  EXPECT_EQ((*both)[0].SingleValuedLabels().at("topology.kubernetes.io/zone"), "zone-b");
}

TEST(VolumeTopologyTest, ConflictingClaimsLeaveNoAlternative) {
  Volumes volumes{.claims = {Claim("a", "pv-a"), Claim("b", "pv-b")},
                  .volumes = {Volume("pv-a", "zone-a"), Volume("pv-b", "zone-b")}};
  const VolumeTopology topology(volumes);
  auto alternatives = topology.Alternatives(PodClaiming({"a", "b"}));
  ASSERT_TRUE(alternatives.has_value());
  ASSERT_EQ(alternatives->size(), 1u);  // one that no node in either zone meets
  for (const char* zone : {"zone-a", "zone-b"}) {
    EXPECT_FALSE((*alternatives)[0].Get("topology.kubernetes.io/zone").Has(zone));
  }
}

TEST(VolumeTopologyTest, MissingOrUnconstrainedClaimsConstrainNothing) {
  Volumes volumes{.claims = {Claim("no-volume", "pv-missing"), Claim("no-class", "", "gone")}};
  const VolumeTopology topology(volumes);
  EXPECT_FALSE(topology.Alternatives(PodClaiming({"no-volume", "no-class", "absent"})).has_value());
  EXPECT_FALSE(topology.Alternatives(PodClaiming({})).has_value());
}

}  // namespace
}  // namespace dovetail::scenario
