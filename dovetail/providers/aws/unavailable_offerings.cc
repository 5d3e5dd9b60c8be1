#include "dovetail/providers/aws/unavailable_offerings.h"

#include <algorithm>

#include "dovetail/common/absl_compat.h"

namespace dovetail::providers::aws {

UnavailableOfferings::UnavailableOfferings(const Clock& clock, Options options)
    : clock_(clock), options_(options) {}

std::string UnavailableOfferings::Key(std::string_view capacity_type,
                                      std::string_view instance_type, std::string_view zone) {
  return Cat(capacity_type, ":", instance_type, ":", zone);
}

void UnavailableOfferings::Bump(std::string_view instance_type) const {
  ++seq_;
  if (instance_type.empty()) {
    ++wide_seq_;
  } else {
    ++type_seq_[std::string(instance_type)];
  }
}

void UnavailableOfferings::ExpireLocked() const {
  const absl::Time now = clock_.Now();
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.expires <= now) {
      Bump(it->second.instance_type);
      entries_.erase(it++);
    } else {
      ++it;
    }
  }
}

void UnavailableOfferings::Put(std::string_view reason, std::string_view capacity_type,
                               std::string_view instance_type, std::string_view zone) {
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  Entry& e = entries_[Key(capacity_type, instance_type, zone)];
  e.capacity_type = std::string(capacity_type);
  e.instance_type = std::string(instance_type);
  e.zone = std::string(zone);
  e.reason = std::string(reason);
  e.expires = clock_.Now() + options_.ttl;
  Bump(instance_type);
}

void UnavailableOfferings::MarkUnavailable(std::string_view reason, std::string_view capacity_type,
                                           std::string_view instance_type, std::string_view zone) {
  Put(reason, capacity_type, instance_type, zone);
}

void UnavailableOfferings::MarkCapacityTypeUnavailable(std::string_view reason,
                                                       std::string_view capacity_type) {
  Put(reason, capacity_type, "", "");
}

bool UnavailableOfferings::IsUnavailable(std::string_view capacity_type,
                                         std::string_view instance_type,
                                         std::string_view zone) const {
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  return entries_.contains(Key(capacity_type, instance_type, zone)) ||
         entries_.contains(Key(capacity_type, "", ""));
}

bool UnavailableOfferings::IsCapacityTypeUnavailable(std::string_view capacity_type) const {
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  return entries_.contains(Key(capacity_type, "", ""));
}

void UnavailableOfferings::Delete(std::string_view capacity_type, std::string_view instance_type,
                                  std::string_view zone) {
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  if (entries_.erase(Key(capacity_type, instance_type, zone)) > 0) Bump(instance_type);
}

void UnavailableOfferings::Flush() {
  absl::MutexLock lock(&mu_);
  for (const auto& [key, e] : entries_) Bump(e.instance_type);
  entries_.clear();
}

uint64_t UnavailableOfferings::SeqNum() const {
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  return seq_;
}

uint64_t UnavailableOfferings::SeqNum(std::string_view instance_type) const {
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  auto it = type_seq_.find(std::string(instance_type));
  return (it == type_seq_.end() ? 0 : it->second) + wide_seq_;
}

std::vector<UnavailableOfferings::Entry> UnavailableOfferings::Entries() const {
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  std::vector<std::pair<std::string, Entry>> sorted(entries_.begin(), entries_.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Entry> out;
  out.reserve(sorted.size());
  for (auto& [key, e] : sorted) out.push_back(std::move(e));
  return out;
}

}  // namespace dovetail::providers::aws
