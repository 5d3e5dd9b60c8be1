// What an EC2 node costs per hour besides its instance (the offering's price): the EBS volumes it
// is launched with and a public IPv4 address when it gets one. The solver and consolidation
// minimise the offering price plus this (cloudprovider/instance_type.h Offering::node_price), so
// that many small nodes are not mistaken for cheaper than fewer large ones.
//
//   EBS    each block device mapping with an EBS volume (the class's, else the AMI family's
//          defaults: apis/aws/v1/ec2nodeclass.h BlockDeviceMappingsFor), per month: its size in
//          GiB at its type's price per GB-month (EC2's default type, gp2, when unset); io1 and io2
//          also pay their provisioned IOPS, gp3 the IOPS above its included 3,000 and the
//          throughput above its included 125 MiB/s. A volume without a size (one made from a
//          snapshot, whose size is the snapshot's) is priced at 0: its size is not known here.
//          Monthly prices become hourly over 730 hours, as AWS bills them.
//   IPv4   USD 0.005 per hour per public IPv4 address, in every region (AWS, since 2024-02-01).
//
// Prices (USD, AWS's public EBS price list): the table in aws_node_price.cc holds the GB-month
// price of gp3 and gp2 per region it lists, and us-east-1's prices for everything else (the
// other volume types, IOPS and throughput, and regions it does not list, most of which cost more).
// Pure functions; thread-safe.
#pragma once

#include <string_view>
#include <vector>

#include "dovetail/apis/aws/v1/ec2nodeclass.h"

namespace dovetail::cloudprovider {

inline constexpr double kHoursPerMonth = 730;
inline constexpr double kPublicIpv4PricePerHour = 0.005;

// USD per month.
struct EbsPrices {
  double gp3_gb = 0;
  double gp3_iops = 0;        // per provisioned IOPS above 3,000
  double gp3_throughput = 0;  // per provisioned MiB/s above 125
  double gp2_gb = 0;
  double io1_gb = 0;
  double io1_iops = 0;
  double io2_gb = 0;
  double io2_iops = 0;  // the first 32,000 IOPS' rate, for every IOPS (an upper bound above it)
  double st1_gb = 0;
  double sc1_gb = 0;
  double standard_gb = 0;  // magnetic; its per-request charge is not counted
};

// The region's prices; us-east-1's for a region the table does not list.
const EbsPrices& EbsPricesIn(std::string_view region);

// One EBS volume per hour; 0 without a size.
double VolumePricePerHour(const apis::aws::v1::BlockDevice& ebs, const EbsPrices& prices);

// Every EBS volume of `mappings` per hour (mappings without `ebs` are instance store: free).
double VolumesPricePerHour(const std::vector<apis::aws::v1::BlockDeviceMapping>& mappings,
                           std::string_view region);

// What a node of the class costs per hour beyond its instance in a zone whose launches get a
// public IPv4 address (`public_ipv4`) or not.
double NodePricePerHour(const apis::aws::v1::EC2NodeClassSpec& spec, std::string_view region,
                        bool public_ipv4);

}  // namespace dovetail::cloudprovider
