// EksClient: the EKS calls Dovetail makes, in the REST-JSON protocol (GET /clusters/<name>, a JSON
// response; errors in X-Amzn-ErrorType and the body's "message", errors.h). DescribeCluster gives
// what node bootstrap needs when the settings leave it out (providers/aws/bootstrap.h): the API
// endpoint, the CA bundle and the service CIDR. CreateCluster exists for test fixtures (moto).
// Errors: those of AwsClient with the EKS code kept (ResourceNotFoundException => NotFound);
// Internal for a response that is not JSON. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/providers/aws/aws_client.h"

namespace dovetail::providers::aws {

struct EksCluster {
  std::string name;
  std::string arn;
  std::string status;                 // CREATING, ACTIVE, ...
  std::string endpoint;               // https://...
  std::string version;                // Kubernetes minor version, "1.34"
  std::string certificate_authority;  // base64 PEM (certificateAuthority.data)
  std::string ip_family;              // kubernetesNetworkConfig.ipFamily: ipv4 | ipv6
  std::string service_ipv4_cidr;      // kubernetesNetworkConfig.serviceIpv4Cidr
  std::string service_ipv6_cidr;      // kubernetesNetworkConfig.serviceIpv6Cidr
};

class EksClient {
 public:
  explicit EksClient(AwsClient& client) : client_(client) {}

  absl::StatusOr<EksCluster> DescribeCluster(std::string_view name);
  // Test fixtures: a cluster with `role_arn` in `subnet_ids`, and the service CIDR when non-empty.
  absl::StatusOr<EksCluster> CreateCluster(std::string_view name, std::string_view role_arn,
                                           const std::vector<std::string>& subnet_ids,
                                           std::string_view service_ipv4_cidr = "");

 private:
  AwsClient& client_;
};

}  // namespace dovetail::providers::aws
