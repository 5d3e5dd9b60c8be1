// The workload controllers `dovetail simulate` expands into pods: DaemonSet, Deployment,
// ReplicaSet, StatefulSet and Job. Only what determines the pods is modelled (replica counts,
// selector, pod template, StatefulSet volume claim templates); status and every other field is
// kept in unknown_fields. Plain data with a JSON codec (codec.h); thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/meta.h"
#include "dovetail/apis/core/persistent_volume_claim.h"
#include "dovetail/apis/core/pod.h"
#include "nlohmann/json.hpp"

namespace dovetail::apis::core {

struct DaemonSetSpec {
  std::optional<LabelSelector> selector;
  PodTemplateSpec template_;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct DaemonSet {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  DaemonSetSpec spec;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

// Deployment and ReplicaSet share the shape that matters here.
struct ReplicatedSpec {
  std::optional<int32_t> replicas;  // unset: 1
  std::optional<LabelSelector> selector;
  PodTemplateSpec template_;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct Deployment {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  ReplicatedSpec spec;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct ReplicaSet {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  ReplicatedSpec spec;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct StatefulSetSpec {
  std::optional<int32_t> replicas;  // unset: 1
  std::optional<LabelSelector> selector;
  PodTemplateSpec template_;
  // Each replica N gets PVCs named "<template name>-<statefulset>-<N>".
  std::vector<PersistentVolumeClaim> volume_claim_templates;
  std::string service_name;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct StatefulSet {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  StatefulSetSpec spec;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct JobSpec {
  std::optional<int32_t> parallelism;  // unset: 1
  std::optional<int32_t> completions;
  std::optional<LabelSelector> selector;
  PodTemplateSpec template_;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

struct Job {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  JobSpec spec;
  nlohmann::json unknown_fields = nlohmann::json::object();
};

// Codec hooks (codec.h).
void DescribeFields(FieldCodec& c, DaemonSetSpec& v);
void DescribeFields(FieldCodec& c, DaemonSet& v);
void DescribeFields(FieldCodec& c, ReplicatedSpec& v);
void DescribeFields(FieldCodec& c, Deployment& v);
void DescribeFields(FieldCodec& c, ReplicaSet& v);
void DescribeFields(FieldCodec& c, StatefulSetSpec& v);
void DescribeFields(FieldCodec& c, StatefulSet& v);
void DescribeFields(FieldCodec& c, JobSpec& v);
void DescribeFields(FieldCodec& c, Job& v);

}  // namespace dovetail::apis::core
