#include "dovetail/providers/aws/ec2_client.h"

#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "dovetail/providers/aws/errors.h"
#include "dovetail/providers/aws/served_client_test.h"
#include "gtest/gtest.h"

namespace dovetail::providers::aws {
namespace {

// Serves DescribeInstanceTypes in pages of two, as EC2 does with MaxResults and NextToken.
class Ec2PaginationTest : public testing::QueryServerTest {
 protected:
  void Respond(Form& form, httplib::Response& res) override {
    const std::vector<std::string> all = {"a1.large", "c5.large", "m5.large", "t3.micro",
                                          "z1d.large"};
    const int page = form.count("NextToken") ? std::stoi(form["NextToken"].substr(5)) : 0;
    std::string xml = "<DescribeInstanceTypesResponse><instanceTypeSet>";
    for (int i = page * 2; i < std::min<int>(all.size(), page * 2 + 2); ++i) {
      xml += "<item><instanceType>" + all[i] +
             "</instanceType><vCpuInfo><defaultVCpus>2</defaultVCpus></vCpuInfo></item>";
    }
    xml += "</instanceTypeSet>";
    if ((page + 1) * 2 < static_cast<int>(all.size())) {
      xml += "<nextToken>page-" + std::to_string(page + 1) + "</nextToken>";
    }
    xml += "</DescribeInstanceTypesResponse>";
    res.set_content(xml, "text/xml");
  }
};

TEST_F(Ec2PaginationTest, FollowsNextTokenToTheLastPage) {
  AwsClient client(Dependencies(),
                   {.service = kEc2, .region = "us-east-1", .endpoint = server_.url()});
  Ec2Client ec2(client);
  ec2.set_page_size(2);
  auto types =
      ec2.DescribeInstanceTypes({{"processor-info.supported-architecture", {"x86_64", "arm64"}}});
  ASSERT_TRUE(types.ok()) << types.status();
  ASSERT_EQ(types->size(), 5u);
  EXPECT_EQ((*types)[4].instance_type, "z1d.large");
  EXPECT_EQ((*types)[0].default_vcpus, 2);
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(forms_.size(), 3u);
  EXPECT_EQ(forms_[0]["Action"], "DescribeInstanceTypes");
  EXPECT_EQ(forms_[0]["Version"], "2016-11-15");
  EXPECT_EQ(forms_[0]["MaxResults"], "2");
  EXPECT_EQ(forms_[0]["Filter.1.Name"], "processor-info.supported-architecture");
  EXPECT_EQ(forms_[0]["Filter.1.Value.2"], "arm64");
  EXPECT_EQ(forms_[0].count("NextToken"), 0u);
  EXPECT_EQ(forms_[2]["NextToken"], "page-2");
  EXPECT_EQ(client.Stats("DescribeInstanceTypes").calls, 3);
}

std::string Testdata(const std::string& name) {
  std::ifstream in(std::string(DOVETAIL_AWS_TESTDATA_DIR) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Time At(const char* rfc3339) {
  absl::Time t;
  std::string err;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &err)) << err;
  return t;
}

// Serves recorded DescribeInstanceStatus pages (testdata/ec2_describe_instance_status_page*.xml),
// the second one for the first page's nextToken; or EC2's UnauthorizedOperation error.
class Ec2InstanceStatusTest : public testing::QueryServerTest {
 protected:
  void Respond(Form& form, httplib::Response& res) override {
    if (unauthorized_) {
      res.status = 403;
      res.set_content(
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Errors><Error>"
          "<Code>UnauthorizedOperation</Code><Message>You are not authorized to perform this "
          "operation.</Message></Error></Errors><RequestID>b8a1d3c0-5e0f-4d8c-9a51-"
          "3f2e7d6c1a00</RequestID></Response>",
          "text/xml");
      return;
    }
    const bool second = form["NextToken"] == "eyJ2IjoiMiIsImMiOiJwYWdlLTIifQ==";
    res.set_content(Testdata(second ? "ec2_describe_instance_status_page2.xml"
                                    : "ec2_describe_instance_status_page1.xml"),
                    "text/xml;charset=UTF-8");
  }

