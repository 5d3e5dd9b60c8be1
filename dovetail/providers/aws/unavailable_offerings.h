// UnavailableOfferings: the insufficient-capacity (ICE) cache. When a launch fails with an
// unfulfillable-capacity error (or a spot interruption arrives), the (capacity type, instance
// type, zone) offering is marked unavailable for a TTL (3 minutes by default, as upstream) so the
// next scheduling passes route around it; a whole capacity type can be marked too (upstream does
// it for spot when the spot service-linked role cannot be created).
//
// Every change (mark, delete, flush, an entry expiring) bumps a sequence number: SeqNum() for the
// whole cache and SeqNum(instance_type) for one type, so the catalog can cache filtered offerings
// and re-filter only when the number moved. Expiry is evaluated lazily against the injected Clock:
// every call first drops the entries whose deadline has passed (bumping the sequence numbers), so
// no background sweeper is needed and a FakeClock drives it in tests.
//
// Thread-safe: all methods may be called concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dovetail/common/clock.h"

namespace dovetail::providers::aws {

class UnavailableOfferings {
 public:
  struct Options {
    absl::Duration ttl = absl::Minutes(3);
  };
  struct Entry {
    std::string capacity_type;  // "spot", "on-demand", "reserved"
    std::string instance_type;  // empty: every type (a capacity-type-wide entry)
    std::string zone;           // empty: every zone (a capacity-type-wide entry)
    std::string reason;         // the AWS error code or "SpotInterruption", for logs and events
    absl::Time expires;
  };

  explicit UnavailableOfferings(const Clock& clock) : UnavailableOfferings(clock, Options{}) {}
  UnavailableOfferings(const Clock& clock, Options options);

  // Marks (capacity_type, instance_type, zone) unavailable until now + ttl; marking it again
  // extends the deadline. Bumps the sequence numbers.
  void MarkUnavailable(std::string_view reason, std::string_view capacity_type,
                       std::string_view instance_type, std::string_view zone);
  // Marks every offering of `capacity_type` unavailable until now + ttl.
  void MarkCapacityTypeUnavailable(std::string_view reason, std::string_view capacity_type);

  // True while the offering, or its whole capacity type, is marked and not expired.
  bool IsUnavailable(std::string_view capacity_type, std::string_view instance_type,
                     std::string_view zone) const;
  bool IsCapacityTypeUnavailable(std::string_view capacity_type) const;

  // Removes one entry (no-op when absent); bumps the sequence numbers when something was removed.
  void Delete(std::string_view capacity_type, std::string_view instance_type,
              std::string_view zone);
  // Removes everything.
  void Flush();

  // Sequence numbers: start at 0 and only grow. SeqNum(type) moves when an entry of that type (or
  // a capacity-type-wide entry) changes; SeqNum() when anything changes.
  uint64_t SeqNum() const;
  uint64_t SeqNum(std::string_view instance_type) const;

  // The live entries, sorted by key (for debugging and metrics).
  std::vector<Entry> Entries() const;

 private:
  static std::string Key(std::string_view capacity_type, std::string_view instance_type,
                         std::string_view zone);
  void Put(std::string_view reason, std::string_view capacity_type, std::string_view instance_type,
           std::string_view zone);
  void Bump(std::string_view instance_type) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ExpireLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock& clock_;
  const Options options_;
  mutable absl::Mutex mu_;
  // Expiry mutates from const readers (lazy sweeping), hence mutable.
  mutable absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  mutable uint64_t seq_ ABSL_GUARDED_BY(mu_) = 0;
  mutable absl::flat_hash_map<std::string, uint64_t> type_seq_ ABSL_GUARDED_BY(mu_);
  // Bumped for capacity-type-wide changes; added into every SeqNum(type).
  mutable uint64_t wide_seq_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace dovetail::providers::aws
