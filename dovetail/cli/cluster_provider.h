// The cloud provider a cluster runs, for the commands that price or explain it (`cost`,
// `explain`) when --cloud-provider is not given: the group of the NodePools' nodeClassRef
// (karpenter.k8s.aws: aws; karpenter.kwok.sh: kwok), the one most pools name. Without a pool that
// names either, DOVETAIL_CLOUD_PROVIDER (the controller's setting, default aws) decides.
#pragma once

#include <string>
#include <vector>

#include "dovetail/apis/v1/nodepool.h"

namespace dovetail::cli {

// "aws", "kwok", or "" when no pool names a node class group Dovetail serves.
std::string CloudProviderOfNodePools(const std::vector<apis::v1::NodePool>& pools);

}  // namespace dovetail::cli
