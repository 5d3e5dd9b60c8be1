// Prometheus metrics: counters, gauges and histograms with labels, and the text exposition format
// (version 0.0.4) served on /metrics. Names follow upstream Karpenter's
// (karpenter_nodeclaims_created_total, karpenter_pods_state, ...), so dashboards built for upstream
// keep working; label sets are kept small (no pod names, no node names in high-volume metrics).
//
// A Registry owns its metrics; the references it hands out stay valid for its lifetime. Every
// class here is thread-safe.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace dovetail::metrics {

using LabelValues = std::vector<std::string>;  // in the order of the metric's label names

class Metric {
 public:
  Metric(std::string name, std::string help, std::vector<std::string> label_names)
      : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {}
  virtual ~Metric() = default;
  const std::string& name() const { return name_; }
  // Appends the # HELP / # TYPE lines and every sample.
  virtual void Expose(std::string& out) const = 0;

 protected:
  // `{a="x",b="y"}` (with `extra` appended, e.g. le="0.5"); "" when there are no labels.
  std::string Labels(const LabelValues& values, const std::string& extra = "") const;
  void Header(std::string& out, const char* type) const;

  std::string name_;
  std::string help_;
  std::vector<std::string> label_names_;
};

class Counter final : public Metric {
 public:
  using Metric::Metric;
  // Wrong label arity is a programming error: the sample is dropped.
  void Inc(const LabelValues& values = {}, double delta = 1);
  double Value(const LabelValues& values = {}) const;
  void Expose(std::string& out) const override;

 private:
  mutable absl::Mutex mu_;
  std::map<LabelValues, double> values_ ABSL_GUARDED_BY(mu_);
};

class Gauge final : public Metric {
 public:
  using Metric::Metric;
  void Set(const LabelValues& values, double value);
  void Add(const LabelValues& values, double delta);
  double Value(const LabelValues& values = {}) const;
  // Replaces every sample (for gauges recomputed from a snapshot, such as pods by phase).
  void Replace(std::map<LabelValues, double> values);
  // Removes one series (a pod or node that is gone); absent series are ignored.
  void Delete(const LabelValues& values);
  void Expose(std::string& out) const override;

 private:
  mutable absl::Mutex mu_;
  std::map<LabelValues, double> values_ ABSL_GUARDED_BY(mu_);
};

class Histogram final : public Metric {
 public:
  // `buckets`: upper bounds, ascending (+Inf is implicit).
  Histogram(std::string name, std::string help, std::vector<std::string> label_names,
            std::vector<double> buckets);
  void Observe(const LabelValues& values, double value);
  uint64_t Count(const LabelValues& values = {}) const;
  double Sum(const LabelValues& values = {}) const;
  void Expose(std::string& out) const override;

 private:
  struct Series {
    std::vector<uint64_t> counts;  // per bucket, not cumulative
    uint64_t count = 0;
    double sum = 0;
  };
  std::vector<double> buckets_;
  mutable absl::Mutex mu_;
  std::map<LabelValues, Series> series_ ABSL_GUARDED_BY(mu_);
};

// A summary with the quantiles 0, 0.5, 0.9, 0.99 and 1 (upstream's objectives), computed exactly
// over the observations of the last `max_age` (client_golang's default window, 10 minutes), at
// most `kMaxSamples` per series (the oldest are dropped first). _sum and _count cover every
// observation, as in client_golang.
class Summary final : public Metric {
 public:
  static constexpr size_t kMaxSamples = 2048;
  Summary(std::string name, std::string help, std::vector<std::string> label_names,
          std::chrono::seconds max_age = std::chrono::minutes(10));
  void Observe(const LabelValues& values, double value);
  uint64_t Count(const LabelValues& values = {}) const;
  void Expose(std::string& out) const override;

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  struct Series {
    std::deque<std::pair<SteadyTime, double>> window;
    uint64_t count = 0;
    double sum = 0;
  };
  std::chrono::seconds max_age_;
  mutable absl::Mutex mu_;
  mutable std::map<LabelValues, Series> series_ ABSL_GUARDED_BY(mu_);
};

// Upstream's default duration buckets (seconds).
std::vector<double> DurationBuckets();

class Registry {
 public:
  Counter& NewCounter(const std::string& name, const std::string& help,
                      std::vector<std::string> label_names = {});
  Gauge& NewGauge(const std::string& name, const std::string& help,
                  std::vector<std::string> label_names = {});
  Histogram& NewHistogram(const std::string& name, const std::string& help,
                          std::vector<std::string> label_names, std::vector<double> buckets);
  Summary& NewSummary(const std::string& name, const std::string& help,
                      std::vector<std::string> label_names = {});
  // A metric registered twice under one name is returned again (its type must match).
  //
  // `refresh` runs at the start of every Expose(), before any metric is written, for gauges read
  // from outside at scrape time (process_*, queue depths). It must not call Expose().
  void OnScrape(std::function<void()> refresh);
  std::string Expose() const;

 private:
  template <typename T, typename... Args>
  T& Register(const std::string& name, Args&&... args);

  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<Metric>> metrics_ ABSL_GUARDED_BY(mu_);
  mutable absl::Mutex refresh_mu_;  // held while refreshing: one scrape refreshes at a time
  std::vector<std::function<void()>> refreshers_ ABSL_GUARDED_BY(refresh_mu_);
};

}  // namespace dovetail::metrics
