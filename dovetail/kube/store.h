// The informer cache: objects of one kind by key ("namespace/name", or "name" for cluster-scoped
// kinds) with secondary indexes (e.g. pods by node name). Objects are immutable and shared
// (std::shared_ptr<const T>): a reader keeps a consistent object for as long as it holds the
// pointer while the informer swaps in newer versions. Index entries point at the keys held by
// the primary map, so an index costs one hash-set slot per object and value.
// Written by one informer thread, read by any number of threads. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::kube {

template <typename T>
class Store {
 public:
  using Ptr = std::shared_ptr<const T>;
  // Appends the index values of an object (none, one or several).
  using IndexFunc = std::function<void(const T&, std::vector<std::string>&)>;

  // Adds an index; call before the informer starts.
  void AddIndex(std::string name, IndexFunc func) {
    absl::MutexLock lock(&mu_);
    indexes_[name].func = std::move(func);
  }

  Ptr Get(std::string_view key) const {
    absl::ReaderMutexLock lock(&mu_);
    auto it = items_.find(AsAbsl(key));
    return it == items_.end() ? nullptr : it->second;
  }

  std::vector<Ptr> List() const {
    absl::ReaderMutexLock lock(&mu_);
    std::vector<Ptr> out;
    out.reserve(items_.size());
    for (const auto& [key, obj] : items_) out.push_back(obj);
    return out;
  }

  // Objects whose index `index` has value `value` (empty for an unknown index or value).
  std::vector<Ptr> ByIndex(std::string_view index, std::string_view value) const {
    absl::ReaderMutexLock lock(&mu_);
    std::vector<Ptr> out;
    auto idx = indexes_.find(AsAbsl(index));
    if (idx == indexes_.end()) return out;
    auto bucket = idx->second.values.find(AsAbsl(value));
    if (bucket == idx->second.values.end()) return out;
    out.reserve(bucket->second.size());
    for (absl::string_view key : bucket->second) out.push_back(items_.find(key)->second);
    return out;
  }

  size_t size() const {
    absl::ReaderMutexLock lock(&mu_);
    return items_.size();
  }

  // Calls `fn` on every object under the read lock (no copies). `fn` must not call the store.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    absl::ReaderMutexLock lock(&mu_);
    for (const auto& [key, obj] : items_) fn(*obj);
  }

  // Mutations, for the informer. Upsert returns the previous object (null if new).
  Ptr Upsert(const std::string& key, Ptr obj) {
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = items_.try_emplace(key, nullptr);
    Ptr old = std::move(it->second);
    if (old != nullptr) Unindex(it->first, *old);
    it->second = std::move(obj);
    Index(it->first, *it->second);
    return old;
  }

  Ptr Remove(std::string_view key) {
    absl::MutexLock lock(&mu_);
    auto it = items_.find(AsAbsl(key));
    if (it == items_.end()) return nullptr;
    Ptr old = std::move(it->second);
    Unindex(it->first, *old);
    items_.erase(it);
    return old;
  }

  std::vector<std::string> Keys() const {
    absl::ReaderMutexLock lock(&mu_);
    std::vector<std::string> out;
    out.reserve(items_.size());
    for (const auto& [key, obj] : items_) out.push_back(key);
    return out;
  }

 private:
  struct IndexData {
    IndexFunc func;
    absl::flat_hash_map<std::string, absl::flat_hash_set<absl::string_view>> values;
  };

  void Index(const std::string& key, const T& obj) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (auto& [name, index] : indexes_) {
      scratch_.clear();
      index.func(obj, scratch_);
      for (const std::string& value : scratch_) index.values[value].insert(key);
    }
  }

  void Unindex(const std::string& key, const T& obj) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (auto& [name, index] : indexes_) {
      scratch_.clear();
      index.func(obj, scratch_);
      for (const std::string& value : scratch_) {
        auto bucket = index.values.find(value);
        if (bucket == index.values.end()) continue;
        bucket->second.erase(key);
        if (bucket->second.empty()) index.values.erase(bucket);
      }
    }
  }

  mutable absl::Mutex mu_;
  // node_hash_map: keys have stable addresses, which the index sets point at.
  absl::node_hash_map<std::string, Ptr> items_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, IndexData> indexes_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> scratch_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dovetail::kube