  bool unauthorized_ = false;
};

TEST_F(Ec2InstanceStatusTest, ParsesEveryPageOfTheRecordedReply) {
  AwsClient client(Dependencies(),
                   {.service = kEc2, .region = "us-east-1", .endpoint = server_.url()});
  Ec2Client ec2(client);
  auto statuses = ec2.DescribeInstanceStatus({{"instance-status.status", {"impaired"}}});
  ASSERT_TRUE(statuses.ok()) << statuses.status();
  ASSERT_EQ(statuses->size(), 2u);

  const Ec2InstanceStatus& a = (*statuses)[0];
  EXPECT_EQ(a.instance_id, "i-0a1b2c3d4e5f60011");
  EXPECT_EQ(a.availability_zone, "us-east-1a");
  EXPECT_EQ(a.instance_state, "running");
  EXPECT_EQ(a.instance_status.status, "impaired");
  EXPECT_EQ(a.instance_status.details,
            (std::vector<Ec2StatusDetail>{{.name = "reachability",
                                           .status = "failed",
                                           .impaired_since = At("2026-12-06T01:58:00.000Z")}}));
  EXPECT_EQ(a.system_status.status, "ok");
  ASSERT_EQ(a.system_status.details.size(), 1u);
  EXPECT_EQ(a.system_status.details[0].status, "passed");
  EXPECT_EQ(a.system_status.details[0].impaired_since, absl::InfinitePast());
  EXPECT_EQ(a.attached_ebs_status.status, "ok");
  EXPECT_TRUE(a.events.empty());

  const Ec2InstanceStatus& b = (*statuses)[1];
  EXPECT_EQ(b.instance_id, "i-0a1b2c3d4e5f60012");
  EXPECT_EQ(b.system_status.details[0].impaired_since, At("2026-12-06T02:00:30Z"));
  EXPECT_EQ(b.instance_status.status, "initializing");
  EXPECT_EQ(b.attached_ebs_status.details[0].status, "failed");
  EXPECT_EQ(b.events,
            (std::vector<Ec2InstanceStatusEvent>{{.code = "system-maintenance",
                                                  .description = "Scheduled system maintenance",
                                                  .not_before = At("2026-12-10T00:00:00Z"),
                                                  .not_after = At("2026-12-10T06:00:00Z")}}));

  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(forms_.size(), 2u);
  EXPECT_EQ(forms_[0]["Action"], "DescribeInstanceStatus");
  EXPECT_EQ(forms_[0]["Filter.1.Name"], "instance-status.status");
  EXPECT_EQ(forms_[0]["Filter.1.Value.1"], "impaired");
  // As upstream: running instances only, the API's own page size.
  EXPECT_EQ(forms_[0].count("IncludeAllInstances"), 0u);
  EXPECT_EQ(forms_[0].count("MaxResults"), 0u);
  EXPECT_EQ(forms_[0].count("NextToken"), 0u);
  EXPECT_EQ(forms_[1]["NextToken"], "eyJ2IjoiMiIsImMiOiJwYWdlLTIifQ==");
}

TEST_F(Ec2InstanceStatusTest, UnauthorizedOperationIsPermissionDeniedWithItsCode) {
  unauthorized_ = true;
  AwsClient client(Dependencies(),
                   {.service = kEc2, .region = "us-east-1", .endpoint = server_.url()});
  Ec2Client ec2(client);
  auto statuses = ec2.DescribeInstanceStatus({});
  ASSERT_FALSE(statuses.ok());
  EXPECT_EQ(statuses.status().code(), absl::StatusCode::kPermissionDenied) << statuses.status();
  EXPECT_EQ(AwsErrorCode(statuses.status()), "UnauthorizedOperation");
}

TEST(QueryProtocolTest, FormEncodesAsTheSdksDo) {
  EXPECT_EQ(FormEncode("DescribeSubnets", "2016-11-15",
                       {{"Filter.1.Name", "tag:team name"}, {"Filter.1.Value.1", "a b+c/~*"}}),
            "Action=DescribeSubnets&Version=2016-11-15&Filter.1.Name=tag%3Ateam+name"
            "&Filter.1.Value.1=a+b%2Bc%2F~%2A");
  QueryParams params;
  AddList(params, "InstanceType", {"m5.large", "c5.large"});
  AddFilters(params, {{"tag-key", {"k"}}, {"vpc-id", {"v1", "v2"}}});
  EXPECT_EQ(params, (QueryParams{{"InstanceType.1", "m5.large"},
                                 {"InstanceType.2", "c5.large"},
                                 {"Filter.1.Name", "tag-key"},
                                 {"Filter.1.Value.1", "k"},
                                 {"Filter.2.Name", "vpc-id"},
                                 {"Filter.2.Value.1", "v1"},
                                 {"Filter.2.Value.2", "v2"}}));
}

}  // namespace
}  // namespace dovetail::providers::aws
