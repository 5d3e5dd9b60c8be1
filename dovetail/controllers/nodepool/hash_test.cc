// The drift-hash stamps of the NodePool hash controller (hash.h).
#include "dovetail/controllers/nodepool/hash.h"

#include "dovetail/apis/v1/labels.h"
#include "gtest/gtest.h"

namespace dovetail::controllers::nodepool {
namespace {

namespace core = apis::core;
namespace v1 = apis::v1;

constexpr char kVersion[] = "karpenter.sh/nodepool-hash-version";

v1::NodePool Pool(std::optional<std::string> hash, std::optional<std::string> version) {
  v1::NodePool pool;
  pool.metadata.name = "default";
  if (hash) pool.metadata.annotations["karpenter.sh/nodepool-hash"] = *hash;
  if (version) pool.metadata.annotations[kVersion] = *version;
  return pool;
}

v1::NodeClaim Claim(std::string hash, std::string version, bool drifted = false) {
  v1::NodeClaim claim;
  claim.metadata.annotations["karpenter.sh/nodepool-hash"] = std::move(hash);
  claim.metadata.annotations[kVersion] = std::move(version);
  if (drifted) {
    claim.status.conditions.push_back(
        core::Condition{.type = "Drifted", .status = core::ConditionStatus::kTrue});
  }
  return claim;
}

TEST(NodePoolHashTest, PoolStampedWithUpstreamVersion) {
  EXPECT_EQ(PoolStamp(Pool("1", "v3"), "1"), std::nullopt);
  const core::StringMap want{{"karpenter.sh/nodepool-hash", "2"}, {kVersion, "v3"}};
  EXPECT_EQ(PoolStamp(Pool("1", "v3"), "2"), want);
  EXPECT_EQ(PoolStamp(Pool("2", "v2"), "2"), want);
  EXPECT_EQ(PoolStamp(Pool(std::nullopt, std::nullopt), "2"), want);
}

TEST(NodePoolHashTest, CurrentPoolLeavesNodeClaimsAlone) {
  const v1::NodePool pool = Pool("1", "v3");
  EXPECT_FALSE(NodeClaimsNeedRestamp(pool));
  EXPECT_EQ(NodeClaimRestamp(Claim("0", "v2"), pool, "1"), std::nullopt);
  EXPECT_EQ(NodeClaimRestamp(Claim("0", "v3"), pool, "1"), std::nullopt);  // drifted, stays
}

TEST(NodePoolHashTest, OlderVersionRestampsOlderClaimsOnly) {
  const v1::NodePool pool = Pool("old", "v2");
  EXPECT_TRUE(NodeClaimsNeedRestamp(pool));
  const core::StringMap want{{"karpenter.sh/nodepool-hash", "new"}, {kVersion, "v3"}};
  EXPECT_EQ(NodeClaimRestamp(Claim("old", "v2"), pool, "new"), want);
  EXPECT_EQ(NodeClaimRestamp(Claim("x", "v3"), pool, "new"), std::nullopt);
  // A drifted claim keeps its hash; only its version moves.
  const core::StringMap version_only{{kVersion, "v3"}};
  EXPECT_EQ(NodeClaimRestamp(Claim("old", "v2", /*drifted=*/true), pool, "new"), version_only);
}

TEST(NodePoolHashTest, NeverStampedPoolRestampsEveryClaim) {
  // Dovetail before it computed upstream's hash stamped its own hash under v3 and never stamped
  // the pool: those claims are re-stamped, not drifted.
  const v1::NodePool pool = Pool(std::nullopt, std::nullopt);
  EXPECT_TRUE(NodeClaimsNeedRestamp(pool));
  const core::StringMap want{{"karpenter.sh/nodepool-hash", "new"}, {kVersion, "v3"}};
  EXPECT_EQ(NodeClaimRestamp(Claim("dovetail-own", "v3"), pool, "new"), want);
  EXPECT_EQ(NodeClaimRestamp(Claim("new", "v3"), pool, "new"), std::nullopt);  // already right
  EXPECT_EQ(NodeClaimRestamp(Claim("dovetail-own", "v3", true), pool, "new"), std::nullopt);
  v1::NodeClaim bare;
  EXPECT_EQ(NodeClaimRestamp(bare, pool, "new"), want);
}

}  // namespace
}  // namespace dovetail::controllers::nodepool
