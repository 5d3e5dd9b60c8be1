#include "dovetail/metrics/process.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace dovetail::metrics {
namespace {

std::optional<std::string> ReadProcFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::optional<double> ParseProcNumber(absl::string_view s) {
  uint64_t v = 0;
  if (!absl::SimpleAtoi(s, &v)) return std::nullopt;
  return static_cast<double>(v);
}

// A limit's soft value; "unlimited" is the largest uint64, as prometheus/procfs reads it.
std::optional<double> ParseProcLimit(absl::string_view s) {
  if (s == "unlimited") return static_cast<double>(UINT64_MAX);
  return ParseProcNumber(s);
}

std::optional<double> BootTime(const std::string& proc_root) {
  std::optional<std::string> stat = ReadProcFile(proc_root + "/stat");
  if (!stat.has_value()) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*stat, '\n')) {
    if (absl::ConsumePrefix(&line, "btime ")) return ParseProcNumber(line);
  }
  return std::nullopt;
}

void ReadStat(const std::string& proc_self, const std::string& proc_root, ProcessSample& out) {
  std::optional<std::string> stat = ReadProcFile(proc_self + "/stat");
  if (!stat.has_value()) return;
  // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  const size_t close = stat->rfind(')');
  if (close == std::string::npos) return;
  std::vector<absl::string_view> f =
      absl::StrSplit(absl::string_view(*stat).substr(close + 1), ' ', absl::SkipEmpty());
  // f[0] is field 3 (state); proc(5) numbers utime 14, stime 15, starttime 22, vsize 23, rss 24.
  if (f.size() < 22) return;
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  std::optional<double> utime = ParseProcNumber(f[11]);
  std::optional<double> stime = ParseProcNumber(f[12]);
  if (utime.has_value() && stime.has_value()) out.cpu_seconds = (*utime + *stime) / hz;
  out.virtual_memory_bytes = ParseProcNumber(f[20]);
  if (std::optional<double> rss = ParseProcNumber(f[21])) {
    out.resident_memory_bytes = *rss * static_cast<double>(sysconf(_SC_PAGESIZE));
  }
  std::optional<double> start_ticks = ParseProcNumber(f[19]);
  std::optional<double> boot = BootTime(proc_root);
  if (start_ticks.has_value() && boot.has_value()) {
    out.start_time_seconds = *boot + *start_ticks / hz;
  }
}

std::optional<double> CountFds(const std::string& proc_self) {
  const std::string dir = proc_self + "/fd";
  // Linux 6.2+ reports the number of open descriptors as the directory's size.
  struct stat st {};
  if (stat(dir.c_str(), &st) == 0 && st.st_size > 0) return static_cast<double>(st.st_size);
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return std::nullopt;
  double n = 0;
  while (dirent* e = readdir(d)) {
    if (absl::string_view(e->d_name) != "." && absl::string_view(e->d_name) != "..") ++n;
  }
  closedir(d);
  return n;
}

void ReadLimits(const std::string& proc_self, ProcessSample& out) {
  std::optional<std::string> limits = ReadProcFile(proc_self + "/limits");
  if (!limits.has_value()) return;
  for (absl::string_view line : absl::StrSplit(*limits, '\n')) {
    std::optional<double>* field = nullptr;
    if (absl::ConsumePrefix(&line, "Max open files")) {
      field = &out.max_fds;
    } else if (absl::ConsumePrefix(&line, "Max address space")) {
      field = &out.virtual_memory_max_bytes;
    } else {
      continue;
    }
    std::vector<absl::string_view> cols = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (!cols.empty()) *field = ParseProcLimit(cols[0]);  // the soft limit
  }
}

// /proc/<pid>/net/netstat holds pairs of lines: "IpExt: <names...>" then "IpExt: <values...>".
void ReadNetstat(const std::string& proc_self, ProcessSample& out) {
  std::optional<std::string> netstat = ReadProcFile(proc_self + "/net/netstat");
  if (!netstat.has_value()) return;
  std::vector<absl::string_view> names;
  for (absl::string_view line : absl::StrSplit(*netstat, '\n')) {
    if (!absl::ConsumePrefix(&line, "IpExt:")) continue;
    std::vector<absl::string_view> cols = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (names.empty()) {
      names = std::move(cols);
      continue;
    }
    for (size_t i = 0; i < names.size() && i < cols.size(); ++i) {
      if (names[i] == "InOctets") out.network_receive_bytes = ParseProcNumber(cols[i]);
      if (names[i] == "OutOctets") out.network_transmit_bytes = ParseProcNumber(cols[i]);
    }
    return;
  }
}

// Counters read as absolute values: advance the series to the reading (never backwards; the
// first reading creates the series, even at 0).
void AdvanceTo(Counter& c, const std::optional<double>& v) {
  if (v.has_value()) c.Inc({}, std::max(0.0, *v - c.Value()));
}

void SetIf(Gauge& g, const std::optional<double>& v) {
  if (v.has_value()) g.Set({}, *v);
}

}  // namespace

ProcessSample ReadProcessSample(const std::string& proc_self, const std::string& proc_root) {
  ProcessSample out;
  ReadStat(proc_self, proc_root, out);
  out.open_fds = CountFds(proc_self);
  ReadLimits(proc_self, out);
  ReadNetstat(proc_self, out);
  return out;
}

void ExportProcessMetrics(Registry& registry) {
  Counter& cpu =
      registry.NewCounter("process_cpu_seconds_total", "Total user and system CPU time, seconds.");
  Gauge& max_fds = registry.NewGauge("process_max_fds", "Maximum number of open file descriptors.");
  Counter& rx = registry.NewCounter("process_network_receive_bytes_total",
                                    "Bytes received by the process over the network.");
  Counter& tx = registry.NewCounter("process_network_transmit_bytes_total",
                                    "Bytes sent by the process over the network.");
  Gauge& open_fds = registry.NewGauge("process_open_fds", "Number of open file descriptors.");
  Gauge& rss = registry.NewGauge("process_resident_memory_bytes", "Resident memory, bytes.");
  Gauge& start = registry.NewGauge("process_start_time_seconds",
                                   "Start time of the process, seconds since the Unix epoch.");
  Gauge& vsize = registry.NewGauge("process_virtual_memory_bytes", "Virtual memory size, bytes.");
  Gauge& vsize_max = registry.NewGauge("process_virtual_memory_max_bytes",
                                       "Maximum virtual memory available, bytes.");
  registry.OnScrape([&cpu, &max_fds, &rx, &tx, &open_fds, &rss, &start, &vsize, &vsize_max] {
    const ProcessSample s = ReadProcessSample();
    AdvanceTo(cpu, s.cpu_seconds);
    AdvanceTo(rx, s.network_receive_bytes);
    AdvanceTo(tx, s.network_transmit_bytes);
    SetIf(max_fds, s.max_fds);
    SetIf(open_fds, s.open_fds);
    SetIf(rss, s.resident_memory_bytes);
    SetIf(start, s.start_time_seconds);
    SetIf(vsize, s.virtual_memory_bytes);
    SetIf(vsize_max, s.virtual_memory_max_bytes);
  });
}

}  // namespace dovetail::metrics
