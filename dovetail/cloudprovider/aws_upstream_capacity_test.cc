// Capacity and allocatable against upstream's own computation: test/testdata/
// upstream-capacity.json holds, for every (controller settings, EC2NodeClass, instance type) of
// bench/upstream/capacity/cases.json, what upstream's instancetype.NewInstanceType (v1.14.1)
// gives. Dovetail's formulas (aws_catalog.h) with the class read by NodeClassCapacity must give
// the same numbers, to the byte.
#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/cloudprovider/aws_node_class_capacity.h"
#include "dovetail/cloudprovider/instance_type.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dovetail::cloudprovider {
namespace {

nlohmann::json ReadTable() {
  std::ifstream in(std::string(DOVETAIL_TESTDATA_DIR) + "/upstream-capacity.json");
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

// A type as DescribeInstanceTypes gives it (api_catalog.h fills the same fields).
InstanceTypeRow Row(const nlohmann::json& t) {
  InstanceTypeRow r;
  r.name = t["name"];
  r.vcpu = t["vcpu"];
  r.memory_mib = t["memoryMiB"];
  r.arch = t["arch"] == "arm64" ? "arm64" : "amd64";
  r.enis = t["enis"];
  r.ipv4_per_eni = t["ipv4PerEni"];
  r.max_pods = r.enis * (r.ipv4_per_eni - 1) + 2;
  r.efa = t["efa"];
  r.instance_storage_gb = t.value("instanceStorageGB", 0);
  if (r.instance_storage_gb > 0 && t.value("nvme", "") != "unsupported") {
    r.local_nvme_gib = r.instance_storage_gb;
  }
  return r;
}

nlohmann::json Amounts(const ResourceList& list) {
  auto get = [&list](const std::string& name) -> int64_t {
    auto it = list.find(name);
    return it == list.end() ? 0 : it->second.Value();
  };
  auto cpu = list.find("cpu");
  return {{"cpuMilli", cpu == list.end() ? 0 : cpu->second.MilliValue()},
          {"memory", get("memory")},
          {"ephemeralStorage", get("ephemeral-storage")},
          {"pods", get("pods")},
          {"efa", get("vpc.amazonaws.com/efa")}};
}

TEST(UpstreamCapacityTest, EveryCaseMatchesUpstreamToTheByte) {
  const nlohmann::json table = ReadTable();
  const nlohmann::json& cases = table["cases"];
  std::map<std::string, InstanceTypeRow> rows;
  for (const auto& t : cases["types"]) rows[t["name"]] = Row(t);
  std::map<std::string, CapacityOptions> settings;
  for (const auto& s : cases["settings"]) {
    CapacityOptions o;
    o.vm_memory_overhead_percent = s["vmMemoryOverheadPercent"];
    o.reserved_enis = s["reservedENIs"];
    settings[s["name"]] = o;
  }
  std::map<std::string, apis::aws::v1::EC2NodeClassSpec> classes;
  for (const auto& c : cases["classes"]) {
    auto spec = apis::core::DecodeAs<apis::aws::v1::EC2NodeClassSpec>(c["spec"]);
    ASSERT_TRUE(spec.ok()) << c["name"] << ": " << spec.status();
    classes[c["name"]] = *spec;
  }
  int compared = 0;
  for (const auto& r : table["results"]) {
    const std::string label =
        absl::StrCat(r["settings"].get<std::string>(), " / ", r["class"].get<std::string>(), " / ",
                     r["type"].get<std::string>());
    absl::StatusOr<CapacityOptions> o =
        NodeClassCapacity(classes.at(r["class"]), settings.at(r["settings"]));
    ASSERT_TRUE(o.ok()) << label << ": " << o.status();
    const InstanceTypeRow& row = rows.at(r["type"]);
    const ResourceList capacity = ComputeCapacity(row, *o);
    const ResourceList allocatable =
        SubtractResources(capacity, ComputeOverhead(row, capacity, *o).Total());
    EXPECT_EQ(Amounts(capacity), r["capacity"]) << label << " capacity";
    // Where the overhead exceeds the machine (t3.micro on Windows), upstream's allocatable goes
    // negative and Dovetail's stops at 0: either way nothing fits.
    nlohmann::json want = r["allocatable"];
    for (auto& [name, value] : want.items()) value = std::max<int64_t>(0, value.get<int64_t>());
    EXPECT_EQ(Amounts(allocatable), want) << label << " allocatable";
    ++compared;
  }
  EXPECT_EQ(compared, 2 * 13 * 6);
}

}  // namespace
}  // namespace dovetail::cloudprovider
