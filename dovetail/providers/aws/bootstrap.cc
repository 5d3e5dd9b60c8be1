#include "dovetail/providers/aws/bootstrap.h"

#include "absl/strings/escaping.h"
#include "dovetail/common/absl_compat.h"

namespace dovetail::providers::aws {
namespace {

// "eks:DescribeCluster(name)" with its outcome, for messages.
std::string DescribeOutcome(const BootstrapSettings& settings,
                            const std::optional<absl::StatusOr<EksCluster>>& cluster) {
  const std::string call = Cat("eks:DescribeCluster(", settings.cluster_name, ")");
  if (!cluster.has_value()) return Cat(call, " was not called");
  if (!cluster->ok()) return Cat(call, " failed: ", cluster->status().message());
  return Cat(call, " did not return it");
}

}  // namespace

bool NeedsDescribeCluster(const BootstrapSettings& settings, bool have_kube_ca) {
  return settings.endpoint.empty() || settings.service_cidr.empty() ||
         (settings.ca_bundle.empty() && !have_kube_ca);
}

absl::StatusOr<BootstrapConfig> ResolveBootstrap(const BootstrapSettings& settings,
                                                 const BootstrapDiscovered& discovered) {
  BootstrapConfig out;
  const EksCluster* cluster =
      discovered.cluster.has_value() && discovered.cluster->ok() ? &**discovered.cluster : nullptr;

  if (!settings.endpoint.empty()) {
    out.endpoint = settings.endpoint;
    out.notes.push_back("endpoint: CLUSTER_ENDPOINT");
  } else if (cluster != nullptr && !cluster->endpoint.empty()) {
    out.endpoint = cluster->endpoint;
    out.notes.push_back("endpoint: eks:DescribeCluster");
  } else {
    return absl::FailedPreconditionError(
        Cat("CLUSTER_ENDPOINT is not set and ", DescribeOutcome(settings, discovered.cluster),
            ": nodes could not join; set CLUSTER_ENDPOINT (settings.clusterEndpoint) or allow "
            "eks:DescribeCluster"));
  }

  if (!settings.ca_bundle.empty()) {
    out.ca_bundle = settings.ca_bundle;
    out.notes.push_back("CA bundle: CLUSTER_CA_BUNDLE");
  } else if (!discovered.kube_ca_pem.empty()) {
    out.ca_bundle = absl::Base64Escape(discovered.kube_ca_pem);
    out.notes.push_back("CA bundle: the controller's Kubernetes client");
  } else if (cluster != nullptr && !cluster->certificate_authority.empty()) {
    out.ca_bundle = cluster->certificate_authority;
    out.notes.push_back("CA bundle: eks:DescribeCluster");
  } else {
    return absl::FailedPreconditionError(
        Cat("CLUSTER_CA_BUNDLE is not set, the Kubernetes client has no CA of its own and ",
            DescribeOutcome(settings, discovered.cluster),
            ": nodes could not trust the API server; set CLUSTER_CA_BUNDLE"));
  }

  if (!settings.service_cidr.empty()) {
    out.service_cidr = settings.service_cidr;
    out.notes.push_back("service CIDR: DOVETAIL_CLUSTER_CIDR");
  } else if (cluster != nullptr) {
    out.service_cidr =
        cluster->ip_family == "ipv6" ? cluster->service_ipv6_cidr : cluster->service_ipv4_cidr;
    out.notes.push_back(out.service_cidr.empty()
                            ? "service CIDR: unknown (eks:DescribeCluster did not return it); "
                              "AL2023 EC2NodeClasses are not Ready"
                            : "service CIDR: eks:DescribeCluster");
  } else {
    out.notes.push_back(Cat("service CIDR: unknown (",
                            DescribeOutcome(settings, discovered.cluster),
                            "); AL2023 EC2NodeClasses are not Ready"));
  }

  if (discovered.kube_dns_ip.ok() && !discovered.kube_dns_ip->empty()) {
    out.dns_ip = *discovered.kube_dns_ip;
    out.notes.push_back("DNS IP: Service kube-system/kube-dns");
  } else {
    out.notes.push_back(Cat(
        "DNS IP: unknown (Service kube-system/kube-dns: ",
        discovered.kube_dns_ip.ok() ? "no clusterIP" : discovered.kube_dns_ip.status().message(),
        "); nodes use the EC2NodeClass's clusterDNS or the AMI's default"));
  }
  return out;
}

absl::StatusOr<BootstrapConfig> DiscoverBootstrap(
    const BootstrapSettings& settings, EksClient& eks, std::string_view kube_ca_pem,
    const std::function<absl::StatusOr<std::string>()>& kube_dns_ip) {
  BootstrapDiscovered discovered{.kube_ca_pem = std::string(kube_ca_pem),
                                 .kube_dns_ip = kube_dns_ip()};
  if (NeedsDescribeCluster(settings, !kube_ca_pem.empty())) {
    discovered.cluster = eks.DescribeCluster(settings.cluster_name);
  }
  return ResolveBootstrap(settings, discovered);
}

}  // namespace dovetail::providers::aws
