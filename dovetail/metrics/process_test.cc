#include "dovetail/metrics/process.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::metrics {
namespace {

using ::testing::HasSubstr;

TEST(ProcessMetricsTest, ReadsThisProcess) {
  const ProcessSample s = ReadProcessSample();
  ASSERT_TRUE(s.resident_memory_bytes.has_value());
  EXPECT_GT(*s.resident_memory_bytes, 1 << 20);
  ASSERT_TRUE(s.virtual_memory_bytes.has_value());
  EXPECT_GE(*s.virtual_memory_bytes, *s.resident_memory_bytes);
  ASSERT_TRUE(s.cpu_seconds.has_value());
  EXPECT_GE(*s.cpu_seconds, 0);
  ASSERT_TRUE(s.start_time_seconds.has_value());
  // Started within the last hour (a test binary), not in the future (clock ticks are 10ms).
  const double now = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  EXPECT_LE(*s.start_time_seconds, now + 1);
  EXPECT_GT(*s.start_time_seconds, now - 3600);
  ASSERT_TRUE(s.max_fds.has_value());
  EXPECT_EQ(*s.max_fds, static_cast<double>(sysconf(_SC_OPEN_MAX)));
  ASSERT_TRUE(s.virtual_memory_max_bytes.has_value());
  EXPECT_GT(*s.virtual_memory_max_bytes, 0);
  EXPECT_TRUE(s.network_receive_bytes.has_value());
  EXPECT_TRUE(s.network_transmit_bytes.has_value());
}

TEST(ProcessMetricsTest, OpenFdsFollowOpenAndClose) {
  const double before = ReadProcessSample().open_fds.value();
  std::vector<int> fds;
  for (int i = 0; i < 5; ++i) fds.push_back(open("/proc/self/stat", O_RDONLY));
  EXPECT_EQ(ReadProcessSample().open_fds.value(), before + 5);
  for (int fd : fds) close(fd);
  EXPECT_EQ(ReadProcessSample().open_fds.value(), before);
}

TEST(ProcessMetricsTest, CpuTimeAdvancesWithWork) {
  const double before = ReadProcessSample().cpu_seconds.value();
  volatile uint64_t x = 0;
  const absl::Time until = absl::Now() + absl::Milliseconds(300);
  while (absl::Now() < until) x = x + 1;
  EXPECT_GT(ReadProcessSample().cpu_seconds.value(), before);
}

TEST(ProcessMetricsTest, UnreadableSourcesAreEmpty) {
  const ProcessSample s = ReadProcessSample("/nonexistent", "/nonexistent");
  EXPECT_FALSE(s.cpu_seconds.has_value());
  EXPECT_FALSE(s.open_fds.has_value());
  EXPECT_FALSE(s.max_fds.has_value());
  EXPECT_FALSE(s.network_receive_bytes.has_value());
}

TEST(ProcessMetricsTest, ExportsTheNineFamiliesAtScrape) {
  Registry r;
  ExportProcessMetrics(r);
  const std::string text = r.Expose();
  for (const char* counter : {"process_cpu_seconds_total", "process_network_receive_bytes_total",
                              "process_network_transmit_bytes_total"}) {
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + counter + " counter\n"));
    EXPECT_THAT(text, HasSubstr(std::string("\n") + counter + " "));
  }
  for (const char* gauge : {"process_max_fds", "process_open_fds", "process_resident_memory_bytes",
                            "process_start_time_seconds", "process_virtual_memory_bytes",
                            "process_virtual_memory_max_bytes"}) {
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + gauge + " gauge\n"));
    EXPECT_THAT(text, HasSubstr(std::string("\n") + gauge + " "));
  }
  const double fds = r.NewGauge("process_open_fds", "").Value();
  const int fd = open("/proc/self/stat", O_RDONLY);
  r.Expose();
  EXPECT_EQ(r.NewGauge("process_open_fds", "").Value(), fds + 1);
  close(fd);
  EXPECT_GT(r.NewGauge("process_resident_memory_bytes", "").Value(), 0);
  // The address-space limit reads as procfs reads it: "unlimited" is 2^64-1.
  if (ReadProcessSample().virtual_memory_max_bytes == static_cast<double>(UINT64_MAX)) {
    EXPECT_EQ(r.NewGauge("process_virtual_memory_max_bytes", "").Value(), 18446744073709551615.0);
  }
}

}  // namespace
}  // namespace dovetail::metrics
