// What the controllers ask of a pod in the pod informer's compact form (kube/objects.h PodInfo),
// answered once here. The same questions of the full apis::core::Pod are in apis/core/pod.h
// (IsTerminal, IsOwnedByDaemonSet, IsMirrorPod), which the solver and the drain read.
// Pure functions; thread-safe.
#pragma once

#include <string_view>

#include "absl/time/time.h"
#include "dovetail/kube/objects.h"

namespace dovetail::state {

// Succeeded or Failed: its containers will not run again, its requests are free.
bool IsTerminal(const kube::PodInfo& pod);

// An owner reference of `kind` (controller or not).
bool OwnedBy(const kube::PodInfo& pod, std::string_view kind);

// karpenter.sh/do-not-disrupt in force at `now` (apis/v1/do_not_disrupt.h), a duration counted
// from the pod's start, else its creation. `invalid`: the value protects nothing and is malformed.
bool HasActiveDoNotDisrupt(const kube::PodInfo& pod, absl::Time now, bool* invalid = nullptr);

}  // namespace dovetail::state
