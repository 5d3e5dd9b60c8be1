#include "dovetail/providers/aws/nodeclass/hash.h"

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "dovetail/apis/core/codec.h"
#include "nlohmann/json.hpp"

namespace dovetail::providers::aws::nodeclass {

namespace awsv1 = apis::aws::v1;

std::string NodeClassHash(const awsv1::EC2NodeClassSpec& spec) {
  awsv1::EC2NodeClass defaulted;
  defaulted.spec = spec;
  awsv1::ApplyDefaults(defaulted);
  nlohmann::json json = apis::core::EncodeJson(defaulted.spec);
  for (const char* key :
       {"subnetSelectorTerms", "securityGroupSelectorTerms", "capacityReservationSelectorTerms",
        "amiSelectorTerms", "ipPrefixCount", "amiFamily"}) {
    json.erase(key);
  }
  if (std::optional<awsv1::AMIFamily> family = awsv1::EffectiveAMIFamily(spec)) {
    json["resolvedAMIFamily"] =
        std::string(awsv1::EnumNames(*family)[static_cast<size_t>(*family)]);
  }
  const std::string text = json.dump();  // nlohmann::json objects keep their keys sorted
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return absl::StrCat(hash);
}

}  // namespace dovetail::providers::aws::nodeclass
