#include "dovetail/providers/aws/bootstrap.h"

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace dovetail::providers::aws {
namespace {

EksCluster Described() {
  return {.name = "prod",
          .endpoint = "https://ABC.gr7.eu-west-1.eks.amazonaws.com",
          .certificate_authority = "RUtTLUNB",
          .ip_family = "ipv4",
          .service_ipv4_cidr = "172.20.0.0/16"};
}

TEST(BootstrapTest, SettingsWinOverEverythingDiscovered) {
  auto b = ResolveBootstrap(
      {.cluster_name = "prod",
       .endpoint = "https://set.example",
       .ca_bundle = "U0VU",
       .service_cidr = "10.100.0.0/16"},
      {.cluster = Described(), .kube_ca_pem = "KUBE", .kube_dns_ip = "10.100.0.10"});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->endpoint, "https://set.example");
  EXPECT_EQ(b->ca_bundle, "U0VU");
  EXPECT_EQ(b->service_cidr, "10.100.0.0/16");
  EXPECT_EQ(b->dns_ip, "10.100.0.10");
  EXPECT_FALSE(NeedsDescribeCluster({.cluster_name = "prod",
                                     .endpoint = "https://set.example",
                                     .ca_bundle = "U0VU",
                                     .service_cidr = "10.100.0.0/16"},
                                    /*have_kube_ca=*/false));
}

TEST(BootstrapTest, EmptySettingsComeFromTheClientCaAndDescribeCluster) {
  const BootstrapSettings settings{.cluster_name = "prod"};
  EXPECT_TRUE(NeedsDescribeCluster(settings, /*have_kube_ca=*/true));
  auto b = ResolveBootstrap(settings, {.cluster = Described(),
                                       .kube_ca_pem = "-----BEGIN CERTIFICATE-----\n",
                                       .kube_dns_ip = "172.20.0.10"});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->endpoint, "https://ABC.gr7.eu-west-1.eks.amazonaws.com");
  // The CA the controller trusts, base64 as CLUSTER_CA_BUNDLE would be, before EKS's.
  EXPECT_EQ(b->ca_bundle, absl::Base64Escape("-----BEGIN CERTIFICATE-----\n"));
  EXPECT_EQ(b->service_cidr, "172.20.0.0/16");
  EXPECT_EQ(b->dns_ip, "172.20.0.10");
  // Without a client CA, EKS's.
  auto eks_ca = ResolveBootstrap(settings, {.cluster = Described()});
  ASSERT_TRUE(eks_ca.ok()) << eks_ca.status();
  EXPECT_EQ(eks_ca->ca_bundle, "RUtTLUNB");
}

TEST(BootstrapTest, AnIpv6ClusterGetsItsIpv6ServiceCidr) {
  EksCluster c = Described();
  c.ip_family = "ipv6";
  c.service_ipv6_cidr = "fd8a:1234:5678::/108";
  auto b = ResolveBootstrap({.cluster_name = "prod"}, {.cluster = c, .kube_ca_pem = "X"});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->service_cidr, "fd8a:1234:5678::/108");
}

TEST(BootstrapTest, NoEndpointOrCaFailsNamingTheSettingAndTheEksError) {
  const absl::Status denied =
      absl::PermissionDeniedError("eks:DescribeCluster: AccessDeniedException");
  auto no_endpoint =
      ResolveBootstrap({.cluster_name = "prod", .ca_bundle = "X"}, {.cluster = denied});
  EXPECT_EQ(no_endpoint.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(no_endpoint.status().message(), "CLUSTER_ENDPOINT"));
  EXPECT_TRUE(absl::StrContains(no_endpoint.status().message(), "AccessDeniedException"))
      << no_endpoint.status();

  auto no_ca = ResolveBootstrap({.cluster_name = "prod", .endpoint = "https://e"},
                                {.cluster = absl::StatusOr<EksCluster>(EksCluster{})});
  EXPECT_EQ(no_ca.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(no_ca.status().message(), "CLUSTER_CA_BUNDLE")) << no_ca.status();
}

TEST(BootstrapTest, AnUnknownCidrOrDnsIpIsNotFatalAndSaysWhy) {
  auto b = ResolveBootstrap(
      {.cluster_name = "prod", .endpoint = "https://e", .ca_bundle = "X"},
      {.cluster = absl::StatusOr<EksCluster>(absl::PermissionDeniedError("denied")),
       .kube_dns_ip = absl::NotFoundError("services \"kube-dns\" not found")});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->service_cidr, "");
  EXPECT_EQ(b->dns_ip, "");
  bool cidr_note = false, dns_note = false;
  for (const std::string& n : b->notes) {
    cidr_note |= absl::StrContains(n, "service CIDR: unknown") && absl::StrContains(n, "denied");
    dns_note |= absl::StrContains(n, "DNS IP: unknown") && absl::StrContains(n, "not found");
  }
  EXPECT_TRUE(cidr_note);
  EXPECT_TRUE(dns_note);
}

}  // namespace
}  // namespace dovetail::providers::aws
