#include "dovetail/providers/aws/ec2_client.h"

#include <atomic>
#include <map>

#include "absl/strings/str_split.h"
#include "dovetail/providers/aws/test_server.h"
#include "gtest/gtest.h"

namespace dovetail::providers::aws {
namespace {

std::map<std::string, std::string> ParseForm(const std::string& body) {
  std::map<std::string, std::string> out;
  for (absl::string_view kv : absl::StrSplit(body, '&')) {
    std::pair<std::string, std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    out[httplib::detail::decode_url(p.first, true)] = httplib::detail::decode_url(p.second, true);
  }
  return out;
}

// Serves DescribeInstanceTypes in pages of two, as EC2 does with MaxResults and NextToken.
class Ec2PaginationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.server().Post("/", [this](const httplib::Request& req, httplib::Response& res) {
      auto form = ParseForm(req.body);
      {
        std::lock_guard<std::mutex> lock(mu_);
        forms_.push_back(form);
      }
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
    });
    ASSERT_TRUE(server_.Start());
  }

  testing::TestServer server_;
  HttpTransport transport_;
  StaticCredentialsProvider credentials_{
      AwsCredentials{.access_key_id = "A", .secret_access_key = "S"}};
  FakeClock clock_;
  std::mutex mu_;
  std::vector<std::map<std::string, std::string>> forms_;
};

TEST_F(Ec2PaginationTest, FollowsNextTokenToTheLastPage) {
  AwsClient client({.transport = transport_, .credentials = &credentials_, .clock = clock_},
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
