#include "dovetail/kube/tls_server_name.h"

#include "gtest/gtest.h"

namespace dovetail::kube {
namespace {

TEST(TlsServerNameRouteTest, ConnectsToTheServerAddressAndVerifiesTheName) {
  auto route = RouteForTlsServerName("https://10.0.0.1:6443/prefix", "api.example.com");
  ASSERT_TRUE(route.ok()) << route.status();
  ASSERT_TRUE(route->has_value());
  EXPECT_EQ((*route)->url_base, "https://api.example.com:6443/prefix");
  EXPECT_EQ((*route)->connect_to, "api.example.com:6443:10.0.0.1:6443");
  EXPECT_EQ((*route)->host_header, "Host: 10.0.0.1:6443");
}

TEST(TlsServerNameRouteTest, DefaultsThePortAndKeepsIpv6Brackets) {
  auto route = RouteForTlsServerName("https://[fd00::1]", "kubernetes");
  ASSERT_TRUE(route.ok()) << route.status();
  ASSERT_TRUE(route->has_value());
  EXPECT_EQ((*route)->url_base, "https://kubernetes:443");
  EXPECT_EQ((*route)->connect_to, "kubernetes:443:[fd00::1]:443");
  EXPECT_EQ((*route)->host_header, "Host: [fd00::1]");
}

TEST(TlsServerNameRouteTest, NothingToDoWithoutANameOrWithoutTls) {
  EXPECT_FALSE(RouteForTlsServerName("https://10.0.0.1:6443", "")->has_value());
  EXPECT_FALSE(RouteForTlsServerName("http://127.0.0.1:8080", "kubernetes")->has_value());
}

TEST(TlsServerNameRouteTest, RejectsNamesAndServersItCannotRoute) {
  for (const char* name : {"[::1]", "a:1", "a/b", "a b"}) {
    EXPECT_EQ(RouteForTlsServerName("https://10.0.0.1", name).status().code(),
              absl::StatusCode::kInvalidArgument)
        << name;
  }
  for (const char* server : {"https://", "https://:6443", "https://h:0", "https://h:x",
                             "https://h:70000", "https://[::1", "https://[::1]x"}) {
    EXPECT_EQ(RouteForTlsServerName(server, "kubernetes").status().code(),
              absl::StatusCode::kInvalidArgument)
        << server;
  }
}

}  // namespace
}  // namespace dovetail::kube
