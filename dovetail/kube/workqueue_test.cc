#include "dovetail/kube/workqueue.h"

#include <atomic>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "dovetail/metrics/registry.h"
#include "gmock/gmock.h"
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

TEST(WorkQueueTest, ReportsTheOldestKeyInProcessingWithoutMetrics) {
  WorkQueue q;  // no registry: the start times are tracked all the same
  EXPECT_EQ(q.OldestProcessingStart(), std::nullopt);
  q.Add("a");
  q.Add("b");
  EXPECT_EQ(q.OldestProcessingStart(), std::nullopt);  // waiting is not processing
  const absl::Time before_a = absl::Now();
  ASSERT_EQ(q.Get(), "a");
  const absl::Time after_a = absl::Now();
  ASSERT_EQ(q.Get(), "b");
  std::optional<absl::Time> oldest = q.OldestProcessingStart();
  ASSERT_TRUE(oldest.has_value());
  EXPECT_GE(*oldest, before_a);
  EXPECT_LE(*oldest, after_a);
  q.Done("a");
  std::optional<absl::Time> b_start = q.OldestProcessingStart();
  ASSERT_TRUE(b_start.has_value());
  EXPECT_GE(*b_start, after_a);
  q.Done("b");
  EXPECT_EQ(q.OldestProcessingStart(), std::nullopt);
}

