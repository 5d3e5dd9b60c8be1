#include "dovetail/controllers/nodepool/hash.h"

#include <string>

#include "dovetail/apis/v1/labels.h"
#include "dovetail/controllers/nodeclaim/conditions.h"

namespace dovetail::controllers::nodepool {

namespace core = apis::core;
namespace v1 = apis::v1;

namespace {

const std::string* Find(const core::StringMap& map, std::string_view key) {
  auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}

}  // namespace

std::optional<core::StringMap> PoolStamp(const v1::NodePool& node_pool, std::string_view hash) {
  const core::StringMap& annotations = node_pool.metadata.annotations;
  const std::string* have_hash = Find(annotations, v1::kNodePoolHashAnnotationKey);
  const std::string* have_version = Find(annotations, v1::kNodePoolHashVersionAnnotationKey);
  if (have_hash != nullptr && *have_hash == hash && have_version != nullptr &&
      *have_version == v1::kNodePoolHashVersion) {
    return std::nullopt;
  }
  return core::StringMap{
      {std::string(v1::kNodePoolHashAnnotationKey), std::string(hash)},
      {std::string(v1::kNodePoolHashVersionAnnotationKey), std::string(v1::kNodePoolHashVersion)}};
}

bool NodeClaimsNeedRestamp(const v1::NodePool& node_pool) {
  const core::StringMap& annotations = node_pool.metadata.annotations;
  const std::string* version = Find(annotations, v1::kNodePoolHashVersionAnnotationKey);
  return Find(annotations, v1::kNodePoolHashAnnotationKey) == nullptr || version == nullptr ||
         *version != v1::kNodePoolHashVersion;
}

std::optional<core::StringMap> NodeClaimRestamp(const v1::NodeClaim& node_claim,
                                                const v1::NodePool& node_pool,
                                                std::string_view hash) {
  if (!NodeClaimsNeedRestamp(node_pool)) return std::nullopt;
  const core::StringMap& annotations = node_claim.metadata.annotations;
  const std::string* version = Find(annotations, v1::kNodePoolHashVersionAnnotationKey);
  const bool pool_never_stamped =
      Find(node_pool.metadata.annotations, v1::kNodePoolHashAnnotationKey) == nullptr;
  const bool claim_current = version != nullptr && *version == v1::kNodePoolHashVersion;
  if (claim_current && !pool_never_stamped) return std::nullopt;
  core::StringMap stamp{
      {std::string(v1::kNodePoolHashVersionAnnotationKey), std::string(v1::kNodePoolHashVersion)}};
  if (v1::FindCondition(node_claim.status.conditions, nodeclaim::kConditionDrifted) == nullptr) {
    stamp[std::string(v1::kNodePoolHashAnnotationKey)] = std::string(hash);
  }
  const std::string* have_hash = Find(annotations, v1::kNodePoolHashAnnotationKey);
  const auto want_hash = stamp.find(v1::kNodePoolHashAnnotationKey);
  if (claim_current &&
      (want_hash == stamp.end() || (have_hash != nullptr && *have_hash == want_hash->second))) {
    return std::nullopt;
  }
  return stamp;
}

}  // namespace dovetail::controllers::nodepool
