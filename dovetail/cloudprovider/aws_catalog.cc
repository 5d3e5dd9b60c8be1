#include "dovetail/cloudprovider/aws_catalog.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "dovetail/apis/v1/labels.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/input_limits.h"
#include "dovetail/common/status_macros.h"

namespace dovetail::cloudprovider {
namespace {

namespace labels = ::dovetail::apis::v1;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;
// Integer columns are bounded so that every later product (MiB in milli-bytes, pods x 11 MiB)
// stays far inside int64.
constexpr int64_t kMaxInteger = 1'000'000'000;
constexpr double kMaxPrice = 1'000'000.0;

constexpr std::string_view kResourceCpu = "cpu";
constexpr std::string_view kResourceMemory = "memory";
constexpr std::string_view kResourcePods = "pods";
constexpr std::string_view kResourceEphemeralStorage = "ephemeral-storage";
constexpr std::string_view kResourcePodEni = "vpc.amazonaws.com/pod-eni";
constexpr std::string_view kResourceEfa = "vpc.amazonaws.com/efa";
constexpr std::string_view kResourceNvidiaGpu = "nvidia.com/gpu";
constexpr std::string_view kResourceAmdGpu = "amd.com/gpu";
constexpr std::string_view kResourceNeuron = "aws.amazon.com/neuron";
constexpr std::string_view kResourceNeuronCore = "aws.amazon.com/neuroncore";

// ---- CSV reading
// ---------------------------------------------------------------------------------

// One data line, its fields reordered to the expected column order.
struct CsvRecord {
  int line = 0;
  std::vector<std::string_view> fields;
};

// Splits on `separator`; n separators give n + 1 pieces (absl::StrSplit's default).
std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    if (end == std::string_view::npos) {
      out.push_back(text.substr(start));
      return out;
    }
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

std::string JoinColumns(absl::Span<const std::string_view> columns) {
  return absl::StrJoin(columns, ",", StdStringViewFormatter());
}

std::string_view StripCr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// Splits `text` into records whose fields follow `columns`, whatever the header's order. The
// views point into `text`.
absl::StatusOr<std::vector<CsvRecord>> ReadCsv(std::string_view text, std::string_view file,
                                               absl::Span<const std::string_view> columns) {
  std::vector<std::string_view> lines = Split(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        AsAbsl(file), ":1: empty file; expected the header \"", JoinColumns(columns), "\""));
  }
  std::vector<std::string_view> header = Split(StripCr(lines[0]), ',');
  // position[c] = index in the file of expected column c.
  std::vector<int> position(columns.size(), -1);
  for (size_t i = 0; i < header.size(); ++i) {
    auto it = std::find(columns.begin(), columns.end(), header[i]);
    if (it == columns.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(AsAbsl(file), ":1: unknown column \"", AsAbsl(header[i]),
                       "\"; expected the header \"", JoinColumns(columns), "\""));
    }
    int& slot = position[static_cast<size_t>(it - columns.begin())];
    if (slot >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(AsAbsl(file), ":1: duplicate column \"", AsAbsl(header[i]), "\""));
    }
    slot = static_cast<int>(i);
  }
  for (size_t c = 0; c < columns.size(); ++c) {
    if (position[c] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(AsAbsl(file), ":1: missing column \"", AsAbsl(columns[c]), "\""));
    }
  }

  std::vector<CsvRecord> records;
  records.reserve(lines.size() - 1);
  std::vector<std::string_view> fields;
  for (size_t i = 1; i < lines.size(); ++i) {
    const int line = static_cast<int>(i + 1);
    fields = Split(StripCr(lines[i]), ',');
    if (fields.size() != header.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          AsAbsl(file), ":", line, ": expected ", header.size(), " columns, got ", fields.size()));
    }
    CsvRecord record;
    record.line = line;
    record.fields.reserve(columns.size());
    for (size_t c = 0; c < columns.size(); ++c) {
      record.fields.push_back(fields[static_cast<size_t>(position[c])]);
    }
    records.push_back(std::move(record));
  }
  return records;
}

