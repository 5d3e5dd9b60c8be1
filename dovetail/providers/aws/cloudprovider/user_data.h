// User data per AMI family (docs/aws-provider.md): what a node runs at first boot to join the
// cluster, merged with the EC2NodeClass's spec.userData (never replacing it).
//
//   AL2023        MIME multipart: the user's parts first (a MIME document keeps its parts; a
//                 NodeConfig becomes an application/node.eks.aws part; anything else a
//                 text/x-shellscript part), then Dovetail's NodeConfig (node.eks.aws/v1alpha1:
//                 cluster name, endpoint, CA, service CIDR; kubelet config and --node-labels).
//                 nodeadm merges the NodeConfigs in order, so ours wins on conflicts.
//   AL2           MIME multipart: the user's parts first, then a shell part calling
//                 /etc/eks/bootstrap.sh with the cluster, kubelet flags, labels and taints.
//   Bottlerocket  TOML: the user's document parsed, Dovetail's settings.kubernetes.* written over
//                 it (the user's other keys are kept), re-emitted as TOML.
//   Custom        the user's data verbatim (the user bootstraps and registers the node).
// Windows families are not generated here (Unimplemented).
//
// Pure functions; thread-safe. Output is plain text (base64 happens at the launch template).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/apis/core/meta.h"
#include "nlohmann/json.hpp"

namespace dovetail::providers::aws {

struct BootstrapInputs {
  std::string cluster_name;
  std::string cluster_endpoint;
  std::string ca_bundle;                      // base64 PEM, as in a kubeconfig
  std::string cluster_cidr;                   // service CIDR (AL2023 NodeConfig)
  std::string cluster_dns_ip;                 // used when the kubelet block has no clusterDNS
  std::map<std::string, std::string> labels;  // node labels to register with
  std::vector<apis::core::Taint> taints;      // taints to register with
  std::optional<apis::aws::v1::KubeletConfiguration> kubelet;
  std::optional<int32_t> max_pods;  // emitted when set
  bool raid0 = false;               // instanceStorePolicy RAID0
  std::optional<std::string> user_data;
};

// The whole user data for `family`. Errors: InvalidArgument for user data the family cannot
// merge (malformed MIME, malformed TOML) and for spec.userData over kMaxUserDataBytes
// (common/input_limits.h); Unimplemented for Windows families.
absl::StatusOr<std::string> GenerateUserData(apis::aws::v1::AMIFamily family,
                                             const BootstrapInputs& inputs);

// ---- building blocks (exposed for tests) ----

struct MimePart {
  std::string content_type;
  std::string body;
  bool operator==(const MimePart&) const = default;
};

// True when `text` is a MIME document (a MIME-Version or multipart Content-Type header first).
bool IsMime(std::string_view text);
// The parts of a multipart MIME document. Errors: InvalidArgument when there is no boundary or
// no closing delimiter.
absl::StatusOr<std::vector<MimePart>> ParseMimeMultipart(std::string_view text);
// A multipart/mixed document; the boundary is chosen so that no part contains it.
std::string WriteMimeMultipart(const std::vector<MimePart>& parts);
// The user's data as MIME parts: a MIME document's parts, a NodeConfig (YAML or JSON with
// apiVersion node.eks.aws/...) as application/node.eks.aws, anything else as a shell script.
absl::StatusOr<std::vector<MimePart>> UserPartsForMime(std::string_view user_data);

// Dovetail's AL2023 NodeConfig (YAML) and AL2 bootstrap script.
std::string Al2023NodeConfig(const BootstrapInputs& inputs);
std::string Al2BootstrapScript(const BootstrapInputs& inputs);

// A small TOML subset, enough for Bottlerocket settings: [tables] with dotted and quoted keys,
// key = value with basic/literal strings, integers, floats, booleans, arrays and inline tables;
// comments. Documents map onto JSON objects. Errors: InvalidArgument with the line, including for
// nesting deeper than kMaxTomlDepth (common/input_limits.h).
absl::StatusOr<nlohmann::json> ParseToml(std::string_view text);
std::string WriteToml(const nlohmann::json& document);
// The Bottlerocket settings Dovetail writes (settings.kubernetes.*), as a JSON tree.
nlohmann::json BottlerocketSettings(const BootstrapInputs& inputs);

// YAML for a JSON tree (block style; strings double-quoted), as used for NodeConfig.
std::string ToYaml(const nlohmann::json& value);

}  // namespace dovetail::providers::aws
