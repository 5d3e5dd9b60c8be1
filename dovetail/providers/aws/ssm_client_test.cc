#include "dovetail/providers/aws/ssm_client.h"

#include <memory>
#include <string>

#include "dovetail/providers/aws/served_client_test.h"
#include "gtest/gtest.h"

namespace dovetail::providers::aws {
namespace {

// An SSM endpoint whose every reply is `body`.
class SsmReplyTest : public testing::ServedClientTest {
 protected:
  void SetUp() override {
    server_.server().Post("/", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(body_, "application/x-amz-json-1.1");
    });
    ASSERT_TRUE(server_.Start());
    client_ = std::make_unique<AwsClient>(Dependencies(),
                                          AwsClient::Options{.service = kSsm,
                                                             .region = "us-east-1",
                                                             .endpoint = server_.url(),
                                                             .parse_error = ParseJsonError,
                                                             .max_attempts = 1});
  }

  absl::StatusOr<SsmParameter> GetWithReply(std::string body) {
    body_ = std::move(body);
    SsmClient ssm(*client_);
    return ssm.GetParameter(
        "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/"
        "standard/recommended/image_id");
  }

  std::string body_;
  std::unique_ptr<AwsClient> client_;
};

TEST_F(SsmReplyTest, ReadsAWellFormedParameter) {
  auto p = GetWithReply(R"({"Parameter":{"Name":"n","Type":"String","Value":"ami-0123",
      "Version":7,"ARN":"arn:aws:ssm:us-east-1::parameter/n"}})");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->value, "ami-0123");
  EXPECT_EQ(p->type, "String");
  EXPECT_EQ(p->version, 7);
}

TEST_F(SsmReplyTest, MembersOfTheWrongJsonTypeAreAStatusNotAThrow) {
  for (const char* reply : {
           R"({"Parameter":{"Value":42}})",
           R"({"Parameter":{"Value":"ami-1","Name":["n"]}})",
           R"({"Parameter":{"Value":"ami-1","Type":{}}})",
           R"({"Parameter":{"Value":"ami-1","ARN":true}})",
           R"({"Parameter":{"Value":"ami-1","Version":"7"}})",
           R"({"Parameter":{"Value":"ami-1","Version":7.5}})",
           R"({"Parameter":"ami-1"})",
           R"({"Parameter":null})",
           R"(["Parameter"])",
           R"("ami-1")",
           R"(42)",
           R"({})",
       }) {
    auto p = GetWithReply(reply);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInternal) << reply << ": " << p.status();
    EXPECT_NE(p.status().message().find("ssm:GetParameter"), std::string::npos) << p.status();
  }
}

TEST_F(SsmReplyTest, ANonJsonReplyIsInternal) {
  EXPECT_EQ(GetWithReply("<html>").status().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace dovetail::providers::aws
