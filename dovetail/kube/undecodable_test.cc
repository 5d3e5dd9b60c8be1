#include "dovetail/kube/undecodable.h"

#include <string>

#include "gtest/gtest.h"

namespace dovetail::kube {
namespace {

TEST(ReadObjectIdentityTest, ReadsNamespaceNameAndResourceVersionOfAnUndecodableObject) {
  const ObjectIdentity id = ReadObjectIdentity(
      R"({"kind":"Pod","metadata":{"uid":"u","name":"web","namespace":"shop",)"
      R"("resourceVersion":"42","labels":{"a":"b"}},"spec":42,"status":[true]})");
  EXPECT_EQ(id.name, "web");
  EXPECT_EQ(id.namespace_, "shop");
  EXPECT_EQ(id.resource_version, "42");
  EXPECT_EQ(id.Key(), "shop/web");
}

TEST(ReadObjectIdentityTest, KeyOfAClusterScopedObjectIsItsName) {
  const ObjectIdentity id =
      ReadObjectIdentity(R"({"metadata":{"name":"node-1","resourceVersion":"7"},"status":"x"})");
  EXPECT_EQ(id.Key(), "node-1");
  EXPECT_EQ(id.resource_version, "7");
}

TEST(ReadObjectIdentityTest, LeavesFieldsEmptyWhenMetadataIsGarbage) {
  EXPECT_EQ(ReadObjectIdentity(R"({"metadata":5})").Key(), "");
  EXPECT_EQ(ReadObjectIdentity(R"({"metadata":{"name":{"x":1},"resourceVersion":"3"}})").Key(), "");
  EXPECT_EQ(
      ReadObjectIdentity(R"({"metadata":{"name":{"x":1},"resourceVersion":"3"}})").resource_version,
      "3");
  EXPECT_EQ(ReadObjectIdentity("not json").Key(), "");
  EXPECT_EQ(ReadObjectIdentity("[1,2]").Key(), "");
  EXPECT_EQ(ReadObjectIdentity("").Key(), "");
}

TEST(UndecodableReportsTest, ReportsEachVersionOfEachKindOnce) {
  UndecodableReports reports;
  const ObjectIdentity v1{.namespace_ = "ns", .name = "a", .resource_version = "1"};
  const ObjectIdentity v2{.namespace_ = "ns", .name = "a", .resource_version = "2"};
  const ObjectIdentity other_ns{.namespace_ = "other", .name = "a", .resource_version = "1"};
  EXPECT_TRUE(reports.FirstReport("Pod", v1));
  EXPECT_FALSE(reports.FirstReport("Pod", v1));
  EXPECT_TRUE(reports.FirstReport("Pod", v2));
  EXPECT_TRUE(reports.FirstReport("Pod", other_ns));
  EXPECT_FALSE(reports.FirstReport("Pod", v2));
  EXPECT_TRUE(reports.FirstReport("Service", v2));
  EXPECT_FALSE(reports.FirstReport("Service", v2));
  EXPECT_EQ(reports.size(), 4u);
}

TEST(UndecodableReportsTest, ForgetsTheOldestVersionsBeyondItsCapacity) {
  UndecodableReports reports(/*capacity=*/2);
  const ObjectIdentity a{.name = "a", .resource_version = "1"};
  const ObjectIdentity b{.name = "b", .resource_version = "1"};
  const ObjectIdentity c{.name = "c", .resource_version = "1"};
  EXPECT_TRUE(reports.FirstReport("Pod", a));
  EXPECT_TRUE(reports.FirstReport("Pod", b));
  EXPECT_TRUE(reports.FirstReport("Pod", c));  // forgets a
  EXPECT_EQ(reports.size(), 2u);
  EXPECT_FALSE(reports.FirstReport("Pod", b));
  EXPECT_FALSE(reports.FirstReport("Pod", c));
  EXPECT_TRUE(reports.FirstReport("Pod", a));  // reported again once forgotten
  EXPECT_EQ(reports.size(), 2u);
}

}  // namespace
}  // namespace dovetail::kube
