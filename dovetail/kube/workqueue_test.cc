#include "dovetail/kube/workqueue.h"

#include <atomic>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace dovetail::kube {
namespace {

TEST(WorkQueueTest, DeduplicatesKeysAddedBeforeProcessing) {
  WorkQueue queue;
  queue.Add("a");
  queue.Add("a");
  queue.Add("b");
  EXPECT_EQ(queue.Len(), 2u);
  EXPECT_EQ(queue.Get(), "a");
  EXPECT_EQ(queue.Get(), "b");
}

TEST(WorkQueueTest, KeyAddedWhileProcessingIsRequeuedOnlyAfterDone) {
  WorkQueue queue;
  queue.Add("a");
  ASSERT_EQ(queue.Get(), "a");
  queue.Add("a");
  EXPECT_EQ(queue.Len(), 0u);  // not handed to a second worker while processing
  queue.Done("a");
  EXPECT_EQ(queue.Len(), 1u);
  EXPECT_EQ(queue.Get(), "a");
}

TEST(WorkQueueTest, RateLimitedRequeuesBackOffExponentiallyUntilForgotten) {
  WorkQueue queue({.base_delay = absl::Milliseconds(1), .max_delay = absl::Seconds(1)});
  queue.AddRateLimited("a");
  queue.AddRateLimited("a");
  EXPECT_EQ(queue.NumRequeues("a"), 2);
  EXPECT_EQ(queue.Get(), "a");  // arrives once the delay passed
  queue.Done("a");
  queue.Forget("a");
  EXPECT_EQ(queue.NumRequeues("a"), 0);
}

TEST(WorkQueueTest, ShutDownReleasesBlockedGetters) {
  WorkQueue queue;
  std::thread getter([&] { EXPECT_EQ(queue.Get(), std::nullopt); });
  queue.ShutDown();
  getter.join();
}

TEST(ControllerTest, NeverReconcilesTheSameKeyConcurrentlyAndRetriesFailures) {
  WorkQueue queue({.base_delay = absl::Microseconds(100)});
  absl::Mutex mu;
  absl::flat_hash_map<std::string, int> active;
  absl::flat_hash_map<std::string, int> calls;
  bool overlap = false;
  int total = 0;
  Controller controller(
      queue,
      [&](const std::string& key) -> absl::StatusOr<ReconcileResult> {
        {
          absl::MutexLock lock(&mu);
          if (++active[key] > 1) overlap = true;
        }
        for (int i = 0; i < 3; ++i) queue.Add(key);  // re-adds while processing
        absl::MutexLock lock(&mu);
        --active[key];
        ++total;
        // Fail each key's first two reconciles: they must be retried with backoff.
        if (++calls[key] <= 2) return absl::UnavailableError("transient");
        return ReconcileResult{};
      },
      /*workers=*/4);
  controller.Start();
  for (int i = 0; i < 20; ++i) queue.Add("key-" + std::to_string(i % 5));
  {
    absl::MutexLock lock(&mu);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      for (int i = 0; i < 5; ++i) {
        auto it = calls.find("key-" + std::to_string(i));
        if (it == calls.end() || it->second < 4) return false;
      }
      return true;
    };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(30)));
  }
  controller.Stop();
  absl::MutexLock lock(&mu);
  EXPECT_FALSE(overlap);
}

}  // namespace
}  // namespace dovetail::kube
