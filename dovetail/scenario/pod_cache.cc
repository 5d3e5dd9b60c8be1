#include "dovetail/scenario/pod_cache.h"

#include "dovetail/state/pod_conversion.h"

namespace dovetail::scenario {

SharedPod PodCache::Get(const state::PodPtr& info) {
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(info.get());
    if (it != entries_.end()) {
      it->second.generation = generation_;
      return it->second.pod;
    }
  }
  // Converted outside the lock: a concurrent Get of the same version converts it twice and keeps
  // the first.
  auto pod = std::make_shared<const apis::core::Pod>(state::ToPod(*info));
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = entries_.try_emplace(info.get(), Entry{info, pod, generation_});
  if (!inserted) it->second.generation = generation_;
  return it->second.pod;
}

void PodCache::Sweep() {
  absl::MutexLock lock(&mu_);
  const uint64_t current = generation_;
  absl::erase_if(entries_,
                 [current](const auto& entry) { return entry.second.generation != current; });
  ++generation_;
}

size_t PodCache::size() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

SharedPod ConvertPod(const state::PodPtr& info, PodCache* cache) {
  if (cache != nullptr) return cache->Get(info);
  return std::make_shared<const apis::core::Pod>(state::ToPod(*info));
}

}  // namespace dovetail::scenario
