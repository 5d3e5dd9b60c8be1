// TypeSet: which instance types of a catalog are still possible, as a bitset over catalog indices.
// The solver keeps one per NodeClaim and per pod class; intersecting them is a handful of word
// ANDs (1,400 types fit in 22 words, stored inline). Value type; thread-compatible.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"

namespace dovetail::solver {

class TypeSet {
 public:
  TypeSet() = default;
  // A set over `size` types, all present when `full` is true.
  explicit TypeSet(size_t size, bool full = false) : size_(size), words_((size + 63) / 64, 0) {
    if (full) {
      for (auto& w : words_) w = ~uint64_t{0};
      TrimTail();
    }
  }

  size_t size() const { return size_; }
  void Set(size_t i) { words_[i >> 6] |= uint64_t{1} << (i & 63); }
  void Reset(size_t i) { words_[i >> 6] &= ~(uint64_t{1} << (i & 63)); }
  bool Test(size_t i) const { return (words_[i >> 6] >> (i & 63)) & 1; }

  bool Any() const {
    for (uint64_t w : words_) {
      if (w != 0) return true;
    }
    return false;
  }
  size_t Count() const {
    size_t n = 0;
    for (uint64_t w : words_) n += static_cast<size_t>(std::popcount(w));
    return n;
  }
  // Index of the lowest member, or size() when empty.
  size_t First() const {
    for (size_t i = 0; i < words_.size(); ++i) {
      if (words_[i] != 0) return i * 64 + static_cast<size_t>(std::countr_zero(words_[i]));
    }
    return size_;
  }

  TypeSet& operator&=(const TypeSet& o) {
    for (size_t i = 0; i < words_.size(); ++i) words_[i] &= o.words_[i];
    return *this;
  }
  TypeSet& operator|=(const TypeSet& o) {
    for (size_t i = 0; i < words_.size(); ++i) words_[i] |= o.words_[i];
    return *this;
  }
  // Removes the members of `o`.
  TypeSet& operator-=(const TypeSet& o) {
    for (size_t i = 0; i < words_.size(); ++i) words_[i] &= ~o.words_[i];
    return *this;
  }
  friend TypeSet operator&(TypeSet a, const TypeSet& b) { return a &= b; }
  friend TypeSet operator-(TypeSet a, const TypeSet& b) { return a -= b; }
  friend TypeSet operator|(TypeSet a, const TypeSet& b) { return a |= b; }
  bool Intersects(const TypeSet& o) const {
    for (size_t i = 0; i < words_.size(); ++i) {
      if (words_[i] & o.words_[i]) return true;
    }
    return false;
  }
  bool IsSubsetOf(const TypeSet& o) const {
    for (size_t i = 0; i < words_.size(); ++i) {
      if (words_[i] & ~o.words_[i]) return false;
    }
    return true;
  }

  // Calls f(index) for every member in ascending order.
  template <typename F>
  void ForEach(F&& f) const {
    for (size_t i = 0; i < words_.size(); ++i) {
      uint64_t w = words_[i];
      while (w != 0) {
        f(i * 64 + static_cast<size_t>(std::countr_zero(w)));
        w &= w - 1;
      }
    }
  }

  // True when pred(index) holds for some member; stops at the first, in ascending order.
  template <typename F>
  bool AnyOf(F&& pred) const {
    for (size_t i = 0; i < words_.size(); ++i) {
      uint64_t w = words_[i];
      while (w != 0) {
        if (pred(i * 64 + static_cast<size_t>(std::countr_zero(w)))) return true;
        w &= w - 1;
      }
    }
    return false;
  }

  // Keeps the members for which keep(index) holds; returns whether any is left.
  template <typename F>
  bool RetainIf(F&& keep) {
    bool any = false;
    for (size_t i = 0; i < words_.size(); ++i) {
      uint64_t w = words_[i];
      while (w != 0) {
        const uint64_t bit = w & -w;
        if (keep(i * 64 + static_cast<size_t>(std::countr_zero(w)))) {
          any = true;
        } else {
          words_[i] &= ~bit;
        }
        w &= w - 1;
      }
    }
    return any;
  }

  friend bool operator==(const TypeSet& a, const TypeSet& b) {
    return a.size_ == b.size_ && a.words_ == b.words_;
  }
  template <typename H>
  friend H AbslHashValue(H h, const TypeSet& s) {
    return H::combine(std::move(h), s.size_, s.words_);
  }

 private:
  void TrimTail() {
    if (size_ % 64 != 0 && !words_.empty()) words_.back() &= (uint64_t{1} << (size_ % 64)) - 1;
  }

  size_t size_ = 0;
  absl::InlinedVector<uint64_t, 24> words_;
};

}  // namespace dovetail::solver