// A Kubernetes label value: at most 63 characters, alphanumerics with '-', '_' or '.' inside.
bool IsLabelValue(std::string_view v) {
  if (v.size() > 63) return false;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (v.empty()) return true;
  if (!alnum(v.front()) || !alnum(v.back())) return false;
  return std::all_of(v.begin(), v.end(),
                     [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// Typed access to one record's fields; errors name file:line and the column.
class FieldReader {
 public:
  FieldReader(std::string_view file, absl::Span<const std::string_view> columns,
              const CsvRecord& record)
      : file_(file), columns_(columns), record_(record) {}

  absl::Status Error(size_t column, std::string_view expected) const {
    return absl::InvalidArgumentError(absl::StrCat(
        AsAbsl(file_), ":", record_.line, ": column \"", AsAbsl(columns_[column]), "\": expected ",
        AsAbsl(expected), ", got \"", AsAbsl(record_.fields[column]), "\""));
  }
  absl::Status LineError(std::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(AsAbsl(file_), ":", record_.line, ": ", AsAbsl(message)));
  }
  int line() const { return record_.line; }

  // Any text that is a valid label value (possibly empty).
  absl::Status Text(size_t column, std::string* out) const {
    std::string_view v = record_.fields[column];
    if (!IsLabelValue(v)) return Error(column, "a label value (alphanumerics, '-', '_', '.')");
    out->assign(v);
    return absl::OkStatus();
  }
  absl::Status NonEmptyText(size_t column, std::string* out) const {
    if (record_.fields[column].empty()) return Error(column, "a non-empty value");
    return Text(column, out);
  }
  absl::Status Integer(size_t column, int64_t* out) const {
    std::string_view v = record_.fields[column];
    int64_t value = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
    if (v.empty() || v.front() == '-' || ec != std::errc() || end != v.data() + v.size() ||
        value > kMaxInteger) {
      return Error(column, absl::StrCat("an integer in [0, ", kMaxInteger, "]"));
    }
    *out = value;
    return absl::OkStatus();
  }
  absl::Status OptionalInteger(size_t column, std::optional<int64_t>* out) const {
    if (record_.fields[column].empty()) {
      out->reset();
      return absl::OkStatus();
    }
    int64_t value = 0;
    RETURN_IF_ERROR(Integer(column, &value));
    *out = value;
    return absl::OkStatus();
  }
  absl::Status Boolean(size_t column, std::string_view yes, std::string_view no, bool* out) const {
    std::string_view v = record_.fields[column];
    if (v == yes) {
      *out = true;
    } else if (v == no) {
      *out = false;
    } else {
      return Error(column, absl::StrCat("\"", AsAbsl(yes), "\" or \"", AsAbsl(no), "\""));
    }
    return absl::OkStatus();
  }
  absl::Status Price(size_t column, double* out) const {
    std::string_view v = record_.fields[column];
    double value = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
    if (v.empty() || v.front() == '-' || ec != std::errc() || end != v.data() + v.size() ||
        !std::isfinite(value) || value > kMaxPrice) {
      return Error(column, "a non-negative decimal price");
    }
    *out = value;
    return absl::OkStatus();
  }

 private:
  std::string_view file_;
  absl::Span<const std::string_view> columns_;
  const CsvRecord& record_;
};

// Reads `text` (the CSV file `file_name`, with `columns`) into one Row per record, in file order;
// `parse(reader, row)` fills each row from its record's fields. Errors: those of ReadCsv and of
// `parse`.
template <typename Row, typename Parse>
absl::StatusOr<std::vector<Row>> ParseRows(std::string_view text, std::string_view file_name,
                                           absl::Span<const std::string_view> columns,
                                           Parse parse) {
  ASSIGN_OR_RETURN(std::vector<CsvRecord> records, ReadCsv(text, file_name, columns));
  std::vector<Row> rows;
  rows.reserve(records.size());
  for (const CsvRecord& record : records) {
    FieldReader f(file_name, columns, record);
    Row row;
    RETURN_IF_ERROR(parse(f, row));
    rows.push_back(std::move(row));
  }
  return rows;
}

// A CSV file of `columns`: the header line, then one line of fields(row) per row.
template <typename Row, typename Fields>
std::string FormatCsv(absl::Span<const std::string_view> columns, const std::vector<Row>& rows,
                      Fields fields) {
  std::string out = absl::StrCat(JoinColumns(columns), "\n");
  for (const Row& r : rows) absl::StrAppend(&out, absl::StrJoin(fields(r), ","), "\n");
  return out;
}

// The line each key of a file whose rows must be unique was first read on.
template <typename Key>
class FirstLines {
 public:
  // OK when `key` is new (it is recorded at the reader's line); otherwise the reader's line error
  // "<duplicate()> (first on line N)".
  template <typename Describe>
  absl::Status Add(const FieldReader& f, Key key, Describe duplicate) {
    auto [it, inserted] = lines_.emplace(std::move(key), f.line());
    if (inserted) return absl::OkStatus();
    return f.LineError(absl::StrCat(duplicate(), " (first on line ", it->second, ")"));
  }

 private:
  absl::flat_hash_map<Key, int> lines_;
};

// ---- instance-types.csv ------------------------------------------------------------------------

enum Column : size_t {
  kName,
  kCategory,
  kFamily,
  kGeneration,
  kSize,
  kArch,
  kOs,
  kCpuManufacturer,
  kCpuSustainedClockSpeedMhz,
  kCapabilityFlex,
  kVcpu,
  kMemoryMib,
  kGpuName,
  kGpuManufacturer,
  kGpuCount,
  kGpuMemoryMib,
  kAcceleratorName,
  kAcceleratorManufacturer,
  kAcceleratorCount,
  kLocalNvmeGib,
  kNetworkBandwidthMbps,
  kEbsBandwidthMbps,
  kHypervisor,
  kEncryptionInTransitSupported,
  kBareMetal,
  kMaxPods,
  kAllocatableCpuMillicores,
  kAllocatableMemoryMib,
  kAllocatableEphemeralStorageGib,
  kPodEni,
  kEfa,
  kNvidiaGpu,
  kAmdGpu,
  kNeuron,
  kNeuronCore,
  kColumnCount,
};

constexpr std::string_view kInstanceTypeColumns[kColumnCount] = {
    "name",
    "category",
    "family",
    "generation",
    "size",
    "arch",
    "os",
    "cpu_manufacturer",
    "cpu_sustained_clock_speed_mhz",
    "capability_flex",
    "vcpu",
    "memory_mib",
    "gpu_name",
    "gpu_manufacturer",
    "gpu_count",
    "gpu_memory_mib",
    "accelerator_name",
    "accelerator_manufacturer",
    "accelerator_count",
    "local_nvme_gib",
    "network_bandwidth_mbps",
    "ebs_bandwidth_mbps",
    "hypervisor",
    "encryption_in_transit_supported",
    "bare_metal",
    "max_pods",
    "allocatable_cpu_millicores",
    "allocatable_memory_mib",
    "allocatable_ephemeral_storage_gib",
    "pod_eni",
    "efa",
    "nvidia_gpu",
    "amd_gpu",
    "neuron",
    "neuroncore",
};

absl::StatusOr<InstanceTypeRow> ParseInstanceTypeRecord(const FieldReader& f) {
  InstanceTypeRow row;
  RETURN_IF_ERROR(f.NonEmptyText(kName, &row.name));
  RETURN_IF_ERROR(f.Text(kCategory, &row.category));
  RETURN_IF_ERROR(f.Text(kFamily, &row.family));
  RETURN_IF_ERROR(f.Integer(kGeneration, &row.generation));
  RETURN_IF_ERROR(f.Text(kSize, &row.size));
  RETURN_IF_ERROR(f.NonEmptyText(kArch, &row.arch));
  if (row.arch != labels::kArchitectureAmd64 && row.arch != labels::kArchitectureArm64) {
    return f.Error(kArch, "\"amd64\" or \"arm64\"");
  }
  RETURN_IF_ERROR(f.NonEmptyText(kOs, &row.os));
  RETURN_IF_ERROR(f.Text(kCpuManufacturer, &row.cpu_manufacturer));
  RETURN_IF_ERROR(f.Integer(kCpuSustainedClockSpeedMhz, &row.cpu_sustained_clock_speed_mhz));
  RETURN_IF_ERROR(f.Boolean(kCapabilityFlex, "true", "false", &row.capability_flex));
  RETURN_IF_ERROR(f.Integer(kVcpu, &row.vcpu));
  if (row.vcpu == 0) return f.Error(kVcpu, "a positive integer");
  RETURN_IF_ERROR(f.Integer(kMemoryMib, &row.memory_mib));
  if (row.memory_mib == 0) return f.Error(kMemoryMib, "a positive integer");
  RETURN_IF_ERROR(f.Text(kGpuName, &row.gpu_name));
  RETURN_IF_ERROR(f.Text(kGpuManufacturer, &row.gpu_manufacturer));
  RETURN_IF_ERROR(f.Integer(kGpuCount, &row.gpu_count));
  RETURN_IF_ERROR(f.Integer(kGpuMemoryMib, &row.gpu_memory_mib));
  RETURN_IF_ERROR(f.Text(kAcceleratorName, &row.accelerator_name));
  RETURN_IF_ERROR(f.Text(kAcceleratorManufacturer, &row.accelerator_manufacturer));
  RETURN_IF_ERROR(f.Integer(kAcceleratorCount, &row.accelerator_count));
  RETURN_IF_ERROR(f.Integer(kLocalNvmeGib, &row.local_nvme_gib));
  RETURN_IF_ERROR(f.OptionalInteger(kNetworkBandwidthMbps, &row.network_bandwidth_mbps));
  RETURN_IF_ERROR(f.OptionalInteger(kEbsBandwidthMbps, &row.ebs_bandwidth_mbps));
  RETURN_IF_ERROR(f.Text(kHypervisor, &row.hypervisor));
  RETURN_IF_ERROR(f.Boolean(kEncryptionInTransitSupported, "true", "false",
                            &row.encryption_in_transit_supported));
  RETURN_IF_ERROR(f.Boolean(kBareMetal, "yes", "no", &row.bare_metal));
  RETURN_IF_ERROR(f.Integer(kMaxPods, &row.max_pods));
  RETURN_IF_ERROR(f.Integer(kAllocatableCpuMillicores, &row.allocatable_cpu_millicores));
  RETURN_IF_ERROR(f.Integer(kAllocatableMemoryMib, &row.allocatable_memory_mib));
  RETURN_IF_ERROR(
      f.Integer(kAllocatableEphemeralStorageGib, &row.allocatable_ephemeral_storage_gib));
  RETURN_IF_ERROR(f.Integer(kPodEni, &row.pod_eni));
  RETURN_IF_ERROR(f.Integer(kEfa, &row.efa));
  RETURN_IF_ERROR(f.Integer(kNvidiaGpu, &row.nvidia_gpu));
  RETURN_IF_ERROR(f.Integer(kAmdGpu, &row.amd_gpu));
  RETURN_IF_ERROR(f.Integer(kNeuron, &row.neuron));
  RETURN_IF_ERROR(f.Integer(kNeuronCore, &row.neuroncore));
  return row;
}

std::string OptionalToString(const std::optional<int64_t>& v) {
  return v.has_value() ? absl::StrCat(*v) : std::string();
}

std::string FormatPrice(double price) { return absl::StrFormat("%.6f", price); }

// ---- price files -------------------------------------------------------------------------------

constexpr std::string_view kOnDemandColumns[] = {"region", "instance_type", "usd_per_hour"};
constexpr std::string_view kSpotColumns[] = {"region", "zone", "instance_type", "usd_per_hour"};
constexpr std::string_view kOfferingColumns[] = {"region", "zone", "zone_id", "instance_type"};

// ---- files
// ---------------------------------------------------------------------------------------

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  return ReadFileAtMost(path, kMaxCatalogFileBytes, "catalog file");
}

absl::Status WriteFile(const std::string& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out.is_open()) return absl::PermissionDeniedError(absl::StrCat("cannot create ", path));
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (out.fail()) return absl::DataLossError(absl::StrCat("error writing ", path));
  return absl::OkStatus();
}

