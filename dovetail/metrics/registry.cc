#include "dovetail/metrics/registry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace dovetail::metrics {
namespace {

std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrCat(static_cast<int64_t>(v));
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round-trip form
  return std::string(buf, ec == std::errc() ? end : buf);
}

std::string Escape(const std::string& s, bool help) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && !help) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string Metric::Labels(const LabelValues& values, const std::string& extra) const {
  if (label_names_.empty() && extra.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < label_names_.size() && i < values.size(); ++i) {
    if (i > 0) out += ",";
    absl::StrAppend(&out, label_names_[i], "=\"", Escape(values[i], false), "\"");
  }
  if (!extra.empty()) {
    if (out.size() > 1) out += ",";
    out += extra;
  }
  out += "}";
  return out;
}

void Metric::Header(std::string& out, const char* type) const {
  absl::StrAppend(&out, "# HELP ", name_, " ", Escape(help_, true), "\n# TYPE ", name_, " ", type,
                  "\n");
}

void Counter::Inc(const LabelValues& values, double delta) {
  if (values.size() != label_names_.size() || delta < 0) return;
  absl::MutexLock lock(&mu_);
  values_[values] += delta;
}

double Counter::Value(const LabelValues& values) const {
  absl::MutexLock lock(&mu_);
  auto it = values_.find(values);
  return it == values_.end() ? 0 : it->second;
}

void Counter::Expose(std::string& out) const {
  Header(out, "counter");
  absl::MutexLock lock(&mu_);
  for (const auto& [labels, v] : values_)
    absl::StrAppend(&out, name_, Labels(labels), " ", Number(v), "\n");
}

void Gauge::Set(const LabelValues& values, double value) {
  if (values.size() != label_names_.size()) return;
  absl::MutexLock lock(&mu_);
  values_[values] = value;
}

void Gauge::Add(const LabelValues& values, double delta) {
  if (values.size() != label_names_.size()) return;
  absl::MutexLock lock(&mu_);
  values_[values] += delta;
}

double Gauge::Value(const LabelValues& values) const {
  absl::MutexLock lock(&mu_);
  auto it = values_.find(values);
  return it == values_.end() ? 0 : it->second;
}

void Gauge::Replace(std::map<LabelValues, double> values) {
  for (auto it = values.begin(); it != values.end();) {
    it = it->first.size() == label_names_.size() ? std::next(it) : values.erase(it);
  }
  absl::MutexLock lock(&mu_);
  values_ = std::move(values);
}

void Gauge::Expose(std::string& out) const {
  Header(out, "gauge");
  absl::MutexLock lock(&mu_);
  for (const auto& [labels, v] : values_)
    absl::StrAppend(&out, name_, Labels(labels), " ", Number(v), "\n");
}

void Gauge::Delete(const LabelValues& values) {
  absl::MutexLock lock(&mu_);
  values_.erase(values);
}

Histogram::Histogram(std::string name, std::string help, std::vector<std::string> label_names,
                     std::vector<double> buckets)
    : Metric(std::move(name), std::move(help), std::move(label_names)),
      buckets_(std::move(buckets)) {}

void Histogram::Observe(const LabelValues& values, double value) {
  if (values.size() != label_names_.size()) return;
  absl::MutexLock lock(&mu_);
  Series& s = series_[values];
  if (s.counts.empty()) s.counts.assign(buckets_.size(), 0);
  for (size_t i = 0; i < buckets_.size(); ++i) {
    if (value <= buckets_[i]) {
      ++s.counts[i];
      break;
    }
  }
  ++s.count;
  s.sum += value;
}

uint64_t Histogram::Count(const LabelValues& values) const {
  absl::MutexLock lock(&mu_);
  auto it = series_.find(values);
  return it == series_.end() ? 0 : it->second.count;
}

double Histogram::Sum(const LabelValues& values) const {
  absl::MutexLock lock(&mu_);
  auto it = series_.find(values);
  return it == series_.end() ? 0 : it->second.sum;
}

void Histogram::Expose(std::string& out) const {
  Header(out, "histogram");
  absl::MutexLock lock(&mu_);
  for (const auto& [labels, s] : series_) {
    uint64_t cumulative = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) {
      cumulative += s.counts[i];
      absl::StrAppend(&out, name_, "_bucket",
                      Labels(labels, absl::StrCat("le=\"", Number(buckets_[i]), "\"")), " ",
                      cumulative, "\n");
    }
    absl::StrAppend(&out, name_, "_bucket", Labels(labels, "le=\"+Inf\""), " ", s.count, "\n");
    absl::StrAppend(&out, name_, "_sum", Labels(labels), " ", Number(s.sum), "\n");
    absl::StrAppend(&out, name_, "_count", Labels(labels), " ", s.count, "\n");
  }
}

