#include "dovetail/providers/aws/ec2_client.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"

namespace dovetail::providers::aws {

Ec2InstanceTypeInfo ParseInstanceType(const pugi::xml_node& n) {
  Ec2InstanceTypeInfo t;
  t.instance_type = Text(n, "instanceType");
  t.supported_usage_classes = Items(n, "supportedUsageClasses");
  t.supported_virtualization_types = Items(n, "supportedVirtualizationTypes");
  t.bare_metal = Bool(n, "bareMetal");
  t.hypervisor = Text(n, "hypervisor");
  pugi::xml_node cpu = n.child("processorInfo");
  t.architectures = Items(cpu, "supportedArchitectures");
  t.manufacturer = Text(cpu, "manufacturer");
  t.sustained_clock_speed_ghz = Double(cpu, "sustainedClockSpeedInGhz");
  t.default_vcpus = Int(n.child("vCpuInfo"), "defaultVCpus");
  t.memory_mib = Int(n.child("memoryInfo"), "sizeInMiB");
  pugi::xml_node storage = n.child("instanceStorageInfo");
  t.instance_storage_gb = Int(storage, "totalSizeInGB");
  t.nvme_support = Text(storage, "nvmeSupport");
  pugi::xml_node ebs = n.child("ebsInfo");
  t.ebs_optimized_support = Text(ebs, "ebsOptimizedSupport");
  t.ebs_baseline_bandwidth_mbps = Int(ebs.child("ebsOptimizedInfo"), "baselineBandwidthInMbps");
  t.ebs_maximum_bandwidth_mbps = Int(ebs.child("ebsOptimizedInfo"), "maximumBandwidthInMbps");
  pugi::xml_node net = n.child("networkInfo");
  t.maximum_network_interfaces = Int(net, "maximumNetworkInterfaces");
  t.ipv4_addresses_per_interface = Int(net, "ipv4AddressesPerInterface");
  t.encryption_in_transit_supported = Bool(net, "encryptionInTransitSupported");
  t.maximum_efa_interfaces = Int(net.child("efaInfo"), "maximumEfaInterfaces");
  const int64_t default_card = Int(net, "defaultNetworkCardIndex");
  t.default_network_card_interfaces = t.maximum_network_interfaces;
  for (pugi::xml_node card : net.child("networkCards").children("item")) {
    if (Int(card, "networkCardIndex") == default_card) {
      t.default_network_card_interfaces = Int(card, "maximumNetworkInterfaces");
    }
  }
  for (pugi::xml_node g : n.child("gpuInfo").child("gpus").children("item")) {
    t.gpus.push_back({.name = Text(g, "name"),
                      .manufacturer = Text(g, "manufacturer"),
                      .count = Int(g, "count"),
                      .memory_mib = Int(g.child("memoryInfo"), "sizeInMiB")});
  }
  for (pugi::xml_node d : n.child("neuronInfo").child("neuronDevices").children("item")) {
    t.neuron_devices.push_back({.name = Text(d, "name"),
                                .manufacturer = "AWS",
                                .count = Int(d, "count"),
                                .cores = Int(d, "count") * Int(d.child("coreInfo"), "count")});
  }
  for (pugi::xml_node a :
       n.child("inferenceAcceleratorInfo").child("accelerators").children("item")) {
    t.inference_accelerators.push_back({.name = Text(a, "name"),
                                        .manufacturer = Text(a, "manufacturer"),
                                        .count = Int(a, "count")});
  }
  return t;
}

namespace {

// RFC 3339 with fractional seconds, as EC2 writes times; InfinitePast when absent or unreadable.
absl::Time TimeOrPast(const pugi::xml_node& node, const char* child) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, Text(node, child), &t, &err))
    return absl::InfinitePast();
  return t;
}

Ec2StatusSummary ParseStatusSummary(const pugi::xml_node& n) {
  Ec2StatusSummary s{.status = Text(n, "status")};
  for (pugi::xml_node d : n.child("details").children("item")) {
    s.details.push_back({.name = Text(d, "name"),
                         .status = Text(d, "status"),
                         .impaired_since = TimeOrPast(d, "impairedSince")});
  }
  return s;
}

}  // namespace

Ec2InstanceStatus ParseInstanceStatus(const pugi::xml_node& n) {
  Ec2InstanceStatus s{.instance_id = Text(n, "instanceId"),
                      .availability_zone = Text(n, "availabilityZone"),
                      .instance_state = Text(n.child("instanceState"), "name"),
                      .instance_status = ParseStatusSummary(n.child("instanceStatus")),
                      .system_status = ParseStatusSummary(n.child("systemStatus")),
                      .attached_ebs_status = ParseStatusSummary(n.child("attachedEbsStatus"))};
  for (pugi::xml_node e : n.child("eventsSet").children("item")) {
    s.events.push_back({.code = Text(e, "code"),
                        .description = Text(e, "description"),
                        .not_before = TimeOrPast(e, "notBefore"),
                        .not_after = TimeOrPast(e, "notAfter")});
  }
  return s;
}

