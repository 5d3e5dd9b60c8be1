// The resources a pod needs on a node, computed the way Kubernetes' component-helpers PodRequests
// does and Karpenter packs with:
//
//   for each resource r:
//     regular(r)  = sum over containers of request(r) + sum over sidecars of request(r)
//     init(r)     = max over init containers i (in order) of
//                     sidecar i:       sum of request(r) of the sidecars up to and including i
//                     non-sidecar i:   request(r) of i + sum of request(r) of the sidecars before i
//     pod(r)      = max(regular(r), init(r))
//   pod-level requests (spec.resources.requests for cpu and memory) replace pod(r) when set;
//   then spec.overhead is added, and `pods: 1` (Karpenter counts the pod itself).
//
// A sidecar is an init container with restartPolicy Always; it keeps running next to the regular
// containers, which is why it counts in both terms. With status resources enabled a container's
// request is the larger of its spec request and status.containerStatuses[].allocatedResources (an
// in-place resize in progress). Limits are ignored. Pure functions; thread-safe.
#pragma once

#include "dovetail/apis/core/pod.h"
#include "dovetail/common/quantity.h"

namespace dovetail::apis::core {

struct PodRequestsOptions {
  bool include_overhead = true;
  bool use_pod_level_resources = true;
  bool use_status_resources = true;
  bool include_pod_count = true;  // adds `pods: 1`
};

ResourceList PodRequests(const Pod& pod, const PodRequestsOptions& options = {});

// For a bare spec (a pod template): no status resources.
ResourceList PodRequests(const PodSpec& spec, const PodRequestsOptions& options = {});

// What the API server's defaulting does to a container's resources on pod creation: a resource with
// a limit but no request gets a request equal to the limit. For pods read from manifests (e.g.
// `dovetail simulate`); pods read from the API server already have it.
void DefaultRequestsFromLimits(PodSpec& spec);

}  // namespace dovetail::apis::core
