#include "dovetail/cli/cluster_provider.h"

#include "dovetail/apis/v1/labels.h"

namespace dovetail::cli {
namespace {

constexpr std::string_view kKwokNodeClassGroup = "karpenter.kwok.sh";

}  // namespace

std::string CloudProviderOfNodePools(const std::vector<apis::v1::NodePool>& pools) {
  int aws = 0;
  int kwok = 0;
  for (const apis::v1::NodePool& pool : pools) {
    const auto& ref = pool.spec.template_.spec.node_class_ref;
    if (!ref.has_value()) continue;
    if (ref->group == apis::v1::kAwsGroup) ++aws;
    if (ref->group == kKwokNodeClassGroup) ++kwok;
  }
  if (aws == 0 && kwok == 0) return "";
  return aws >= kwok ? "aws" : "kwok";
}

}  // namespace dovetail::cli
