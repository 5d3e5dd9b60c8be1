// Ec2Client: the typed EC2 Query calls (API version 2016-11-15) the AWS provider needs, each
// following NextToken to the last page. Responses become plain structs holding the fields
// Dovetail reads; everything else in the XML is ignored. Query() is the untyped escape hatch
// (tests seed moto with CreateVpc/CreateSubnet/... through it).
//
// Errors: those of AwsClient (errors.h), with the EC2 error code kept. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dovetail/providers/aws/aws_client.h"
#include "dovetail/providers/aws/query_protocol.h"

namespace dovetail::providers::aws {

inline constexpr std::string_view kEc2ApiVersion = "2016-11-15";

using Tags = std::map<std::string, std::string>;

struct Ec2InstanceTypeInfo {
  std::string instance_type;
  std::vector<std::string> supported_usage_classes;  // on-demand, spot, capacity-block
  std::vector<std::string> supported_virtualization_types;
  std::vector<std::string> architectures;  // x86_64, arm64, i386, x86_64_mac
  bool bare_metal = false;
  std::string hypervisor;    // nitro | xen | ""
  std::string manufacturer;  // processorInfo.manufacturer: Intel, AMD, AWS
  double sustained_clock_speed_ghz = 0;
  int64_t default_vcpus = 0;
  int64_t memory_mib = 0;
  int64_t instance_storage_gb = 0;  // 0: none
  std::string nvme_support;         // instanceStorageInfo.nvmeSupport
  std::string ebs_optimized_support;
  int64_t ebs_baseline_bandwidth_mbps = 0;
  int64_t ebs_maximum_bandwidth_mbps = 0;  // upstream's instance-ebs-bandwidth label
  int64_t maximum_network_interfaces = 0;
  int64_t default_network_card_interfaces = 0;  // of networkCards[defaultNetworkCardIndex]
  int64_t ipv4_addresses_per_interface = 0;
  bool encryption_in_transit_supported = false;
  int64_t maximum_efa_interfaces = 0;
  struct Gpu {
    std::string name, manufacturer;
    int64_t count = 0;
    int64_t memory_mib = 0;
  };
  std::vector<Gpu> gpus;
  struct Accelerator {
    std::string name, manufacturer;
    int64_t count = 0;
    int64_t cores = 0;  // neuron cores (all devices)
  };
  std::vector<Accelerator> neuron_devices;
  std::vector<Accelerator> inference_accelerators;
};

struct Ec2InstanceTypeOffering {
  std::string instance_type;
  std::string location_type;  // region | availability-zone | availability-zone-id
  std::string location;
  bool operator==(const Ec2InstanceTypeOffering&) const = default;
};

struct Ec2AvailabilityZone {
  std::string zone_name;
  std::string zone_id;
  std::string state;      // available, ...
  std::string zone_type;  // availability-zone | local-zone | wavelength-zone
  std::string region;
};

struct Ec2SpotPrice {
  std::string instance_type;
  std::string availability_zone;
  std::string product_description;
  double price = 0;
  absl::Time timestamp;
};

struct Ec2Subnet {
  std::string subnet_id;
  std::string vpc_id;
  std::string cidr_block;
  std::string availability_zone;
  std::string availability_zone_id;
  int64_t available_ip_address_count = 0;
  bool map_public_ip_on_launch = false;
  Tags tags;
};

struct Ec2SecurityGroup {
  std::string group_id;
  std::string group_name;
  std::string vpc_id;
  Tags tags;
};

struct Ec2Image {
  std::string image_id;
  std::string name;
  std::string architecture;
  std::string creation_date;     // ISO 8601 as EC2 gives it
  std::string deprecation_time;  // empty: not deprecated
  std::string state;
  std::string owner_id;
  Tags tags;
};

// DescribeInstanceStatus: one status check (InstanceStatusDetails / EbsStatusDetails).
struct Ec2StatusDetail {
  std::string name;    // reachability, ...
  std::string status;  // passed | failed | insufficient-data | initializing
  absl::Time impaired_since = absl::InfinitePast();  // InfinitePast: absent or unreadable
  bool operator==(const Ec2StatusDetail&) const = default;
};

// A summary (instanceStatus, systemStatus, attachedEbsStatus) and its checks.
struct Ec2StatusSummary {
  std::string status;  // ok | impaired | insufficient-data | not-applicable | initializing
  std::vector<Ec2StatusDetail> details;
  bool operator==(const Ec2StatusSummary&) const = default;
};

// A scheduled event (eventsSet): instance-reboot, system-reboot, system-maintenance,
// instance-retirement, instance-stop.
struct Ec2InstanceStatusEvent {
  std::string code;
  std::string description;
  absl::Time not_before = absl::InfinitePast();
  absl::Time not_after = absl::InfinitePast();
  bool operator==(const Ec2InstanceStatusEvent&) const = default;
};

struct Ec2InstanceStatus {
  std::string instance_id;
  std::string availability_zone;
  std::string instance_state;  // instanceState.name: running, ...
  Ec2StatusSummary instance_status;
  Ec2StatusSummary system_status;
  Ec2StatusSummary attached_ebs_status;
  std::vector<Ec2InstanceStatusEvent> events;
  bool operator==(const Ec2InstanceStatus&) const = default;
};

class Ec2Client {
 public:
  explicit Ec2Client(AwsClient& client) : client_(client) {}