std::string JoinPath(const std::string& directory, std::string_view file) {
  return (std::filesystem::path(directory) / std::filesystem::path(file)).string();
}

// ---- building ----------------------------------------------------------------------------------

using PriceByType = absl::flat_hash_map<std::string, double>;

// Accumulates `In` / `DoesNotExist` requirements, the only shapes a catalog produces.
class RequirementsBuilder {
 public:
  void In(std::string_view key, std::string_view value) {
    requirements_.Add(scheduling::Requirement::In(std::string(key), {value}));
  }
  void In(std::string_view key, const std::vector<std::string>& values) {
    requirements_.Add(scheduling::Requirement::In(std::string(key), absl::MakeConstSpan(values)));
  }
  void DoesNotExist(std::string_view key) {
    requirements_.Add(scheduling::Requirement::DoesNotExist(std::string(key)));
  }
  scheduling::Requirements Build() && { return std::move(requirements_); }

 private:
  scheduling::Requirements requirements_;
};

std::string Bool(bool v) { return v ? "true" : "false"; }

// `In [value]`, or DoesNotExist when the value is empty.
void InOrAbsent(RequirementsBuilder& b, std::string_view key, std::string_view value) {
  if (value.empty()) {
    b.DoesNotExist(key);
  } else {
    b.In(key, value);
  }
}
// `In [n]`, or DoesNotExist when n is zero.
void InOrAbsent(RequirementsBuilder& b, std::string_view key, int64_t n) {
  if (n == 0) {
    b.DoesNotExist(key);
  } else {
    b.In(key, absl::StrCat(n));
  }
}

