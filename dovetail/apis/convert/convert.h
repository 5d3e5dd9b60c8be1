// Converts Karpenter objects of older API versions to karpenter.sh/v1 and karpenter.k8s.aws/v1 in
// one hop (`dovetail convert`): v1alpha5 Provisioner and v1beta1 NodePool -> v1 NodePool,
// v1alpha5 Machine -> v1 NodeClaim, v1alpha1 AWSNodeTemplate and v1beta1 EC2NodeClass -> v1
// EC2NodeClass, following the rename maps of upstream's v1beta1 and v1 migration guides and
// writing out the old implicit defaults so that the converted objects mean what the old ones
// meant. The kubelet block of a pool moves to its node class; pools sharing a node class with
// different kubelets get one copy of the class per distinct kubelet (see docs/convert.md).
// Objects already at v1 and kinds of other API groups pass through unchanged. The v1alpha5-era
// `karpenter-global-settings` ConfigMap becomes Helm values (`settings.*` of charts/dovetail) and
// the node-level parts of it (default instance profile, global tags, ENI-limited pod density,
// drift off) are written into the converted pools and classes.
//
// Anything that cannot be converted is an error naming the object and the field; when there is
// any error, `objects` is empty (nothing is converted partially). Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace dovetail::apis::convert {

struct ConvertResult {
  std::vector<nlohmann::json> objects;  // in input order; split node classes follow their origin
  // One line per change: "Kind/name: old.path -> new.path: value".
  std::vector<std::string> changes;
  // One line per problem: "Kind/name: field.path: what is wrong".
  std::vector<std::string> errors;
  // For each entry of `errors`, the index of the input object it concerns.
  std::vector<size_t> error_inputs;
  // For each entry of `objects`, the index of the input object it came from (a node class split
  // off by the kubelet move has its origin's index; a global-settings ConfigMap has no output).
  std::vector<size_t> origins;
  // Helm values for charts/dovetail (`{"settings": {...}}`) from a karpenter-global-settings
  // ConfigMap; null when the input has none.
  nlohmann::json helm_values;
};

// True for objects Convert changes: karpenter.sh / karpenter.k8s.aws objects of a version before
// v1, and the karpenter-global-settings ConfigMap.
bool NeedsConversion(const nlohmann::json& object);

ConvertResult Convert(const std::vector<nlohmann::json>& objects);

// YAML documents separated by `---` (strings JSON-quoted, which is valid YAML).
std::string ToYaml(const std::vector<nlohmann::json>& objects);

}  // namespace dovetail::apis::convert
