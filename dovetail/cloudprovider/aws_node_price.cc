#include "dovetail/cloudprovider/aws_node_price.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace dovetail::cloudprovider {
namespace {

namespace awsv1 = apis::aws::v1;

// us-east-1 (N. Virginia), also the price of the types and rates the regional rows leave out.
constexpr EbsPrices kUsEast1{.gp3_gb = 0.08,
                             .gp3_iops = 0.005,
                             .gp3_throughput = 0.04,
                             .gp2_gb = 0.10,
                             .io1_gb = 0.125,
                             .io1_iops = 0.065,
                             .io2_gb = 0.125,
                             .io2_iops = 0.065,
                             .st1_gb = 0.045,
                             .sc1_gb = 0.015,
                             .standard_gb = 0.05};

// us-east-1's prices with the region's gp3 and gp2 per GB-month.
constexpr EbsPrices Regional(double gp3_gb, double gp2_gb) {
  EbsPrices p = kUsEast1;
  p.gp3_gb = gp3_gb;
  p.gp2_gb = gp2_gb;
  return p;
}

struct Region {
  std::string_view name;
  EbsPrices prices;
};

constexpr Region kRegions[] = {
    {"us-east-1", kUsEast1},
    {"us-east-2", Regional(0.08, 0.10)},
    {"us-west-2", Regional(0.08, 0.10)},
    {"us-west-1", Regional(0.096, 0.12)},
    {"eu-west-1", Regional(0.088, 0.11)},
    {"eu-central-1", Regional(0.0952, 0.119)},
    {"ap-northeast-1", Regional(0.096, 0.12)},
    {"ap-southeast-2", Regional(0.096, 0.12)},
};

constexpr int64_t kGp3IncludedIops = 3000;
constexpr int64_t kGp3IncludedThroughput = 125;  // MiB/s

// Whole GiB, rounded up (EC2 sizes volumes in GiB).
double GiB(const Quantity& size) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  const int64_t bytes = size.Value();
  const int64_t gib = bytes / kGiB + (bytes % kGiB > 0 ? 1 : 0);
  return static_cast<double>(gib);
}

}  // namespace

const EbsPrices& EbsPricesIn(std::string_view region) {
  for (const Region& r : kRegions) {
    if (r.name == region) return r.prices;
  }
  return kUsEast1;
}

double VolumePricePerHour(const awsv1::BlockDevice& ebs, const EbsPrices& prices) {
  if (!ebs.volume_size.has_value()) return 0;
  const double gib = GiB(*ebs.volume_size);
  const std::string type = ebs.volume_type.value_or("gp2");
  const auto iops = static_cast<double>(ebs.iops.value_or(0));
  double month = 0;
  if (type == "gp3") {
    month = gib * prices.gp3_gb +
            static_cast<double>(std::max<int64_t>(0, ebs.iops.value_or(0) - kGp3IncludedIops)) *
                prices.gp3_iops +
            static_cast<double>(
                std::max<int64_t>(0, ebs.throughput.value_or(0) - kGp3IncludedThroughput)) *
                prices.gp3_throughput;
  } else if (type == "gp2") {
    month = gib * prices.gp2_gb;
  } else if (type == "io1") {
    month = gib * prices.io1_gb + iops * prices.io1_iops;
  } else if (type == "io2") {
    month = gib * prices.io2_gb + iops * prices.io2_iops;
  } else if (type == "st1") {
    month = gib * prices.st1_gb;
  } else if (type == "sc1") {
    month = gib * prices.sc1_gb;
  } else if (type == "standard") {
    month = gib * prices.standard_gb;
  }
  return month / kHoursPerMonth;
}

double VolumesPricePerHour(const std::vector<awsv1::BlockDeviceMapping>& mappings,
                           std::string_view region) {
  const EbsPrices& prices = EbsPricesIn(region);
  double hour = 0;
  for (const awsv1::BlockDeviceMapping& m : mappings) {
    if (m.ebs.has_value()) hour += VolumePricePerHour(*m.ebs, prices);
  }
  return hour;
}

double NodePricePerHour(const awsv1::EC2NodeClassSpec& spec, std::string_view region,
                        bool public_ipv4) {
  const awsv1::AMIFamily family =
      awsv1::EffectiveAMIFamily(spec).value_or(awsv1::AMIFamily::kCustom);
  return VolumesPricePerHour(awsv1::BlockDeviceMappingsFor(family, spec), region) +
         (public_ipv4 ? kPublicIpv4PricePerHour : 0);
}

}  // namespace dovetail::cloudprovider
