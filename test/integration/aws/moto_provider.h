// An AwsCloudProvider against moto for integration tests: the cluster `cluster_name` (endpoint,
// CA and service CIDR made up, as moto checks none), us-east-1, the static catalog of
// `data_dir`, and one EC2NodeClass, the one `node_class` points at, for every lookup by its name;
// and SetUpMotoNodeClass, which makes that EC2NodeClass from a network it creates in moto.
// Test-only; thread-compatible.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/cloudprovider/aws_catalog.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/providers/aws/cloudprovider/aws_cloud_provider.h"
#include "dovetail/providers/aws/ec2_client.h"
#include "dovetail/providers/aws/query_protocol.h"
#include "gtest/gtest.h"

namespace dovetail::providers::aws::testing {

inline std::unique_ptr<AwsCloudProvider> MotoCloudProvider(
    Ec2Client& ec2, UnavailableOfferings& unavailable, const Clock& clock,
    const apis::aws::v1::EC2NodeClass* node_class, const std::string& cluster_name,
    const std::string& data_dir) {
  auto files = ::dovetail::cloudprovider::ReadCatalogDirectory(data_dir);
  EXPECT_TRUE(files.ok()) << files.status();
  if (!files.ok()) return nullptr;
  AwsCloudProvider::Options options;
  options.cluster_name = cluster_name;
  options.cluster_endpoint = "https://moto.example";
  options.cluster_ca_bundle = "Q0E=";
  options.cluster_cidr = "10.100.0.0/16";
  options.catalog.region = "us-east-1";
  options.catalog.static_files = *std::move(files);
  return std::make_unique<AwsCloudProvider>(
      AwsCloudProvider::Dependencies{.ec2 = ec2,
                                     .pricing = nullptr,
                                     .unavailable = unavailable,
                                     .clock = clock,
                                     .get_node_class = [node_class](std::string_view name)
                                         -> absl::StatusOr<apis::aws::v1::EC2NodeClass> {
                                       if (name != node_class->metadata.name)
                                         return absl::NotFoundError("no such class");
                                       return *node_class;
                                     }},
      std::move(options));
}

// Creates in moto a VPC `<net>.0.0/16` with a subnet `<net>.1.0/24` in us-east-1a and a security
// group named `group`, and sets `node_class` to the Ready EC2NodeClass "default" (generation 1,
// AL2023) that names them and an x86_64 image moto ships (its controller is not involved).
inline void SetUpMotoNodeClass(Ec2Client& ec2, std::string_view net, const std::string& group,
                               apis::aws::v1::EC2NodeClass& node_class) {
  namespace core = apis::core;
  auto query = [&](std::string_view action, const QueryParams& params) {
    auto doc = ec2.Query(action, params);
    EXPECT_TRUE(doc.ok()) << action << ": " << doc.status();
    return doc.ok() ? std::move(*doc) : std::make_unique<pugi::xml_document>();
  };
  const std::string vpc = Text(query("CreateVpc", {{"CidrBlock", ::dovetail::Cat(net, ".0.0/16")}})
                                   ->document_element()
                                   .child("vpc"),
                               "vpcId");
  const std::string subnet =
      Text(query("CreateSubnet", {{"VpcId", vpc},
                                  {"CidrBlock", ::dovetail::Cat(net, ".1.0/24")},
                                  {"AvailabilityZone", "us-east-1a"}})
               ->document_element()
               .child("subnet"),
           "subnetId");
  const std::string sg =
      Text(query("CreateSecurityGroup",
                 {{"GroupName", group}, {"GroupDescription", "nodes"}, {"VpcId", vpc}})
               ->document_element(),
           "groupId");
  auto images = ec2.DescribeImages({{"architecture", {"x86_64"}}}, {}, {"amazon"});
  ASSERT_TRUE(images.ok()) << images.status();
  ASSERT_FALSE(images->empty());
  node_class.metadata.name = "default";
  node_class.metadata.generation = 1;
  node_class.spec.ami_family = apis::aws::v1::AMIFamily::kAL2023;
  node_class.status.subnets = {{subnet, "us-east-1a", "use1-az1"}};
  node_class.status.security_groups = {{sg, "nodes"}};
  node_class.status.amis = {
      {.id = (*images)[0].image_id,
       .name = "moto",
       .requirements = {
           {.key = "kubernetes.io/arch", .op = core::SelectorOperator::kIn, .values = {"amd64"}}}}};
  node_class.status.conditions = {
      {.type = "Ready", .status = core::ConditionStatus::kTrue, .observed_generation = 1}};
}

}  // namespace dovetail::providers::aws::testing
