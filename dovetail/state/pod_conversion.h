// Turns the pod informer's compact PodInfo back into the apis::core::Pod the solver reads, keeping
// everything scheduling looks at: namespace, name, uid, labels, kept annotations, owners, node
// name, priority, scheduler name, phase and the Unschedulable condition, node selector,
// tolerations, affinity and topology spread (copied from the values the informer decoded once, so
// no JSON is parsed here), host ports, PVC volumes and the effective requests.
//
// The effective requests become one container named "requests" carrying them, so that
// apis::core::PodRequests(ToPod(info)) equals the requests the scheduler computed (plus `pods: 1`).
// Host ports become ports of that container (TCP on every address: PodInfo keeps neither the
// protocol nor the host IP, which makes the solver conservative). Owner references get the
// apiVersion of their well-known kind (apps/v1 for DaemonSet, ReplicaSet, StatefulSet,
// Deployment; batch/v1 for Job; v1 for Node), since PodInfo does not keep it.
// Pure functions; thread-safe.
#pragma once

#include "dovetail/apis/core/pod.h"
#include "dovetail/kube/objects.h"

namespace dovetail::state {

apis::core::Pod ToPod(const kube::PodInfo& info);

}  // namespace dovetail::state
