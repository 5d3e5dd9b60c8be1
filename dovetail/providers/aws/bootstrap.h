// What a node needs to join the cluster (the user data's API endpoint, CA bundle, service CIDR
// and DNS IP), resolved once at start-up as upstream's operator does:
//   endpoint      CLUSTER_ENDPOINT, else eks:DescribeCluster(CLUSTER_NAME).endpoint
//   CA bundle     CLUSTER_CA_BUNDLE, else the CA the controller's own Kubernetes client trusts
//                 (in a pod, the service account's ca.crt), else DescribeCluster's
//                 certificateAuthority.data
//   service CIDR  DOVETAIL_CLUSTER_CIDR (a Dovetail override; upstream has none), else
//                 DescribeCluster's serviceIpv4Cidr, or serviceIpv6Cidr when ipFamily is ipv6
//   DNS IP        the clusterIP of Service kube-system/kube-dns (upstream's source); when that
//                 fails the kubelet keeps the EC2NodeClass's clusterDNS or the AMI's default
// DescribeCluster is called only when a setting it answers is missing. The endpoint and the CA
// are needed by every AMI family, so without them start-up fails (FailedPrecondition naming the
// setting and what discovery said); the service CIDR only by AL2023, so without it start-up goes
// on and AL2023 EC2NodeClasses are not Ready (nodeclass_controller.h).
//
// ResolveBootstrap is the pure rule; DiscoverBootstrap gathers its inputs. Thread-compatible.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dovetail/providers/aws/eks_client.h"

namespace dovetail::providers::aws {

struct BootstrapSettings {
  std::string cluster_name;  // CLUSTER_NAME
  std::string endpoint;      // CLUSTER_ENDPOINT
  std::string ca_bundle;     // CLUSTER_CA_BUNDLE (base64)
  std::string service_cidr;  // DOVETAIL_CLUSTER_CIDR
};

struct BootstrapConfig {
  std::string endpoint;
  std::string ca_bundle;     // base64 PEM
  std::string service_cidr;  // empty: unknown (AL2023 classes are not Ready)
  std::string dns_ip;        // empty: unknown
  // One line per value: where it came from, or why it is unknown (logged at start-up).
  std::vector<std::string> notes;
};

// What discovery found. `cluster` is unset when DescribeCluster was not needed.
struct BootstrapDiscovered {
  std::optional<absl::StatusOr<EksCluster>> cluster;
  std::string kube_ca_pem;  // the controller's own API server CA (PEM), empty when none
  absl::StatusOr<std::string> kube_dns_ip = std::string();
};

// True when ResolveBootstrap needs DescribeCluster for these settings.
bool NeedsDescribeCluster(const BootstrapSettings& settings, bool have_kube_ca);

// Errors: FailedPrecondition naming CLUSTER_ENDPOINT or CLUSTER_CA_BUNDLE when it is still
// unknown.
absl::StatusOr<BootstrapConfig> ResolveBootstrap(const BootstrapSettings& settings,
                                                 const BootstrapDiscovered& discovered);

// Calls DescribeCluster through `eks` when needed and `kube_dns_ip` (the kube-dns Service's
// clusterIP, or an error), then ResolveBootstrap.
absl::StatusOr<BootstrapConfig> DiscoverBootstrap(
    const BootstrapSettings& settings, EksClient& eks, std::string_view kube_ca_pem,
    const std::function<absl::StatusOr<std::string>()>& kube_dns_ip);

}  // namespace dovetail::providers::aws
