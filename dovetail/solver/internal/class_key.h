// Keys that decide which pods are interchangeable for the solver. AppendSchedulingKey appends a
// compact, unambiguous encoding of a pod spec's scheduling-relevant parts (node affinity, pod
// (anti-)affinity, tolerations, topology spread); NoteSelectorKeys collects the label keys a pod's
// selectors read (only those keys split pods into classes). Pure functions; thread-safe.
#pragma once

#include <string>

#include "absl/container/flat_hash_set.h"
#include "dovetail/solver/internal/names.h"
#include "dovetail/solver/solver.h"

namespace dovetail::solver::internal {

// "namespace/name".
std::string PodKey(const Pod& p);

// Appends the scheduling key of `s` to `key`: specs with equal keys constrain placement equally.
void AppendSchedulingKey(const apis::core::PodSpec& s, std::string* key);

// Adds the label keys `p`'s spread constraints and pod (anti-)affinity terms select on to `keys`.
void NoteSelectorKeys(const Pod& p, absl::flat_hash_set<std::string>* keys);

}  // namespace dovetail::solver::internal
