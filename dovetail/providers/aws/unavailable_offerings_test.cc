#include "dovetail/providers/aws/unavailable_offerings.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace dovetail::providers::aws {
namespace {

TEST(UnavailableOfferingsTest, MarkedOfferingIsUnavailableUntilTheTtlPasses) {
  FakeClock clock;
  UnavailableOfferings cache(clock);
  EXPECT_FALSE(cache.IsUnavailable("spot", "m5.large", "us-east-1a"));
  cache.MarkUnavailable("InsufficientInstanceCapacity", "spot", "m5.large", "us-east-1a");
  EXPECT_TRUE(cache.IsUnavailable("spot", "m5.large", "us-east-1a"));
  // Only that key: other capacity types, types and zones stay available.
  EXPECT_FALSE(cache.IsUnavailable("on-demand", "m5.large", "us-east-1a"));
  EXPECT_FALSE(cache.IsUnavailable("spot", "m5.xlarge", "us-east-1a"));
  EXPECT_FALSE(cache.IsUnavailable("spot", "m5.large", "us-east-1b"));
  clock.Advance(absl::Minutes(3) - absl::Seconds(1));
  EXPECT_TRUE(cache.IsUnavailable("spot", "m5.large", "us-east-1a"));
  clock.Advance(absl::Seconds(1));
  EXPECT_FALSE(cache.IsUnavailable("spot", "m5.large", "us-east-1a"));
  EXPECT_TRUE(cache.Entries().empty());
}

TEST(UnavailableOfferingsTest, MarkingAgainExtendsTheDeadline) {
  FakeClock clock;
  UnavailableOfferings cache(clock);
  cache.MarkUnavailable("InsufficientInstanceCapacity", "on-demand", "c5.large", "z1");
  clock.Advance(absl::Minutes(2));
  cache.MarkUnavailable("InsufficientInstanceCapacity", "on-demand", "c5.large", "z1");
  clock.Advance(absl::Minutes(2));
  EXPECT_TRUE(cache.IsUnavailable("on-demand", "c5.large", "z1"));
  clock.Advance(absl::Minutes(1));
  EXPECT_FALSE(cache.IsUnavailable("on-demand", "c5.large", "z1"));
}

TEST(UnavailableOfferingsTest, TtlIsConfigurable) {
  FakeClock clock;
  UnavailableOfferings cache(clock, {.ttl = absl::Seconds(10)});
  cache.MarkUnavailable("x", "spot", "m5.large", "z1");
  clock.Advance(absl::Seconds(10));
  EXPECT_FALSE(cache.IsUnavailable("spot", "m5.large", "z1"));
}

TEST(UnavailableOfferingsTest, CapacityTypeWideEntryCoversEveryTypeAndZone) {
  FakeClock clock;
  UnavailableOfferings cache(clock);
  cache.MarkCapacityTypeUnavailable("AuthFailure.ServiceLinkedRoleCreationNotPermitted", "spot");
  EXPECT_TRUE(cache.IsCapacityTypeUnavailable("spot"));
  EXPECT_TRUE(cache.IsUnavailable("spot", "m5.large", "us-east-1a"));
  EXPECT_TRUE(cache.IsUnavailable("spot", "c7g.xlarge", "us-east-1c"));
  EXPECT_FALSE(cache.IsUnavailable("on-demand", "m5.large", "us-east-1a"));
  EXPECT_FALSE(cache.IsCapacityTypeUnavailable("on-demand"));
  clock.Advance(absl::Minutes(3));
  EXPECT_FALSE(cache.IsUnavailable("spot", "m5.large", "us-east-1a"));
}

TEST(UnavailableOfferingsTest, SequenceNumbersMoveOnEveryChangeIncludingExpiry) {
  FakeClock clock;
  UnavailableOfferings cache(clock);
  EXPECT_EQ(cache.SeqNum(), 0u);
  EXPECT_EQ(cache.SeqNum("m5.large"), 0u);
  cache.MarkUnavailable("ice", "spot", "m5.large", "z1");
  const uint64_t after_mark = cache.SeqNum();
  EXPECT_GT(after_mark, 0u);
  const uint64_t m5 = cache.SeqNum("m5.large");
  EXPECT_GT(m5, 0u);
  EXPECT_EQ(cache.SeqNum("c5.large"), 0u);  // other types keep their filtered offerings
  // Reads do not change it.
  EXPECT_TRUE(cache.IsUnavailable("spot", "m5.large", "z1"));
  EXPECT_EQ(cache.SeqNum(), after_mark);
  // Expiry is a change.
  clock.Advance(absl::Minutes(3));
  EXPECT_GT(cache.SeqNum(), after_mark);
  EXPECT_GT(cache.SeqNum("m5.large"), m5);
  // Deleting a missing entry is not a change; deleting a present one is.
  const uint64_t before_delete = cache.SeqNum();
  cache.Delete("spot", "m5.large", "z1");
  EXPECT_EQ(cache.SeqNum(), before_delete);
  cache.MarkUnavailable("ice", "spot", "m5.large", "z1");
  const uint64_t marked = cache.SeqNum();
  cache.Delete("spot", "m5.large", "z1");
  EXPECT_GT(cache.SeqNum(), marked);
  EXPECT_FALSE(cache.IsUnavailable("spot", "m5.large", "z1"));
  // A capacity-type-wide change moves every type's number.
  const uint64_t c5 = cache.SeqNum("c5.large");
  cache.MarkCapacityTypeUnavailable("slr", "spot");
  EXPECT_GT(cache.SeqNum("c5.large"), c5);
  const uint64_t before_flush = cache.SeqNum();
  cache.Flush();
  EXPECT_GT(cache.SeqNum(), before_flush);
  EXPECT_FALSE(cache.IsCapacityTypeUnavailable("spot"));
}

TEST(UnavailableOfferingsTest, EntriesAreSortedAndCarryTheReason) {
  FakeClock clock;
  UnavailableOfferings cache(clock);
  cache.MarkUnavailable("SpotInterruption", "spot", "m5.large", "z2");
  cache.MarkUnavailable("InsufficientInstanceCapacity", "on-demand", "m5.large", "z1");
  auto entries = cache.Entries();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].capacity_type, "on-demand");
  EXPECT_EQ(entries[0].reason, "InsufficientInstanceCapacity");
  EXPECT_EQ(entries[1].zone, "z2");
  EXPECT_EQ(entries[1].expires, clock.Now() + absl::Minutes(3));
}

TEST(UnavailableOfferingsTest, ConcurrentMarksAndReadsAreConsistent) {
  FakeClock clock;
  UnavailableOfferings cache(clock);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < 200; ++i) {
        const std::string type = "t" + std::to_string(t) + "." + std::to_string(i);
        cache.MarkUnavailable("ice", "spot", type, "z1");
        EXPECT_TRUE(cache.IsUnavailable("spot", type, "z1"));
        cache.SeqNum(type);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(cache.Entries().size(), 800u);
  EXPECT_EQ(cache.SeqNum(), 800u);
}

}  // namespace
}  // namespace dovetail::providers::aws