scheduling::Requirements TypeRequirements(const InstanceTypeRow& row, const CatalogOptions& options,
                                          const std::vector<std::string>& zones,
                                          const std::vector<std::string>& zone_ids) {
  RequirementsBuilder b;
  b.In(labels::kLabelInstanceType, row.name);
  b.In(labels::kLabelArch, row.arch);
  b.In(labels::kLabelOS, row.os);
  b.DoesNotExist(labels::kLabelWindowsBuild);
  b.In(labels::kLabelTopologyRegion, options.region);
  b.In(labels::kLabelTopologyZone, zones);
  if (zone_ids.empty()) {
    b.DoesNotExist(labels::kLabelTopologyZoneId);
  } else {
    b.In(labels::kLabelTopologyZoneId, zone_ids);
  }
  b.In(labels::kCapacityTypeLabelKey,
       std::vector<std::string>{std::string(labels::kCapacityTypeOnDemand),
                                std::string(labels::kCapacityTypeSpot)});
  InOrAbsent(b, labels::kLabelInstanceCategory, row.category);
  InOrAbsent(b, labels::kLabelInstanceFamily, row.family);
  InOrAbsent(b, labels::kLabelInstanceGeneration, row.generation);
  InOrAbsent(b, labels::kLabelInstanceSize, row.size);
  InOrAbsent(b, labels::kLabelInstanceCpu, row.vcpu);
  InOrAbsent(b, labels::kLabelInstanceCpuManufacturer, row.cpu_manufacturer);
  InOrAbsent(b, labels::kLabelInstanceCpuSustainedClockSpeedMhz, row.cpu_sustained_clock_speed_mhz);
  InOrAbsent(b, labels::kLabelInstanceMemory, row.memory_mib);
  InOrAbsent(b, labels::kLabelInstanceHypervisor, row.hypervisor);
  b.In(labels::kLabelInstanceEncryptionInTransitSupported,
       Bool(row.encryption_in_transit_supported));
  b.In(labels::kLabelInstanceCapabilityFlex, Bool(row.capability_flex));
  InOrAbsent(b, labels::kLabelInstanceLocalNvme, row.local_nvme_gib);
  InOrAbsent(b, labels::kLabelInstanceNetworkBandwidth,
             OptionalToString(row.network_bandwidth_mbps));
  InOrAbsent(b, labels::kLabelInstanceEbsBandwidth, OptionalToString(row.ebs_bandwidth_mbps));
  InOrAbsent(b, labels::kLabelInstanceGpuName, row.gpu_name);
  InOrAbsent(b, labels::kLabelInstanceGpuManufacturer, row.gpu_manufacturer);
  InOrAbsent(b, labels::kLabelInstanceGpuCount, row.gpu_count);
  InOrAbsent(b, labels::kLabelInstanceGpuMemory, row.gpu_memory_mib);
  InOrAbsent(b, labels::kLabelInstanceAcceleratorName, row.accelerator_name);
  InOrAbsent(b, labels::kLabelInstanceAcceleratorManufacturer, row.accelerator_manufacturer);
  InOrAbsent(b, labels::kLabelInstanceAcceleratorCount, row.accelerator_count);
  b.In(labels::kLabelInstanceTenancy, std::vector<std::string>(labels::kInstanceTenancies.begin(),
                                                               labels::kInstanceTenancies.end()));
  // Nothing in the catalog files speaks to these.
  b.DoesNotExist(labels::kLabelNitroSandbox);
  b.DoesNotExist(labels::kLabelCapacityReservationId);
  b.DoesNotExist(labels::kLabelCapacityReservationType);
  b.DoesNotExist(labels::kLabelCapacityReservationInterruptible);
  b.DoesNotExist(labels::kLabelPlacementGroupId);
  b.DoesNotExist(labels::kLabelPlacementGroupPartition);
  if (options.extra_labels) {
    for (const auto& [key, value] : options.extra_labels(row)) b.In(key, value);
  }
  return std::move(b).Build();
}

}  // namespace

// ---- public: parse / format --------------------------------------------------------------------

absl::StatusOr<std::vector<InstanceTypeRow>> ParseInstanceTypesCsv(std::string_view text,
                                                                   std::string_view file_name) {
  FirstLines<std::string> first_line;
  return ParseRows<InstanceTypeRow>(
      text, file_name, kInstanceTypeColumns,
      [&](const FieldReader& f, InstanceTypeRow& row) -> absl::Status {
        ASSIGN_OR_RETURN(row, ParseInstanceTypeRecord(f));
        return first_line.Add(f, row.name, [&] {
          return absl::StrCat("duplicate instance type \"", row.name, "\"");
        });
      });
}