Tags ParseTagSet(const pugi::xml_node& node) {
  Tags tags;
  for (pugi::xml_node item : node.child("tagSet").children("item")) {
    tags[Text(item, "key")] = Text(item, "value");
  }
  return tags;
}

absl::StatusOr<std::unique_ptr<pugi::xml_document>> Ec2Client::Query(std::string_view action,
                                                                     const QueryParams& params) {
  return CallQuery(client_, action, kEc2ApiVersion, params);
}

absl::Status Ec2Client::Paginate(std::string_view action, QueryParams params, int max_results,
                                 const std::function<void(const pugi::xml_node&)>& page) {
  if (max_results > 0) {
    int n = page_size_ > 0 ? std::min(page_size_, max_results) : max_results;
    params.emplace_back("MaxResults", absl::StrCat(n));
  }
  std::string token;
  for (int pages = 0;; ++pages) {
    if (pages > 10'000) return absl::InternalError(Cat("ec2:", action, ": too many pages"));
    QueryParams p = params;
    if (!token.empty()) p.emplace_back("NextToken", token);
    ASSIGN_OR_RETURN(auto doc, Query(action, p));
    pugi::xml_node root = doc->document_element();
    page(root);
    std::string next = Text(root, "nextToken");
    if (next.empty() || next == token) return absl::OkStatus();
    token = next;
  }
}

absl::StatusOr<std::vector<Ec2InstanceTypeInfo>> Ec2Client::DescribeInstanceTypes(
    const std::vector<Filter>& filters, const std::vector<std::string>& instance_types) {
  QueryParams params;
  AddFilters(params, filters);
  AddList(params, "InstanceType", instance_types);
  std::vector<Ec2InstanceTypeInfo> out;
  RETURN_IF_ERROR(Paginate("DescribeInstanceTypes", params, 100, [&](const pugi::xml_node& root) {
    for (pugi::xml_node item : root.child("instanceTypeSet").children("item")) {
      out.push_back(ParseInstanceType(item));
    }
  }));
  return out;
}

absl::StatusOr<std::vector<Ec2InstanceTypeOffering>> Ec2Client::DescribeInstanceTypeOfferings(
    std::string_view location_type, const std::vector<Filter>& filters) {
  QueryParams params{{"LocationType", std::string(location_type)}};
  AddFilters(params, filters);
  std::vector<Ec2InstanceTypeOffering> out;
  RETURN_IF_ERROR(
      Paginate("DescribeInstanceTypeOfferings", params, 1000, [&](const pugi::xml_node& root) {
        for (pugi::xml_node item : root.child("instanceTypeOfferingSet").children("item")) {
          out.push_back(
              {Text(item, "instanceType"), Text(item, "locationType"), Text(item, "location")});
        }
      }));
  return out;
}

absl::StatusOr<std::vector<Ec2InstanceStatus>> Ec2Client::DescribeInstanceStatus(
    const std::vector<Filter>& filters) {
  QueryParams params;
  AddFilters(params, filters);
  std::vector<Ec2InstanceStatus> out;
  RETURN_IF_ERROR(Paginate("DescribeInstanceStatus", params, 0, [&](const pugi::xml_node& root) {
    for (pugi::xml_node item : root.child("instanceStatusSet").children("item")) {
      out.push_back(ParseInstanceStatus(item));
    }
  }));
  return out;
}

absl::StatusOr<std::vector<Ec2AvailabilityZone>> Ec2Client::DescribeAvailabilityZones(
    const std::vector<Filter>& filters) {
  QueryParams params;
  AddFilters(params, filters);
  ASSIGN_OR_RETURN(auto doc, Query("DescribeAvailabilityZones", params));
  std::vector<Ec2AvailabilityZone> out;
  for (pugi::xml_node item :
       doc->document_element().child("availabilityZoneInfo").children("item")) {
    out.push_back({.zone_name = Text(item, "zoneName"),
                   .zone_id = Text(item, "zoneId"),
                   .state = Text(item, "zoneState"),
                   .zone_type = Text(item, "zoneType"),
                   .region = Text(item, "regionName")});
  }
  return out;
}

absl::StatusOr<std::vector<Ec2SpotPrice>> Ec2Client::DescribeSpotPriceHistory(
    absl::Time start, const std::vector<std::string>& product_descriptions,
    const std::vector<std::string>& instance_types) {
  QueryParams params{
      {"StartTime", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", start, absl::UTCTimeZone())}};
  AddList(params, "ProductDescription", product_descriptions);
  AddList(params, "InstanceType", instance_types);
  std::map<std::pair<std::string, std::string>, Ec2SpotPrice> newest;
  RETURN_IF_ERROR(
      Paginate("DescribeSpotPriceHistory", params, 1000, [&](const pugi::xml_node& root) {
        for (pugi::xml_node item : root.child("spotPriceHistorySet").children("item")) {
          Ec2SpotPrice p{.instance_type = Text(item, "instanceType"),
                         .availability_zone = Text(item, "availabilityZone"),
                         .product_description = Text(item, "productDescription"),
                         .price = Double(item, "spotPrice")};
          std::string err;
          if (!absl::ParseTime(absl::RFC3339_full, Text(item, "timestamp"), &p.timestamp, &err)) {
            p.timestamp = absl::InfinitePast();
          }
          auto key = std::make_pair(p.instance_type, p.availability_zone);
          auto it = newest.find(key);
          if (it == newest.end() || it->second.timestamp < p.timestamp) newest[key] = p;
        }
      }));
  std::vector<Ec2SpotPrice> out;
  out.reserve(newest.size());
  for (auto& [k, v] : newest) out.push_back(std::move(v));
  return out;
}

absl::StatusOr<std::vector<Ec2Subnet>> Ec2Client::DescribeSubnets(
    const std::vector<Filter>& filters, const std::vector<std::string>& ids) {
  QueryParams params;
  AddFilters(params, filters);
  AddList(params, "SubnetId", ids);
  std::vector<Ec2Subnet> out;
  RETURN_IF_ERROR(
      Paginate("DescribeSubnets", params, ids.empty() ? 1000 : 0, [&](const pugi::xml_node& root) {
        for (pugi::xml_node item : root.child("subnetSet").children("item")) {
          out.push_back({.subnet_id = Text(item, "subnetId"),
                         .vpc_id = Text(item, "vpcId"),
                         .cidr_block = Text(item, "cidrBlock"),
                         .availability_zone = Text(item, "availabilityZone"),
                         .availability_zone_id = Text(item, "availabilityZoneId"),
                         .available_ip_address_count = Int(item, "availableIpAddressCount"),
                         .map_public_ip_on_launch = Bool(item, "mapPublicIpOnLaunch"),
                         .tags = ParseTagSet(item)});
        }
      }));
  return out;
}

absl::StatusOr<std::vector<Ec2SecurityGroup>> Ec2Client::DescribeSecurityGroups(
    const std::vector<Filter>& filters, const std::vector<std::string>& ids,
    const std::vector<std::string>& names) {
  QueryParams params;
  AddFilters(params, filters);
  AddList(params, "GroupId", ids);
  AddList(params, "GroupName", names);
  std::vector<Ec2SecurityGroup> out;
  RETURN_IF_ERROR(
      Paginate("DescribeSecurityGroups", params, ids.empty() && names.empty() ? 1000 : 0,
               [&](const pugi::xml_node& root) {
                 for (pugi::xml_node item : root.child("securityGroupInfo").children("item")) {
                   out.push_back({.group_id = Text(item, "groupId"),
                                  .group_name = Text(item, "groupName"),
                                  .vpc_id = Text(item, "vpcId"),
                                  .tags = ParseTagSet(item)});
                 }
               }));
  return out;
}

absl::StatusOr<std::vector<Ec2Image>> Ec2Client::DescribeImages(
    const std::vector<Filter>& filters, const std::vector<std::string>& ids,
    const std::vector<std::string>& owners) {
  QueryParams params;
  AddFilters(params, filters);
  AddList(params, "ImageId", ids);
  AddList(params, "Owner", owners);
  std::vector<Ec2Image> out;
  RETURN_IF_ERROR(Paginate("DescribeImages", params, 0, [&](const pugi::xml_node& root) {
    for (pugi::xml_node item : root.child("imagesSet").children("item")) {
      out.push_back({.image_id = Text(item, "imageId"),
                     .name = Text(item, "name"),
                     .architecture = Text(item, "architecture"),
                     .creation_date = Text(item, "creationDate"),
                     .deprecation_time = Text(item, "deprecationTime"),
                     .state = Text(item, "imageState"),
                     .owner_id = Text(item, "imageOwnerId"),
                     .tags = ParseTagSet(item)});
    }
  }));
  return out;
}

}  // namespace dovetail::providers::aws
