#include "dovetail/providers/aws/eks_client.h"

#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "dovetail/providers/aws/json_member.h"
#include "nlohmann/json.hpp"

namespace dovetail::providers::aws {
namespace {

using internal::Member;
using internal::StringMember;

absl::StatusOr<EksCluster> ReadCluster(const HttpResponse& response, std::string_view api) {
  nlohmann::json doc = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json* cluster = Member(doc, "cluster");
  if (cluster == nullptr || !cluster->is_object()) {
    return absl::InternalError(Cat("eks:", api, ": the response has no cluster object"));
  }
  EksCluster out{.name = StringMember(*cluster, "name"),
                 .arn = StringMember(*cluster, "arn"),
                 .status = StringMember(*cluster, "status"),
                 .endpoint = StringMember(*cluster, "endpoint"),
                 .version = StringMember(*cluster, "version")};
  if (const nlohmann::json* ca = Member(*cluster, "certificateAuthority")) {
    out.certificate_authority = StringMember(*ca, "data");
  }
  if (const nlohmann::json* net = Member(*cluster, "kubernetesNetworkConfig")) {
    out.ip_family = StringMember(*net, "ipFamily");
    out.service_ipv4_cidr = StringMember(*net, "serviceIpv4Cidr");
    out.service_ipv6_cidr = StringMember(*net, "serviceIpv6Cidr");
  }
  return out;
}

}  // namespace

absl::StatusOr<EksCluster> EksClient::DescribeCluster(std::string_view name) {
  AwsRequest request{.method = "GET", .path = Cat("/clusters/", UriEncode(name))};
  ASSIGN_OR_RETURN(HttpResponse response, client_.Send("DescribeCluster", std::move(request)));
  return ReadCluster(response, "DescribeCluster");
}

absl::StatusOr<EksCluster> EksClient::CreateCluster(std::string_view name,
                                                    std::string_view role_arn,
                                                    const std::vector<std::string>& subnet_ids,
                                                    std::string_view service_ipv4_cidr) {
  nlohmann::json body = {{"name", std::string(name)},
                         {"roleArn", std::string(role_arn)},
                         {"resourcesVpcConfig", {{"subnetIds", subnet_ids}}}};
  if (!service_ipv4_cidr.empty()) {
    body["kubernetesNetworkConfig"] = {{"serviceIpv4Cidr", std::string(service_ipv4_cidr)}};
  }
  AwsRequest request{.method = "POST",
                     .path = "/clusters",
                     .headers = {{"Content-Type", "application/json"}},
                     .body = body.dump()};
  ASSIGN_OR_RETURN(HttpResponse response, client_.Send("CreateCluster", std::move(request)));
  return ReadCluster(response, "CreateCluster");
}

}  // namespace dovetail::providers::aws
