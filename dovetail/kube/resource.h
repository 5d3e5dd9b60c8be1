// The API resources Dovetail talks to, as (group, version, plural, kind, namespaced), and the URL
// paths built from them. Plain constants and pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace dovetail::kube {

struct Resource {
  std::string_view group;  // empty for the core group
  std::string_view version;
  std::string_view plural;
  std::string_view kind;
  bool namespaced = false;

  std::string api_version() const;  // "v1", "karpenter.sh/v1", ...
};

namespace resources {
inline constexpr Resource kPods{"", "v1", "pods", "Pod", true};
inline constexpr Resource kNodes{"", "v1", "nodes", "Node", false};
inline constexpr Resource kNamespaces{"", "v1", "namespaces", "Namespace", false};
inline constexpr Resource kConfigMaps{"", "v1", "configmaps", "ConfigMap", true};
inline constexpr Resource kServices{"", "v1", "services", "Service", true};
inline constexpr Resource kPersistentVolumes{"", "v1", "persistentvolumes", "PersistentVolume",
                                             false};
inline constexpr Resource kPersistentVolumeClaims{"", "v1", "persistentvolumeclaims",
                                                  "PersistentVolumeClaim", true};
inline constexpr Resource kDaemonSets{"apps", "v1", "daemonsets", "DaemonSet", true};
inline constexpr Resource kPodDisruptionBudgets{"policy", "v1", "poddisruptionbudgets",
                                                "PodDisruptionBudget", true};
inline constexpr Resource kStorageClasses{"storage.k8s.io", "v1", "storageclasses", "StorageClass",
                                          false};
inline constexpr Resource kCSINodes{"storage.k8s.io", "v1", "csinodes", "CSINode", false};
inline constexpr Resource kVolumeAttachments{"storage.k8s.io", "v1", "volumeattachments",
                                             "VolumeAttachment", false};
inline constexpr Resource kLeases{"coordination.k8s.io", "v1", "leases", "Lease", true};
inline constexpr Resource kEvents{"events.k8s.io", "v1", "events", "Event", true};
inline constexpr Resource kNodePools{"karpenter.sh", "v1", "nodepools", "NodePool", false};
inline constexpr Resource kNodeClaims{"karpenter.sh", "v1", "nodeclaims", "NodeClaim", false};
inline constexpr Resource kEC2NodeClasses{"karpenter.k8s.aws", "v1", "ec2nodeclasses",
                                          "EC2NodeClass", false};
}  // namespace resources

// "/api/v1/namespaces/ns/pods/name/status" and friends. Empty `ns` on a namespaced resource
// addresses all namespaces (lists and watches); empty name addresses the collection.
std::string ResourcePath(const Resource& resource, std::string_view ns, std::string_view name = {},
                         std::string_view subresource = {});

}  // namespace dovetail::kube
