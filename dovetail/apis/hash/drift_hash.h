// Upstream Karpenter's drift hashes, bit for bit, computed from an object's JSON as the API server
// stores it: `karpenter.sh/nodepool-hash` (version v3) of a NodePool and
// `karpenter.k8s.aws/ec2nodeclass-hash` (version v5) of an EC2NodeClass.
//
// Upstream hashes its Go structs with hashstructure v2 (FormatV2; slices as sets, zero values and
// nil pointers ignored). The walk depends on Go facts the JSON does not carry (type and field
// names, declaration order, which fields are pointers), so each hashed type is described by a
// table in drift_hash.cc; the rules are stated there and in bench/upstream/hash/model.py.
// Presence matters: `labels: {}` and `taints: []` hash differently from absent ones, which is why
// these take JSON rather than Dovetail's typed objects.
//
// Checked against upstream's own Hash() on 127 objects (test/testdata/upstream-hashes.json,
// written by bench/upstream/hash). Objects are hashed as given: CRD defaults (expireAfter: 720h)
// are the API server's to apply first. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace dovetail::apis::hash {

inline constexpr std::string_view kNodePoolHashVersion = "v3";
inline constexpr std::string_view kEC2NodeClassHashVersion = "v5";

// FNV-1 (not 1a), 64 bits: hashstructure's default hasher.
uint64_t Fnv1(std::string_view bytes);

// The hash of a NodePool manifest (its spec.template), in decimal as upstream writes it.
// InvalidArgument when a hashed field has the wrong JSON type or an unparsable duration.
absl::StatusOr<std::string> NodePoolHash(const nlohmann::json& node_pool);

// The hash of an EC2NodeClass manifest with the cluster's CA bundle (base64; "" when unknown),
// mixing in the AMI family resolved as upstream does (spec.amiFamily, else the first alias's
// family, else Custom). InvalidArgument as NodePoolHash.
absl::StatusOr<std::string> EC2NodeClassHash(const nlohmann::json& node_class,
                                             std::string_view ca_bundle);

// ---- present but empty --------------------------------------------------------------------------
// Typed objects (apis::v1::NodePool, apis::aws::v1::EC2NodeClass) cannot tell `labels: {}` from
// an absent `labels`; upstream's hash can. Their decoders record which hashed collections were
// present but empty (PresentEmpty) and put them back before hashing their encoding
// (RestorePresentEmpty).

struct Collection {
  std::string_view pointer;  // JSON pointer from the object's root
  bool list;                 // [] rather than {}
};
inline constexpr Collection kNodePoolCollections[] = {
    {"/spec/template/metadata/labels", false},
    {"/spec/template/metadata/annotations", false},
    {"/spec/template/spec/taints", true},
    {"/spec/template/spec/startupTaints", true}};
inline constexpr Collection kEC2NodeClassCollections[] = {
    {"/spec/tags", false},
    {"/spec/blockDeviceMappings", true},
    {"/spec/networkInterfaces", true},
    {"/spec/kubelet/clusterDNS", true},
    {"/spec/kubelet/systemReserved", false},
    {"/spec/kubelet/kubeReserved", false},
    {"/spec/kubelet/evictionHard", false},
    {"/spec/kubelet/evictionSoft", false},
    {"/spec/kubelet/evictionSoftGracePeriod", false}};

// The pointers of `collections` that `object` holds as an empty object or list.
std::vector<std::string> PresentEmpty(const nlohmann::json& object,
                                      std::span<const Collection> collections);
// Puts back each pointer of `present_empty` (one of `collections`) that `object` lacks, as an
// empty object or list; one that is no longer empty is left as it is.
void RestorePresentEmpty(nlohmann::json& object, std::span<const Collection> collections,
                         const std::vector<std::string>& present_empty);

}  // namespace dovetail::apis::hash
