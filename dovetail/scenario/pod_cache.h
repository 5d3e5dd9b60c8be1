// The solver's apis::core::Pod of each compact pod (state::ToPod, state/pod_conversion.h),
// converted once per pod version and shared by every solver question built while that version is
// current, instead of once per question.
//
// Identity: the informers make a new, immutable PodInfo for every version of a pod they cache
// (kube/informer.h), so a PodInfo's address names one version. An entry holds its PodInfo, so the
// address is not reused while the entry lives; a new version is a new address and a new entry.
//
// Lifetime: Sweep drops the entries Get has not returned since the previous Sweep (a
// solver-input build calls it once, at its end: solver_input.h), so the cache holds the pods of
// about one question, plus the PodInfo versions they were converted from until the next build. A
// question keeps its own references: a sweep never frees a pod a question still points to.
//
// Memory: one converted Pod per pod the questions read, bound and pending (what the provisioning
// pass benchmark's cache_MB counter reports, bench/scenario/provisioning_pass_bench.cc).
// Thread-safe; concurrent builds sharing a cache at worst convert a pod again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/state/state_node.h"

namespace dovetail::scenario {

using SharedPod = std::shared_ptr<const apis::core::Pod>;

class PodCache {
 public:
  // state::ToPod(*info), converted the first time this PodInfo is asked for.
  SharedPod Get(const state::PodPtr& info);
  // Drops the entries Get has not returned since the previous Sweep.
  void Sweep();
  size_t size() const;

 private:
  struct Entry {
    state::PodPtr info;  // keeps the key's address from being reused
    SharedPod pod;
    uint64_t generation = 0;  // of the last Get
  };
  mutable absl::Mutex mu_;
  absl::flat_hash_map<const kube::PodInfo*, Entry> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
};

// `cache->Get(info)`, or a conversion of its own when `cache` is null.
SharedPod ConvertPod(const state::PodPtr& info, PodCache* cache);

}  // namespace dovetail::scenario
