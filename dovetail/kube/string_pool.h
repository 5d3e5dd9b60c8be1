// Interns strings that repeat across many cached objects (namespaces, label and annotation keys,
// resource names, taint keys, owner kinds): each distinct value is stored once and objects keep a
// pointer to it. Grow-only: an interned string lives as long as the pool, so intern only values
// drawn from a small, slowly growing set, never names or UIDs.
// Thread-safe; returned pointers stay valid for the pool's lifetime.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::kube {

class StringPool {
 public:
  const std::string* Intern(std::string_view value) {
    absl::MutexLock lock(&mu_);
    auto it = index_.find(AsAbsl(value));
    if (it != index_.end()) return it->second;
    auto owned = std::make_unique<std::string>(value);
    const std::string* ptr = owned.get();
    strings_.push_back(std::move(owned));
    index_.emplace(absl::string_view(*ptr), ptr);
    return ptr;
  }

  size_t size() const {
    absl::MutexLock lock(&mu_);
    return strings_.size();
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<std::string>> strings_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<absl::string_view, const std::string*> index_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dovetail::kube