  // One call, no pagination; the parsed response document.
  absl::StatusOr<std::unique_ptr<pugi::xml_document>> Query(std::string_view action,
                                                            const QueryParams& params);

  absl::StatusOr<std::vector<Ec2InstanceTypeInfo>> DescribeInstanceTypes(
      const std::vector<Filter>& filters = {}, const std::vector<std::string>& instance_types = {});
  absl::StatusOr<std::vector<Ec2InstanceTypeOffering>> DescribeInstanceTypeOfferings(
      std::string_view location_type = "availability-zone",
      const std::vector<Filter>& filters = {});
  absl::StatusOr<std::vector<Ec2AvailabilityZone>> DescribeAvailabilityZones(
      const std::vector<Filter>& filters = {});
  // Latest prices: StartTime = `start` (upstream passes "now" to get the current price per type
  // and zone); the result keeps the newest entry per (type, zone).
  absl::StatusOr<std::vector<Ec2SpotPrice>> DescribeSpotPriceHistory(
      absl::Time start,
      const std::vector<std::string>& product_descriptions = {"Linux/UNIX",
                                                              "Linux/UNIX (Amazon VPC)"},
      const std::vector<std::string>& instance_types = {});
  absl::StatusOr<std::vector<Ec2Subnet>> DescribeSubnets(const std::vector<Filter>& filters = {},
                                                         const std::vector<std::string>& ids = {});
  absl::StatusOr<std::vector<Ec2SecurityGroup>> DescribeSecurityGroups(
      const std::vector<Filter>& filters = {}, const std::vector<std::string>& ids = {},
      const std::vector<std::string>& names = {});
  absl::StatusOr<std::vector<Ec2Image>> DescribeImages(const std::vector<Filter>& filters = {},
                                                       const std::vector<std::string>& ids = {},
                                                       const std::vector<std::string>& owners = {});

  // Without IncludeAllInstances (running instances only) and without MaxResults, as upstream's
  // instance status provider calls it; every page.
  absl::StatusOr<std::vector<Ec2InstanceStatus>> DescribeInstanceStatus(
      const std::vector<Filter>& filters);

  // Page size requested where the API allows one (DescribeInstanceTypes caps it at 100).
  void set_page_size(int n) { page_size_ = n; }

 private:
  // Calls `action` until no nextToken is returned, handing each response root to `page`.
  absl::Status Paginate(std::string_view action, QueryParams params, int max_results,
                        const std::function<void(const pugi::xml_node&)>& page);

  AwsClient& client_;
  int page_size_ = 0;  // 0: the API's maximum
};

// Parses <tagSet><item><key/><value/></item>...</tagSet>.
Tags ParseTagSet(const pugi::xml_node& node);
// One <item> of DescribeInstanceTypes' instanceTypeSet; absent or unreadable numbers are 0.
Ec2InstanceTypeInfo ParseInstanceType(const pugi::xml_node& item);
// One <item> of DescribeInstanceStatus' instanceStatusSet; unreadable times are InfinitePast.
Ec2InstanceStatus ParseInstanceStatus(const pugi::xml_node& item);

}  // namespace dovetail::providers::aws
