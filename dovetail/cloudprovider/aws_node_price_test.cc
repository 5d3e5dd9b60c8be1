#include "dovetail/cloudprovider/aws_node_price.h"

#include "gtest/gtest.h"

namespace dovetail::cloudprovider {
namespace {

namespace awsv1 = apis::aws::v1;

awsv1::BlockDevice Volume(const char* type, const char* size) {
  awsv1::BlockDevice ebs;
  if (type != nullptr) ebs.volume_type = type;
  if (size != nullptr) ebs.volume_size = Quantity::Parse(size).value();
  return ebs;
}

TEST(AwsNodePriceTest, VolumesArePricedPerGiBMonthOverSevenHundredThirtyHours) {
  const EbsPrices& east = EbsPricesIn("us-east-1");
  // 20 GiB of gp3 at USD 0.08 per GB-month: 1.60 a month.
  EXPECT_DOUBLE_EQ(VolumePricePerHour(Volume("gp3", "20Gi"), east), 1.6 / 730);
  // EC2's default type is gp2; sizes round up to whole GiB.
  EXPECT_DOUBLE_EQ(VolumePricePerHour(Volume(nullptr, "10G"), east), 10 * 0.10 / 730);
  EXPECT_DOUBLE_EQ(VolumePricePerHour(Volume("st1", "500Gi"), east), 500 * 0.045 / 730);
  // No size (a snapshot's): not known, not priced.
  EXPECT_EQ(VolumePricePerHour(Volume("gp3", nullptr), east), 0);
}

TEST(AwsNodePriceTest, ProvisionedIopsAndThroughputAreCharged) {
  const EbsPrices& east = EbsPricesIn("us-east-1");
  awsv1::BlockDevice gp3 = Volume("gp3", "100Gi");
  gp3.iops = 3000;       // included
  gp3.throughput = 125;  // included
  EXPECT_DOUBLE_EQ(VolumePricePerHour(gp3, east), 100 * 0.08 / 730);
  gp3.iops = 4000;
  gp3.throughput = 225;
  EXPECT_DOUBLE_EQ(VolumePricePerHour(gp3, east), (100 * 0.08 + 1000 * 0.005 + 100 * 0.04) / 730);
  awsv1::BlockDevice io2 = Volume("io2", "50Gi");
  io2.iops = 1000;
  EXPECT_DOUBLE_EQ(VolumePricePerHour(io2, east), (50 * 0.125 + 1000 * 0.065) / 730);
}

TEST(AwsNodePriceTest, RegionsOutsideTheTableUseUsEast1) {
  EXPECT_EQ(EbsPricesIn("eu-west-1").gp3_gb, 0.088);
  EXPECT_EQ(EbsPricesIn("eu-west-1").st1_gb, EbsPricesIn("us-east-1").st1_gb);
  EXPECT_EQ(EbsPricesIn("xx-nowhere-9").gp3_gb, 0.08);
}

TEST(AwsNodePriceTest, TheFamilyDefaultsAreWhatANodeWithoutMappingsPays) {
  awsv1::EC2NodeClassSpec al2023;
  al2023.ami_family = awsv1::AMIFamily::kAL2023;
  EXPECT_DOUBLE_EQ(NodePricePerHour(al2023, "us-east-1", false), 20 * 0.08 / 730);
  EXPECT_DOUBLE_EQ(NodePricePerHour(al2023, "us-east-1", true),
                   20 * 0.08 / 730 + kPublicIpv4PricePerHour);
  awsv1::EC2NodeClassSpec bottlerocket;
  bottlerocket.ami_family = awsv1::AMIFamily::kBottlerocket;
  EXPECT_DOUBLE_EQ(NodePricePerHour(bottlerocket, "us-east-1", false), 24 * 0.08 / 730);
  awsv1::EC2NodeClassSpec custom;  // no family: Custom, no default mapping
  EXPECT_EQ(NodePricePerHour(custom, "us-east-1", false), 0);

  // The class's own mappings replace the defaults; instance-store mappings are free.
  awsv1::BlockDeviceMapping root;
  root.ebs = Volume("gp3", "100Gi");
  awsv1::BlockDeviceMapping store;
  store.device_name = "/dev/sdb";
  al2023.block_device_mappings = {root, store};
  EXPECT_DOUBLE_EQ(NodePricePerHour(al2023, "us-west-1", false), 100 * 0.096 / 730);
}

}  // namespace
}  // namespace dovetail::cloudprovider