absl::StatusOr<std::vector<OnDemandPriceRow>> ParseOnDemandPricesCsv(std::string_view text,
                                                                     std::string_view file_name) {
  FirstLines<std::pair<std::string, std::string>> first_line;
  return ParseRows<OnDemandPriceRow>(
      text, file_name, kOnDemandColumns,
      [&](const FieldReader& f, OnDemandPriceRow& row) -> absl::Status {
        RETURN_IF_ERROR(f.NonEmptyText(0, &row.region));
        RETURN_IF_ERROR(f.NonEmptyText(1, &row.instance_type));
        RETURN_IF_ERROR(f.Price(2, &row.usd_per_hour));
        return first_line.Add(f, std::pair(row.region, row.instance_type), [&] {
          return absl::StrCat("duplicate price for \"", row.instance_type, "\" in \"", row.region,
                              "\"");
        });
      });
}

absl::StatusOr<std::vector<SpotPriceRow>> ParseSpotPricesCsv(std::string_view text,
                                                             std::string_view file_name) {
  FirstLines<std::pair<std::string, std::string>> first_line;
  return ParseRows<SpotPriceRow>(
      text, file_name, kSpotColumns, [&](const FieldReader& f, SpotPriceRow& row) -> absl::Status {
        RETURN_IF_ERROR(f.NonEmptyText(0, &row.region));
        RETURN_IF_ERROR(f.NonEmptyText(1, &row.zone));
        RETURN_IF_ERROR(f.NonEmptyText(2, &row.instance_type));
        RETURN_IF_ERROR(f.Price(3, &row.usd_per_hour));
        return first_line.Add(f, std::pair(row.zone, row.instance_type), [&] {
          return absl::StrCat("duplicate spot price for \"", row.instance_type, "\" in \"",
                              row.zone, "\"");
        });
      });
}

absl::StatusOr<std::vector<OfferingRow>> ParseOfferingsCsv(std::string_view text,
                                                           std::string_view file_name) {
  FirstLines<std::tuple<std::string, std::string, std::string>> first_line;
  // (region, zone) -> (zone id, line)
  std::map<std::pair<std::string, std::string>, std::pair<std::string, int>> zone_ids;
  return ParseRows<OfferingRow>(
      text, file_name, kOfferingColumns,
      [&](const FieldReader& f, OfferingRow& row) -> absl::Status {
        RETURN_IF_ERROR(f.NonEmptyText(0, &row.region));
        RETURN_IF_ERROR(f.NonEmptyText(1, &row.zone));
        RETURN_IF_ERROR(f.Text(2, &row.zone_id));
        RETURN_IF_ERROR(f.NonEmptyText(3, &row.instance_type));
        RETURN_IF_ERROR(first_line.Add(f, std::tuple(row.region, row.zone, row.instance_type), [&] {
          return absl::StrCat("duplicate offering of \"", row.instance_type, "\" in \"", row.zone,
                              "\"");
        }));
        auto [zit, zone_inserted] =
            zone_ids.emplace(std::pair(row.region, row.zone), std::pair(row.zone_id, f.line()));
        if (!zone_inserted && zit->second.first != row.zone_id) {
          return f.LineError(absl::StrCat("zone \"", row.zone, "\" has zone id \"", row.zone_id,
                                          "\" but \"", zit->second.first, "\" on line ",
                                          zit->second.second));
        }
        return absl::OkStatus();
      });
}

std::string OfferingsRegion(const CatalogFiles& files) {
  if (!files.offerings.has_value()) return "";
  std::set<std::string> regions;
  for (const OfferingRow& o : *files.offerings) regions.insert(o.region);
  return regions.size() == 1 ? *regions.begin() : "";
}

std::string FormatInstanceTypesCsv(const std::vector<InstanceTypeRow>& rows) {
  return FormatCsv(kInstanceTypeColumns, rows, [](const InstanceTypeRow& r) {
    return std::array<std::string, kColumnCount>{
        r.name,
        r.category,
        r.family,
        absl::StrCat(r.generation),
        r.size,
        r.arch,
        r.os,
        r.cpu_manufacturer,
        absl::StrCat(r.cpu_sustained_clock_speed_mhz),
        Bool(r.capability_flex),
        absl::StrCat(r.vcpu),
        absl::StrCat(r.memory_mib),
        r.gpu_name,
        r.gpu_manufacturer,
        absl::StrCat(r.gpu_count),
        absl::StrCat(r.gpu_memory_mib),
        r.accelerator_name,
        r.accelerator_manufacturer,
        absl::StrCat(r.accelerator_count),
        absl::StrCat(r.local_nvme_gib),
        OptionalToString(r.network_bandwidth_mbps),
        OptionalToString(r.ebs_bandwidth_mbps),
        r.hypervisor,
        Bool(r.encryption_in_transit_supported),
        r.bare_metal ? "yes" : "no",
        absl::StrCat(r.max_pods),
        absl::StrCat(r.allocatable_cpu_millicores),
        absl::StrCat(r.allocatable_memory_mib),
        absl::StrCat(r.allocatable_ephemeral_storage_gib),
        absl::StrCat(r.pod_eni),
        absl::StrCat(r.efa),
        absl::StrCat(r.nvidia_gpu),
        absl::StrCat(r.amd_gpu),
        absl::StrCat(r.neuron),
        absl::StrCat(r.neuroncore),
    };
  });
}

std::string FormatOnDemandPricesCsv(const std::vector<OnDemandPriceRow>& rows) {
  return FormatCsv(kOnDemandColumns, rows, [](const OnDemandPriceRow& r) {
    return std::array<std::string, std::size(kOnDemandColumns)>{r.region, r.instance_type,
                                                                FormatPrice(r.usd_per_hour)};
  });
}

std::string FormatSpotPricesCsv(const std::vector<SpotPriceRow>& rows) {
  return FormatCsv(kSpotColumns, rows, [](const SpotPriceRow& r) {
    return std::array<std::string, std::size(kSpotColumns)>{r.region, r.zone, r.instance_type,
                                                            FormatPrice(r.usd_per_hour)};
  });
}