Summary::Summary(std::string name, std::string help, std::vector<std::string> label_names,
                 std::chrono::seconds max_age)
    : Metric(std::move(name), std::move(help), std::move(label_names)), max_age_(max_age) {}

void Summary::Observe(const LabelValues& values, double value) {
  if (values.size() != label_names_.size()) return;
  absl::MutexLock lock(&mu_);
  Series& s = series_[values];
  s.window.emplace_back(std::chrono::steady_clock::now(), value);
  if (s.window.size() > kMaxSamples) s.window.pop_front();
  ++s.count;
  s.sum += value;
}

uint64_t Summary::Count(const LabelValues& values) const {
  absl::MutexLock lock(&mu_);
  auto it = series_.find(values);
  return it == series_.end() ? 0 : it->second.count;
}

void Summary::Expose(std::string& out) const {
  Header(out, "summary");
  const SteadyTime oldest = std::chrono::steady_clock::now() - max_age_;
  absl::MutexLock lock(&mu_);
  for (auto& [labels, s] : series_) {
    while (!s.window.empty() && s.window.front().first < oldest) s.window.pop_front();
    std::vector<double> sorted;
    sorted.reserve(s.window.size());
    for (const auto& [at, v] : s.window) sorted.push_back(v);
    std::sort(sorted.begin(), sorted.end());
    for (double q : {0.0, 0.5, 0.9, 0.99, 1.0}) {
      // Nearest rank; NaN for an empty window, as client_golang reports.
      double v = std::nan("");
      if (!sorted.empty()) {
        size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
        v = sorted[rank == 0 ? 0 : rank - 1];
      }
      absl::StrAppend(&out, name_, Labels(labels, absl::StrCat("quantile=\"", Number(q), "\"")),
                      " ", Number(v), "\n");
    }
    absl::StrAppend(&out, name_, "_sum", Labels(labels), " ", Number(s.sum), "\n");
    absl::StrAppend(&out, name_, "_count", Labels(labels), " ", s.count, "\n");
  }
}

std::vector<double> DurationBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7,
          0.8,   0.9,  1,     1.25, 1.5, 1.75, 2,   2.5,  3,   3.5,  4,   4.5,  5,   6,   7,
          8,     9,    10,    15,   20,  25,   30,  40,   50,  60,   120, 150,  300, 450, 600};
}

template <typename T, typename... Args>
T& Registry::Register(const std::string& name, Args&&... args) {
  absl::MutexLock lock(&mu_);
  auto& slot = metrics_[name];
  if (slot == nullptr) slot = std::make_unique<T>(name, std::forward<Args>(args)...);
  auto* m = dynamic_cast<T*>(slot.get());
  if (m == nullptr) {
    std::fprintf(stderr, "metric %s registered twice with different types\n", name.c_str());
    std::abort();
  }
  return *m;
}

Counter& Registry::NewCounter(const std::string& name, const std::string& help,
                              std::vector<std::string> label_names) {
  return Register<Counter>(name, help, std::move(label_names));
}

Gauge& Registry::NewGauge(const std::string& name, const std::string& help,
                          std::vector<std::string> label_names) {
  return Register<Gauge>(name, help, std::move(label_names));
}

Histogram& Registry::NewHistogram(const std::string& name, const std::string& help,
                                  std::vector<std::string> label_names,
                                  std::vector<double> buckets) {
  return Register<Histogram>(name, help, std::move(label_names), std::move(buckets));
}

Summary& Registry::NewSummary(const std::string& name, const std::string& help,
                              std::vector<std::string> label_names) {
  return Register<Summary>(name, help, std::move(label_names));
}

void Registry::OnScrape(std::function<void()> refresh) {
  absl::MutexLock lock(&refresh_mu_);
  refreshers_.push_back(std::move(refresh));
}

std::string Registry::Expose() const {
  {
    absl::MutexLock lock(&refresh_mu_);
    for (const auto& refresh : refreshers_) refresh();
  }
  std::string out;
  absl::MutexLock lock(&mu_);
  for (const auto& [name, m] : metrics_) m->Expose(out);
  return out;
}

}  // namespace dovetail::metrics
