// An AwsCloudProvider against moto for integration tests: the cluster `cluster_name` (endpoint,
// CA and service CIDR made up, as moto checks none), us-east-1, the static catalog of
// `data_dir`, and one EC2NodeClass, the one `node_class` points at, for every lookup by its name.
// Test-only; thread-compatible.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/cloudprovider/aws_catalog.h"
#include "dovetail/providers/aws/cloudprovider/aws_cloud_provider.h"
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

}  // namespace dovetail::providers::aws::testing