std::string FormatOfferingsCsv(const std::vector<OfferingRow>& rows) {
  return FormatCsv(kOfferingColumns, rows, [](const OfferingRow& r) {
    return std::array<std::string, std::size(kOfferingColumns)>{r.region, r.zone, r.zone_id,
                                                                r.instance_type};
  });
}

// ---- public: files -----------------------------------------------------------------------------

absl::StatusOr<CatalogFiles> ReadCatalogFiles(const std::string& instance_types_path,
                                              const std::string& on_demand_prices_path,
                                              const std::string& spot_prices_path) {
  CatalogFiles files;
  ASSIGN_OR_RETURN(std::string types_text, ReadFile(instance_types_path));
  ASSIGN_OR_RETURN(files.instance_types, ParseInstanceTypesCsv(types_text, instance_types_path));
  ASSIGN_OR_RETURN(std::string prices_text, ReadFile(on_demand_prices_path));
  ASSIGN_OR_RETURN(files.on_demand_prices,
                   ParseOnDemandPricesCsv(prices_text, on_demand_prices_path));
  if (!spot_prices_path.empty()) {
    ASSIGN_OR_RETURN(std::string spot_text, ReadFile(spot_prices_path));
    ASSIGN_OR_RETURN(files.spot_prices, ParseSpotPricesCsv(spot_text, spot_prices_path));
  }
  return files;
}

absl::StatusOr<CatalogFiles> ReadCatalogDirectory(const std::string& directory) {
  std::string spot_path = JoinPath(directory, kSpotPricesFile);
  std::error_code ec;
  if (!std::filesystem::exists(spot_path, ec)) spot_path.clear();
  ASSIGN_OR_RETURN(CatalogFiles files,
                   ReadCatalogFiles(JoinPath(directory, kInstanceTypesFile),
                                    JoinPath(directory, kOnDemandPricesFile), spot_path));
  const std::string offerings_path = JoinPath(directory, kOfferingsFile);
  if (std::filesystem::exists(offerings_path, ec)) {
    ASSIGN_OR_RETURN(std::string text, ReadFile(offerings_path));
    ASSIGN_OR_RETURN(files.offerings, ParseOfferingsCsv(text, offerings_path));
  }
  return files;
}

absl::Status WriteCatalogDirectory(const std::string& directory, const CatalogFiles& files) {
  RETURN_IF_ERROR(WriteFile(JoinPath(directory, kInstanceTypesFile),
                            FormatInstanceTypesCsv(files.instance_types)));
  RETURN_IF_ERROR(WriteFile(JoinPath(directory, kOnDemandPricesFile),
                            FormatOnDemandPricesCsv(files.on_demand_prices)));
  if (files.spot_prices.has_value()) {
    RETURN_IF_ERROR(
        WriteFile(JoinPath(directory, kSpotPricesFile), FormatSpotPricesCsv(*files.spot_prices)));
  }
  if (files.offerings.has_value()) {
    RETURN_IF_ERROR(
        WriteFile(JoinPath(directory, kOfferingsFile), FormatOfferingsCsv(*files.offerings)));
  }
  return absl::OkStatus();
}

// ---- public: formulas --------------------------------------------------------------------------

int64_t MemoryCapacityMib(int64_t memory_mib, std::string_view arch,
                          double vm_memory_overhead_percent) {
  int64_t mib = memory_mib;
  if (arch == labels::kArchitectureArm64) mib -= 64;  // Graviton's CMA reservation
  if (mib <= 0) return 0;
  // Upstream's order of operations on the byte count, in doubles: bytes x p / 1024 / 1024.
  const double overhead =
      std::ceil(static_cast<double>(mib * kMiB) * vm_memory_overhead_percent / 1024 / 1024);
  return std::max<int64_t>(0, mib - static_cast<int64_t>(overhead));
}

int64_t PodsCapacity(const InstanceTypeRow& row, int64_t reserved_enis) {
  if (reserved_enis <= 0 || row.enis <= 0 || row.ipv4_per_eni <= 0) return row.max_pods;
  const int64_t usable = std::max<int64_t>(0, row.enis - reserved_enis);
  if (usable == 0) return 0;
  return usable * (row.ipv4_per_eni - 1) + 2;
}

int64_t KubeReservedCpuMillicores(int64_t vcpu) {
  // Per core in thousandths of a millicore: 6%, 1%, 0.5%, 0.5%, then 0.25% of 1000m.
  int64_t micro = 0;
  if (vcpu >= 1) micro += 60'000;
  if (vcpu >= 2) micro += 10'000;
  if (vcpu >= 3) micro += 5'000 * (std::min<int64_t>(vcpu, 4) - 2);
  if (vcpu > 4) micro += 2'500 * (vcpu - 4);
  return micro / 1000;
}

absl::StatusOr<int64_t> EvictionSignalBytes(int64_t capacity, std::string_view signal) {
  if (!signal.empty() && signal.back() == '%') {
    double percent = 0;
    const std::string number(signal.substr(0, signal.size() - 1));
    if (!absl::SimpleAtod(number, &percent) || percent < 0 || percent > 100) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", std::string(signal), "\" is not a percentage"));
    }
    if (percent == 100) percent = 0;  // the kubelet reads 100% as no threshold
    return static_cast<int64_t>(std::ceil(static_cast<double>(capacity) / 100 * percent));
  }
  ASSIGN_OR_RETURN(const Quantity q, Quantity::Parse(signal));
  return q.Value();
}

