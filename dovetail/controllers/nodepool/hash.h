// What the NodePool hash controller (hash_controller.h) writes: upstream's drift-hash stamps.
//
// A NodePool carries karpenter.sh/nodepool-hash (upstream's hash of its template, version v3,
// apis/hash/drift_hash.h) and karpenter.sh/nodepool-hash-version; every NodeClaim launched from it
// carries the hash it was launched with (launch::NodePoolHash). A NodeClaim drifts when the
// versions agree and the hashes differ (nodeclaim/disruption_conditions.h StaticDrift). When the
// pool's stamps cannot vouch for its NodeClaims' (hash versioning, as upstream), the NodeClaims are
// re-stamped before the pool, never drifted:
//   - a pool stamped with another version (an older upstream): its NodeClaims with another
//     version get version v3 and the pool's new hash;
//   - a pool never stamped: all its NodeClaims likewise. Upstream stamps every pool before it
//     launches from it, so these claims were stamped by Dovetail before it computed upstream's
//     hash (its own hash under version v3).
// A NodeClaim that carries a Drifted condition keeps its hash (only the version changes): across
// hash algorithms its drift cannot be decided again, so it stays as it was.
//
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "dovetail/apis/core/meta.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/apis/v1/nodepool.h"

namespace dovetail::controllers::nodepool {

// The pool's annotations to merge so that it carries `hash` under version v3; nullopt when it
// already does.
std::optional<apis::core::StringMap> PoolStamp(const apis::v1::NodePool& node_pool,
                                               std::string_view hash);

// Whether the pool's current stamps leave some of its NodeClaims to re-stamp (see above).
bool NodeClaimsNeedRestamp(const apis::v1::NodePool& node_pool);

// The annotations to merge into one NodeClaim of a pool for which NodeClaimsNeedRestamp holds,
// so that it carries version v3 and (unless it has a Drifted condition) `hash`; nullopt when it
// keeps its stamps.
std::optional<apis::core::StringMap> NodeClaimRestamp(const apis::v1::NodeClaim& node_claim,
                                                      const apis::v1::NodePool& node_pool,
                                                      std::string_view hash);

}  // namespace dovetail::controllers::nodepool
