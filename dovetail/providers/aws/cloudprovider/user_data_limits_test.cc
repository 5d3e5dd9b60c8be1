// The input limits of user data (common/input_limits.h): the size of spec.userData and the nesting
// of Bottlerocket TOML, whose parser, writer and merge recurse.
#include <string>

#include "dovetail/common/input_limits.h"
#include "dovetail/providers/aws/cloudprovider/user_data.h"
#include "gtest/gtest.h"

namespace dovetail::providers::aws {
namespace {

namespace awsv1 = apis::aws::v1;

std::string Repeat(std::string_view piece, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += piece;
  return out;
}

void ExpectTooDeep(const std::string& toml) {
  const absl::Status status = ParseToml(toml).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << toml.substr(0, 80);
  EXPECT_NE(status.message().find("nesting deeper than 32 levels"), std::string::npos) << status;
}

TEST(TomlLimitsTest, NestingUpToTheLimitParses) {
  // key `a` is level 1, each array one more: 31 arrays reach level 32.
  EXPECT_TRUE(ParseToml("a = " + Repeat("[", 31) + Repeat("]", 31) + "\n").ok());
  // 31 nested tables, their key at level 32.
  EXPECT_TRUE(ParseToml("[" + Repeat("t.", 30) + "t]\nk = 1\n").ok());
  ExpectTooDeep("[" + Repeat("t.", 31) + "t]\nk = 1\n");
}

TEST(TomlLimitsTest, DeepArraysInlineTablesDottedKeysAndHeadersAreRefused) {
  ExpectTooDeep("a = " + Repeat("[", 32) + Repeat("]", 32) + "\n");
  ExpectTooDeep("a = " + Repeat("[", 100000) + Repeat("]", 100000) + "\n");  // no stack overflow
  ExpectTooDeep("a = " + Repeat("{b = ", 100000) + "1" + Repeat("}", 100000) + "\n");
  ExpectTooDeep(Repeat("k.", 100000) + "k = 1\n");
  ExpectTooDeep("[" + Repeat("t.", 100000) + "t]\n");
  ExpectTooDeep("[" + Repeat("t.", 20) + "t]\n" + Repeat("k.", 20) + "k = 1\n");
}

TEST(TomlLimitsTest, TooDeepBottlerocketUserDataIsInvalidArgumentFromGenerate) {
  BootstrapInputs in;
  in.cluster_name = "c";
  in.user_data = "[settings]\nx = " + Repeat("[", 1000) + Repeat("]", 1000) + "\n";
  EXPECT_EQ(GenerateUserData(awsv1::AMIFamily::kBottlerocket, in).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(UserDataLimitsTest, UserDataOverSixteenKibIsInvalidArgumentForEveryFamily) {
  BootstrapInputs in;
  in.cluster_name = "c";
  in.user_data = std::string(kMaxUserDataBytes, '#');
  EXPECT_TRUE(GenerateUserData(awsv1::AMIFamily::kCustom, in).ok());
  in.user_data = std::string(kMaxUserDataBytes + 1, '#');
  for (const awsv1::AMIFamily family :
       {awsv1::AMIFamily::kAL2023, awsv1::AMIFamily::kAL2, awsv1::AMIFamily::kBottlerocket,
        awsv1::AMIFamily::kCustom}) {
    const absl::Status status = GenerateUserData(family, in).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_NE(status.message().find("spec.userData"), std::string::npos) << status;
  }
}

}  // namespace
}  // namespace dovetail::providers::aws