namespace {

int64_t PodCount(const InstanceTypeRow& row, const CapacityOptions& options) {
  int64_t pods = 110;
  if (options.max_pods.has_value()) {
    pods = *options.max_pods;
  } else if (options.eni_limited_pod_density) {
    pods = PodsCapacity(row, options.reserved_enis + options.efa_only_enis);
  }
  if (options.pods_per_core_enabled && options.pods_per_core.value_or(0) > 0) {
    pods = std::min(*options.pods_per_core * row.vcpu, pods);
  }
  return pods;
}

// A byte count as the node reports it: binary units when whole GiB.
Quantity Bytes(int64_t bytes) {
  return Quantity::FromUnits(
      bytes, bytes % kGiB == 0 ? QuantityFormat::kBinarySI : QuantityFormat::kDecimalSI);
}

}  // namespace

ResourceList ComputeCapacity(const InstanceTypeRow& row, const CapacityOptions& options) {
  ResourceList capacity;
  capacity.emplace(kResourceCpu, Quantity::FromUnits(row.vcpu));
  capacity.emplace(
      kResourceMemory,
      Quantity::FromUnits(
          MemoryCapacityMib(row.memory_mib, row.arch, options.vm_memory_overhead_percent) * kMiB,
          QuantityFormat::kBinarySI));
  capacity.emplace(kResourcePods, Quantity::FromUnits(PodCount(row, options)));
  const int64_t store_gb =
      row.instance_storage_gb > 0 ? row.instance_storage_gb : row.local_nvme_gib;
  if (options.instance_store_raid0 && store_gb > 0) {
    capacity.emplace(kResourceEphemeralStorage, Quantity::FromUnits(store_gb * 1'000'000'000));
  } else {
    capacity.emplace(kResourceEphemeralStorage, Bytes(options.ephemeral_storage_bytes));
  }
  const std::pair<std::string_view, int64_t> extended[] = {
      {kResourcePodEni, row.pod_eni},
      {kResourceEfa, options.efa_interfaces.value_or(row.efa)},
      {kResourceNvidiaGpu, row.nvidia_gpu},
      {kResourceAmdGpu, row.amd_gpu},
      {kResourceNeuron, row.neuron},
      {kResourceNeuronCore, row.neuroncore},
  };
  for (const auto& [name, count] : extended) {
    if (count > 0) capacity.emplace(name, Quantity::FromUnits(count));
  }
  return capacity;
}

InstanceTypeOverhead ComputeOverhead(const InstanceTypeRow& row, const ResourceList& capacity,
                                     const CapacityOptions& options) {
  auto amount = [&capacity](std::string_view name) -> int64_t {
    auto it = capacity.find(name);
    return it == capacity.end() ? 0 : it->second.Value();
  };
  InstanceTypeOverhead overhead;
  overhead.kube_reserved.emplace(kResourceCpu,
                                 Quantity::FromMilli(KubeReservedCpuMillicores(row.vcpu)));
  const int64_t pods = options.eni_limited_memory_overhead
                           ? PodsCapacity(row, options.efa_only_enis)
                           : amount(kResourcePods);
  overhead.kube_reserved.emplace(
      kResourceMemory, Quantity::FromUnits((11 * pods + 255) * kMiB, QuantityFormat::kBinarySI));
  overhead.kube_reserved.emplace(kResourceEphemeralStorage,
                                 Quantity::FromUnits(kGiB, QuantityFormat::kBinarySI));
  for (const auto& [name, q] : options.kube_reserved) overhead.kube_reserved[name] = q;
  overhead.system_reserved = options.system_reserved;
  const int64_t storage = amount(kResourceEphemeralStorage);
  int64_t memory_threshold = 100 * kMiB;
  // Upstream: ceil(bytes / 100 x 10) in doubles.
  int64_t storage_threshold =
      static_cast<int64_t>(std::ceil(static_cast<double>(storage) / 100 * 10));
  // Bad signals were refused when the options were made (aws_node_class_capacity.h).
  if (!options.eviction_hard_memory.empty()) {
    if (auto v = EvictionSignalBytes(amount(kResourceMemory), options.eviction_hard_memory);
        v.ok()) {
      memory_threshold = *v;
    }
  }
  if (!options.eviction_hard_nodefs.empty()) {
    if (auto v = EvictionSignalBytes(storage, options.eviction_hard_nodefs); v.ok()) {
      storage_threshold = *v;
    }
  }
  overhead.eviction_threshold.emplace(
      kResourceMemory, Quantity::FromUnits(memory_threshold, memory_threshold % kMiB == 0
                                                                 ? QuantityFormat::kBinarySI
                                                                 : QuantityFormat::kDecimalSI));
  overhead.eviction_threshold.emplace(
      kResourceEphemeralStorage, Quantity::FromUnits(storage_threshold, QuantityFormat::kBinarySI));
  return overhead;
}

void FillAllocatableColumns(InstanceTypeRow& row) {
  ResourceList capacity = ComputeCapacity(row);
  ResourceList allocatable = SubtractResources(capacity, ComputeOverhead(row, capacity).Total());
  row.allocatable_cpu_millicores = allocatable[std::string(kResourceCpu)].MilliValue();
  row.allocatable_memory_mib = allocatable[std::string(kResourceMemory)].Value() / kMiB;
  row.allocatable_ephemeral_storage_gib =
      allocatable[std::string(kResourceEphemeralStorage)].Value() / kGiB;
}

double SpotPriceFactor(std::string_view instance_type, std::string_view zone) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64-bit offset basis
  auto mix = [&h](std::string_view bytes) {
    for (char c : bytes) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ull;  // FNV-1a 64-bit prime
    }
  };
  mix(instance_type);
  mix("|");
  mix(zone);
  return 0.3 + 0.4 * static_cast<double>(h % 10001) / 10000.0;
}

