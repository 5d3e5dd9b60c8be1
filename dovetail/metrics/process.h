// The process_* families client_golang's process collector registers in upstream Karpenter (the
// list is in test/testdata/upstream-metrics.json), with its names, types and sources:
//   process_cpu_seconds_total             user + system time (/proc/self/stat), seconds
//   process_virtual_memory_bytes          vsize (/proc/self/stat)
//   process_resident_memory_bytes         rss pages * page size (/proc/self/stat)
//   process_start_time_seconds            boot time (/proc/stat btime) + starttime ticks
//   process_open_fds                      entries of /proc/self/fd
//   process_max_fds                       soft "Max open files" (/proc/self/limits)
//   process_virtual_memory_max_bytes      soft "Max address space"; "unlimited" is 2^64-1, as
//                                         prometheus/procfs reads it
//   process_network_{receive,transmit}_bytes_total
//                                         IpExt InOctets / OutOctets of /proc/self/net/netstat
//                                         (the process's network namespace), as procfs reads it
// Values are read at each scrape (Registry::OnScrape). A source that cannot be read leaves its
// families' last values (client_golang reports a collection error instead).
#pragma once

#include <optional>
#include <string>

#include "dovetail/metrics/registry.h"

namespace dovetail::metrics {

// One reading of the values above; a field is empty when its source could not be read.
struct ProcessSample {
  std::optional<double> cpu_seconds;
  std::optional<double> virtual_memory_bytes;
  std::optional<double> resident_memory_bytes;
  std::optional<double> start_time_seconds;
  std::optional<double> open_fds;
  std::optional<double> max_fds;
  std::optional<double> virtual_memory_max_bytes;
  std::optional<double> network_receive_bytes;
  std::optional<double> network_transmit_bytes;
};

// Reads `proc_self` (a /proc/<pid> directory) and `proc_root`'s stat (for the boot time).
ProcessSample ReadProcessSample(const std::string& proc_self = "/proc/self",
                                const std::string& proc_root = "/proc");

// Registers the nine families and refreshes them from /proc at every scrape of `registry`.
// Call once per registry.
void ExportProcessMetrics(Registry& registry);

}  // namespace dovetail::metrics
