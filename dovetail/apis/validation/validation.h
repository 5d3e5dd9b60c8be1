// Validation of Karpenter's API objects in C++: every rule the API server applies to a NodePool,
// NodeClaim or EC2NodeClass through the CRD schema (types, enums, patterns, ranges, list and map
// sizes) and its CEL rules, plus the checks Karpenter itself makes at runtime (a NodePool that
// fails them is ValidationSucceeded=False). The rules are upstream's and are mirrored by
// charts/dovetail/crds; the shared corpus test/testdata/validation keeps this code and the CRDs in
// step.
//
// Two entry points:
//  - Validate<Kind>(object) checks a typed object (as decoded by apis/core/codec.h) and returns
//    every problem found, not just the first. A typed struct cannot tell "absent" from "empty"
//    for plain strings and lists, so an empty value counts as absent (e.g. `role: ""` reads as
//    no role). Used by controllers and tests.
//  - ValidateManifests(manifests) checks objects as written (`dovetail validate`): it also
//    reports what only the text shows (required keys that are missing, wrong JSON types, values
//    outside an enumeration, unknown fields, volume sizes not written in Gi/G/Ti/T), then decodes
//    and runs the typed checks. Kinds Dovetail does not validate are skipped with a note.
//
// Where this is deliberately stricter than the API server with upstream's CRDs, it rejects what
// would fail later anyway (Karpenter's decoding, its cron library, EC2) or what upstream's rules
// evidently mean: cron fields are fully parsed (the CRD pattern only counts them); durations must
// fit Go's time.Duration; subnet/sg/ami ids are anchored patterns; an alias has exactly one '@';
// volume sizes use the documented bounds (upstream's regex has gaps such as 18Ti); eviction
// thresholds may not be empty or negative; tag keys are restricted under `kubernetes.io/cluster/`
// (with the slash); an AMI `id` or `alias` term may not carry `ssmParameter`; iops and throughput
// may not be negative; budget reasons may not repeat.
//
// Field paths use the syntax of codec.h: `spec.template.spec.requirements[0].minValues`, map keys
// other than [A-Za-z0-9_-]+ bracketed and quoted (`spec.template.metadata.labels["a.b/c"]`).
// Messages say what is wrong in plain words without repeating the path ("must be between 1 and
// 100, got 101"). Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/apis/core/documents.h"
#include "dovetail/apis/core/manifest.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/apis/v1/nodepool.h"

namespace dovetail::apis::validation {

struct FieldError {
  std::string field;    // JSON path, e.g. spec.template.spec.requirements[0].minValues
  std::string message;  // what is wrong, e.g. "must be between 1 and 50, got 51"
  std::string value;    // the offending value as text, when there is one
  bool operator==(const FieldError&) const = default;
};

// "field: message".
std::string ToString(const FieldError& error);

// ---- Typed objects ------------------------------------------------------------------------------

std::vector<FieldError> ValidateNodePool(const v1::NodePool& pool);
std::vector<FieldError> ValidateNodeClaim(const v1::NodeClaim& claim);
std::vector<FieldError> ValidateEC2NodeClass(const aws::v1::EC2NodeClass& node_class);

// Validation of an update: everything ValidateX(updated) reports, plus the transition rules
// (NodePool: nodeClassRef group and kind are immutable, spec.replicas cannot be set or unset;
// NodeClaim: spec is immutable; EC2NodeClass: no switching between role and instanceProfile).
std::vector<FieldError> ValidateNodePoolUpdate(const v1::NodePool& old_pool,
                                               const v1::NodePool& updated);
std::vector<FieldError> ValidateNodeClaimUpdate(const v1::NodeClaim& old_claim,
                                                const v1::NodeClaim& updated);
std::vector<FieldError> ValidateEC2NodeClassUpdate(const aws::v1::EC2NodeClass& old_class,
                                                   const aws::v1::EC2NodeClass& updated);

// ---- Manifests ----------------------------------------------------------------------------------

struct ObjectErrors {
  // A FieldError and where its field (or its closest written ancestor) is in the source.
  struct Error : FieldError {
    core::SourcePosition position;
  };
  std::string api_version;
  std::string kind;
  std::string name;
  std::string object;             // "Kind/name", for messages
  std::string source;             // "file:line" of the start of the object
  core::SourcePosition position;  // start of the object
  // False when the kind is not one Dovetail validates (see `notes`).
  bool validated = false;
  // Why the object was skipped, or a warning that does not make it invalid (e.g. a kind from an
  // unknown API group, a kubelet setting Dovetail does not know). Empty when there is nothing to
  // say.
  std::vector<std::string> notes;
  std::vector<Error> errors;

  // "Kind/name" (same as `object`).
  std::string Describe() const { return object; }
};

// One entry per manifest, in order. Objects of karpenter.sh/v1 NodePool and NodeClaim and
// karpenter.k8s.aws/v1 EC2NodeClass are validated. Older versions (v1alpha5 Provisioner and
// Machine, v1alpha1 AWSNodeTemplate, v1beta1 NodePool and EC2NodeClass, the
// karpenter-global-settings ConfigMap) are converted to v1 together, as `dovetail convert` does
// (apis/convert), and the conversion is validated: what cannot be converted is an error on the
// old object, and a note says which v1 object the field paths refer to; a v1 EC2NodeClass that
// takes an old pool's kubelet is validated with it. Built-in Kubernetes kinds (core, apps, batch,
// *.k8s.io, ...) are skipped silently; kinds of any other group are skipped with a note.
// A manifest without apiVersion or kind is an error.
std::vector<ObjectErrors> ValidateManifests(const std::vector<core::Manifest>& manifests);

}  // namespace dovetail::apis::validation
