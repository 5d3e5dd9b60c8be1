// Manifests as `dovetail simulate`, `validate` and `convert` read them: YAML or JSON documents and
// Lists, decoded into Pods, NodePools, NodeClaims and EC2NodeClasses, validated, and converted from
// older API versions. Properties: whatever decodes encodes to JSON that decodes again; positions
// of decoded manifests are within the input.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dovetail/apis/aws/v1/ec2nodeclass.h"
#include "dovetail/apis/convert/convert.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/apis/core/manifest.h"
#include "dovetail/apis/core/pod.h"
#include "dovetail/apis/core/pod_requests.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/apis/validation/validation.h"
#include "dovetail/common/absl_compat.h"
#include "test/fuzz/fuzz_check.h"

namespace {

namespace core = dovetail::apis::core;

template <typename T>
void DecodeEncodeDecode(const core::Manifest& manifest) {
  auto decoded = core::DecodeAs<T>(manifest.json);
  if (!decoded.ok()) return;
  const nlohmann::json encoded = core::EncodeJson(*decoded);
  auto again = core::DecodeAs<T>(encoded);
  FUZZ_CHECK(again.ok(), dovetail::Cat(manifest.Describe(), ": ", again.status().ToString()));
  if constexpr (std::is_same_v<T, core::Pod>) {
    (void)core::PodRequests(*decoded);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto manifests = core::ParseManifests(text, "fuzz.yaml");
  if (!manifests.ok()) return 0;
  std::vector<nlohmann::json> objects;
  for (const core::Manifest& manifest : *manifests) {
    (void)manifest.Describe();
    (void)manifest.PositionOf("spec.template.spec.requirements[0].key");
    objects.push_back(manifest.json);
    if (manifest.kind == "Pod") DecodeEncodeDecode<core::Pod>(manifest);
    if (manifest.kind == "NodePool") DecodeEncodeDecode<dovetail::apis::v1::NodePool>(manifest);
    if (manifest.kind == "NodeClaim") DecodeEncodeDecode<dovetail::apis::v1::NodeClaim>(manifest);
    if (manifest.kind == "EC2NodeClass") {
      DecodeEncodeDecode<dovetail::apis::aws::v1::EC2NodeClass>(manifest);
    }
  }
  (void)dovetail::apis::validation::ValidateManifests(*manifests);
  const auto converted = dovetail::apis::convert::Convert(objects);
  FUZZ_CHECK(converted.errors.empty() || converted.objects.empty(),
             "a conversion with errors returned objects");
  (void)dovetail::apis::convert::ToYaml(converted.objects);
  return 0;
}
