// Converts Karpenter objects of older API versions to karpenter.sh/v1 and karpenter.k8s.aws/v1 in
// one hop (`dovetail convert`): v1alpha5 Provisioner and v1beta1 NodePool -> v1 NodePool,
// v1alpha5 Machine -> v1 NodeClaim, v1alpha1 AWSNodeTemplate and v1beta1 EC2NodeClass -> v1
// EC2NodeClass, following the rename maps of shared/reference/karpenter-behaviour.md §1.9 and
// writing out the old implicit defaults so that the converted objects mean what the old ones
// meant. The kubelet block of a pool moves to its node class; pools sharing a node class with
// different kubelets get one copy of the class per distinct kubelet (see docs/convert.md).
// Objects already at v1 and kinds of other API groups pass through unchanged.
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
};

ConvertResult Convert(const std::vector<nlohmann::json>& objects);

// YAML documents separated by `---` (strings JSON-quoted, which is valid YAML).
std::string ToYaml(const std::vector<nlohmann::json>& objects);

}  // namespace dovetail::apis::convert
