// EC2NodeClass spec.userData, which the class's author writes and Dovetail merges with its own
// bootstrap for every AMI family: MIME multipart documents (AL2, AL2023), NodeConfig YAML, and
// Bottlerocket's TOML. Properties: parts written as MIME read back as the same parts; a TOML
// document Dovetail writes reads back as the same tree.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dovetail/providers/aws/cloudprovider/user_data.h"
#include "test/fuzz/fuzz_check.h"

namespace {

namespace aws = dovetail::providers::aws;
using dovetail::apis::aws::v1::AMIFamily;

// Each part's content type and body, quoted, for a failure message.
std::string Describe(const std::vector<aws::MimePart>& parts) {
  std::string out;
  for (const aws::MimePart& p : parts) {
    out += "  [" + p.content_type + "] {" + p.body + "}\n";
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  (void)aws::IsMime(text);
  if (auto parts = aws::ParseMimeMultipart(text); parts.ok()) {
    auto again = aws::ParseMimeMultipart(aws::WriteMimeMultipart(*parts));
    FUZZ_CHECK(again.ok(), again.status().ToString());
    FUZZ_CHECK(*again == *parts, "MIME parts changed when written and read back:\n" +
                                     Describe(*parts) + "became\n" + Describe(*again));
  }
  (void)aws::UserPartsForMime(text);

  if (auto toml = aws::ParseToml(text); toml.ok()) {
    const std::string written = aws::WriteToml(*toml);
    auto again = aws::ParseToml(written);
    FUZZ_CHECK(again.ok(), again.status().ToString() + "\n" + written);
    FUZZ_CHECK(*again == *toml, "TOML tree changed when written and read back:\n" + written);
  }

  aws::BootstrapInputs inputs{.cluster_name = "fuzz",
                              .cluster_endpoint = "https://fuzz.example",
                              .ca_bundle = "Q0E=",
                              .cluster_cidr = "10.100.0.0/16",
                              .labels = {{"karpenter.sh/nodepool", "default"}}};
  inputs.user_data = std::string(text);
  for (const AMIFamily family :
       {AMIFamily::kAL2, AMIFamily::kAL2023, AMIFamily::kBottlerocket, AMIFamily::kCustom}) {
    (void)aws::GenerateUserData(family, inputs);
  }
  return 0;
}