TEST(ReconcileWorkersTest, NeverReconcilesTheSameKeyConcurrentlyAndRetriesFailures) {
  WorkQueue queue({.base_delay = absl::Microseconds(100)});
  absl::Mutex mu;
  absl::flat_hash_map<std::string, int> active;
  absl::flat_hash_map<std::string, int> calls;
  bool overlap = false;
  int total = 0;
  ReconcileWorkers workers(
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
  workers.Start();
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
  workers.Stop();
  absl::MutexLock lock(&mu);
  EXPECT_FALSE(overlap);
}

// Polls `done` (a metric reaching a value set by another thread) for up to 10s.
template <typename F>
bool Eventually(F done) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

TEST(WorkQueueMetricsTest, ExportsClientGoFamiliesLabelledAsControllerRuntimeDoes) {
  metrics::Registry r;
  const metrics::LabelValues l = {"nodepool.hash", "nodepool.hash"};
  const metrics::LabelValues depth_l = {"nodepool.hash", "nodepool.hash", ""};
  auto queue = std::make_unique<WorkQueue>(WorkQueueOptions{
      .base_delay = absl::Milliseconds(1), .name = "nodepool.hash", .metrics = &r});
  metrics::Counter& adds = r.NewCounter("workqueue_adds_total", "", {"name", "controller"});
  metrics::Counter& retries = r.NewCounter("workqueue_retries_total", "", {"name", "controller"});
  metrics::Gauge& depth = r.NewGauge("workqueue_depth", "", {"name", "controller", "priority"});
  metrics::Gauge& longest =
      r.NewGauge("workqueue_longest_running_processor_seconds", "", {"name", "controller"});
  metrics::Gauge& unfinished =
      r.NewGauge("workqueue_unfinished_work_seconds", "", {"name", "controller"});
  metrics::Histogram& waited =
      r.NewHistogram("workqueue_queue_duration_seconds", "", {"name", "controller"}, {});
  metrics::Histogram& worked =
      r.NewHistogram("workqueue_work_duration_seconds", "", {"name", "controller"}, {});
  EXPECT_THAT(r.Expose(), ::testing::HasSubstr(
                              "workqueue_depth{name=\"nodepool.hash\",controller=\"nodepool.hash\","
                              "priority=\"\"} 0\n"));

  queue->Add("a");
  queue->Add("a");  // deduplicated: not an add
  queue->Add("b");
  EXPECT_EQ(adds.Value(l), 2);
  EXPECT_EQ(depth.Value(depth_l), 2);
  ASSERT_EQ(queue->Get(), "a");
  EXPECT_EQ(depth.Value(depth_l), 1);
  EXPECT_EQ(waited.Count(l), 1u);
  queue->Add("a");  // waits for Done, but counts as waiting (client-go's depth)
  EXPECT_EQ(adds.Value(l), 3);
  EXPECT_EQ(depth.Value(depth_l), 2);
  // A key in progress shows in the in-progress gauges within client-go's 500ms period.
  EXPECT_TRUE(Eventually([&] { return longest.Value(l) >= 0.2; }));
  EXPECT_GE(unfinished.Value(l), longest.Value(l));
  queue->Done("a");
  EXPECT_EQ(worked.Count(l), 1u);
  EXPECT_GE(worked.Sum(l), 0.2);
  EXPECT_TRUE(Eventually([&] { return longest.Value(l) == 0 && unfinished.Value(l) == 0; }));

  queue->AddAfter("c", absl::Milliseconds(1));
  queue->AddRateLimited("d");
  EXPECT_EQ(retries.Value(l), 2);
  EXPECT_TRUE(Eventually([&] { return depth.Value(depth_l) == 4; }));  // a, b, c, d
  EXPECT_EQ(adds.Value(l), 5);
  // client-go's bounds, bit for bit (test/testdata/upstream-metrics.json).
  EXPECT_THAT(r.Expose(), ::testing::HasSubstr("le=\"9.999999999999999e-06\""));
  queue.reset();
  EXPECT_EQ(depth.Value(depth_l), 0);
}

TEST(WorkQueueMetricsTest, UnnamedQueuesExportNothing) {
  metrics::Registry r;
  WorkQueue queue({.metrics = &r});
  queue.Add("a");
  WorkQueue no_registry(WorkQueueOptions{}.WithMetrics("x", nullptr));
  no_registry.Add("a");
  EXPECT_THAT(r.Expose(), ::testing::Not(::testing::HasSubstr("workqueue_")));
  WorkQueue named(WorkQueueOptions{.base_delay = absl::Seconds(3)}.WithMetrics("x", &r));
  EXPECT_EQ(named.options().base_delay, absl::Seconds(3));
  EXPECT_THAT(r.Expose(),
              ::testing::HasSubstr("workqueue_adds_total{name=\"x\",controller=\"x\"} 0"));
}

TEST(ReconcileWorkersMetricsTest, CountsReconcilesByResultAsControllerRuntimeDoes) {
  metrics::Registry r;
  WorkQueue queue({.base_delay = absl::Milliseconds(1), .name = "ctl", .metrics = &r});
  absl::Mutex mu;
  absl::flat_hash_map<std::string, int> calls;
  ReconcileWorkers workers(
      queue,
      [&](const std::string& key) -> absl::StatusOr<ReconcileResult> {
        int n;
        {
          absl::MutexLock lock(&mu);
          n = ++calls[key];
        }
        if (key == "fail" && n == 1) return absl::UnavailableError("transient");
        if (key == "later" && n == 1) return ReconcileResult{.requeue_after = absl::Hours(1)};
        if (key == "now" && n == 1) return ReconcileResult{.requeue_after = absl::ZeroDuration()};
        return ReconcileResult{};
      },
      /*workers=*/3);
  workers.Start();
  metrics::Counter& total =
      r.NewCounter("controller_runtime_reconcile_total", "", {"controller", "result"});
  EXPECT_EQ(
      r.NewGauge("controller_runtime_max_concurrent_reconciles", "", {"controller"}).Value({"ctl"}),
      3);
  const std::string zeros = r.Expose();
  for (const char* family :
       {"controller_runtime_reconcile_panics_total", "controller_runtime_reconcile_timeouts_total",
        "controller_runtime_terminal_reconcile_errors_total",
        "controller_runtime_reconcile_errors_total", "controller_runtime_active_workers"}) {
    EXPECT_THAT(zeros, ::testing::HasSubstr(std::string(family) + "{controller=\"ctl\"} 0\n"));
  }
  EXPECT_THAT(zeros,
              ::testing::HasSubstr(
                  "controller_runtime_reconcile_total{controller=\"ctl\",result=\"requeue\"} 0\n"));

  for (const char* key : {"ok", "fail", "later", "now"}) queue.Add(key);
  // ok: success; fail: error then success; later: requeue_after (then waits an hour);
  // now: requeue then success.
  EXPECT_TRUE(Eventually([&] {
    return total.Value({"ctl", "success"}) == 3 && total.Value({"ctl", "error"}) == 1 &&
           total.Value({"ctl", "requeue_after"}) == 1 && total.Value({"ctl", "requeue"}) == 1;
  }));
  workers.Stop();
  EXPECT_EQ(
      r.NewCounter("controller_runtime_reconcile_errors_total", "", {"controller"}).Value({"ctl"}),
      1);
  EXPECT_EQ(r.NewHistogram("controller_runtime_reconcile_time_seconds", "", {"controller"}, {})
                .Count({"ctl"}),
            6u);
  EXPECT_THAT(r.Expose(), ::testing::HasSubstr(
                              "controller_runtime_reconcile_time_seconds_bucket{controller=\"ctl\","
                              "le=\"0.005\"}"));
}

TEST(ReconcileWorkersMetricsTest, ActiveWorkersCountReconcilesInProgress) {
  metrics::Registry r;
  WorkQueue queue({.name = "busy", .metrics = &r});
  absl::Notification release;
  ReconcileWorkers workers(
      queue,
      [&](const std::string&) -> absl::StatusOr<ReconcileResult> {
        release.WaitForNotification();
        return ReconcileResult{};
      },
      /*workers=*/4);
  workers.Start();
  queue.Add("a");
  queue.Add("b");
  metrics::Gauge& active = r.NewGauge("controller_runtime_active_workers", "", {"controller"});
  EXPECT_TRUE(Eventually([&] { return active.Value({"busy"}) == 2; }));
  release.Notify();
  EXPECT_TRUE(Eventually([&] { return active.Value({"busy"}) == 0; }));
  workers.Stop();
}

}  // namespace
}  // namespace dovetail::kube