double ModelSpotPrice(std::string_view instance_type, std::string_view zone, double on_demand) {
  return std::round(on_demand * SpotPriceFactor(instance_type, zone) * 1e6) / 1e6;
}

// ---- public: building --------------------------------------------------------------------------

absl::StatusOr<Catalog> BuildCatalog(const CatalogFiles& files, const CatalogOptions& options) {
  if (options.region.empty()) return absl::InvalidArgumentError("catalog: empty region");
  // offerings.csv: the zones each type is offered in (when it has rows for the region).
  absl::flat_hash_map<std::string, std::set<std::string>> offered_zones;
  std::set<std::string> file_zones;
  std::map<std::string, std::string> file_zone_ids;
  if (files.offerings.has_value()) {
    for (const OfferingRow& o : *files.offerings) {
      if (o.region != options.region) continue;
      offered_zones[o.instance_type].insert(o.zone);
      file_zones.insert(o.zone);
      if (!o.zone_id.empty()) file_zone_ids[o.zone] = o.zone_id;
    }
  }
  const bool per_type_zones = !file_zones.empty();
  const std::map<std::string, std::string>& zone_id_source =
      options.zone_ids.empty() ? file_zone_ids : options.zone_ids;
  std::vector<std::string> zones = options.zones;
  if (zones.empty()) zones.assign(file_zones.begin(), file_zones.end());
  if (zones.empty()) {
    for (std::string_view suffix : {"a", "b", "c"})
      zones.push_back(absl::StrCat(options.region, AsAbsl(suffix)));
  }
  if (std::set<std::string>(zones.begin(), zones.end()).size() != zones.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("catalog: duplicate zone in [", absl::StrJoin(zones, ", "), "]"));
  }
  // Zone ids only when every zone has one.
  std::vector<std::string> zone_ids;
  for (const std::string& zone : zones) {
    auto it = zone_id_source.find(zone);
    if (it == zone_id_source.end() || it->second.empty()) {
      zone_ids.clear();
      break;
    }
    zone_ids.push_back(it->second);
  }

  // On-demand prices of the region, else of the fallback region.
  PriceByType on_demand;
  std::vector<std::string_view> price_regions = {options.region};
  price_regions.insert(price_regions.end(), options.fallback_price_regions.begin(),
                       options.fallback_price_regions.end());
  for (std::string_view region : price_regions) {
    for (const OnDemandPriceRow& p : files.on_demand_prices) {
      if (p.region == region) on_demand.emplace(p.instance_type, p.usd_per_hour);
    }
    if (!on_demand.empty()) break;
  }
  // Spot prices by zone when a spot file was given.
  absl::flat_hash_map<std::string, PriceByType> spot_by_zone;
  if (files.spot_prices.has_value()) {
    for (const SpotPriceRow& p : *files.spot_prices) {
      if (p.region == options.region) spot_by_zone[p.zone].emplace(p.instance_type, p.usd_per_hour);
    }
  }

  std::vector<InstanceTypePtr> types;
  types.reserve(files.instance_types.size());
  for (const InstanceTypeRow& row : files.instance_types) {
    if (row.vcpu <= 0 || row.memory_mib <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("catalog: instance type \"", row.name, "\" has no vCPUs or no memory"));
    }
    std::vector<std::string> type_zones = zones;
    std::vector<std::string> type_zone_ids = zone_ids;
    if (per_type_zones) {
      auto offered = offered_zones.find(row.name);
      if (offered == offered_zones.end()) continue;
      type_zones.clear();
      type_zone_ids.clear();
      for (size_t z = 0; z < zones.size(); ++z) {
        if (!offered->second.contains(zones[z])) continue;
        type_zones.push_back(zones[z]);
        if (!zone_ids.empty()) type_zone_ids.push_back(zone_ids[z]);
      }
      if (type_zones.empty()) continue;
    }
    auto od = on_demand.find(row.name);
    const bool has_od = od != on_demand.end();
    std::vector<Offering> offerings;
    offerings.reserve(type_zones.size() * 2);
    for (size_t z = 0; z < type_zones.size(); ++z) {
      const std::string& zone = type_zones[z];
      std::string_view zone_id;
      if (!type_zone_ids.empty()) zone_id = type_zone_ids[z];
      offerings.push_back(Offering::Make(labels::kCapacityTypeOnDemand, zone, zone_id,
                                         has_od ? od->second : 0.0, has_od));
      double spot_price = 0.0;
      bool has_spot = false;
      if (files.spot_prices.has_value()) {
        if (auto zit = spot_by_zone.find(zone); zit != spot_by_zone.end()) {
          if (auto sit = zit->second.find(row.name); sit != zit->second.end()) {
            spot_price = sit->second;
            has_spot = true;
          }
        }
      } else if (has_od) {
        spot_price = ModelSpotPrice(row.name, zone, od->second);
        has_spot = true;
      }
      offerings.push_back(
          Offering::Make(labels::kCapacityTypeSpot, zone, zone_id, spot_price, has_spot));
    }
    ResourceList capacity = ComputeCapacity(row, options.capacity);
    InstanceTypeOverhead overhead = ComputeOverhead(row, capacity, options.capacity);
    types.push_back(std::make_shared<const InstanceType>(
        row.name, TypeRequirements(row, options, type_zones, type_zone_ids),
        Offerings(std::move(offerings)), std::move(capacity), std::move(overhead)));
  }
  return Catalog::Create(std::move(types));
}

absl::StatusOr<Catalog> LoadCatalogDirectory(const std::string& directory,
                                             const CatalogOptions& options) {
  ASSIGN_OR_RETURN(CatalogFiles files, ReadCatalogDirectory(directory));
  return BuildCatalog(files, options);
}

}  // namespace dovetail::cloudprovider
