#include "dovetail/kube/pod_constraints.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dovetail/apis/core/codec.h"
#include "dovetail/common/absl_compat.h"
#include "dovetail/common/status_macros.h"
#include "nlohmann/json.hpp"

namespace dovetail::kube {

namespace core = apis::core;

namespace {

template <typename T>
absl::StatusOr<std::shared_ptr<const T>> DecodeText(std::string_view json, std::string_view field) {
  const nlohmann::json parsed = nlohmann::json::parse(json, nullptr, false);
  if (parsed.is_discarded()) {
    return absl::InvalidArgumentError(Cat(field, ": malformed JSON"));
  }
  auto out = std::make_shared<T>();
  const absl::Status status = core::DecodeJson(parsed, *out);
  if (!status.ok()) return absl::InvalidArgumentError(Cat(field, ": ", status.message()));
  return std::shared_ptr<const T>(std::move(out));
}

}  // namespace

absl::StatusOr<AffinityPtr> DecodeAffinity(std::string_view json) {
  return DecodeText<core::Affinity>(json, "spec.affinity");
}

absl::StatusOr<TopologySpreadPtr> DecodeTopologySpread(std::string_view json) {
  return DecodeText<std::vector<core::TopologySpreadConstraint>>(json,
                                                                 "spec.topologySpreadConstraints");
}

template <typename T, typename Decode>
absl::StatusOr<std::shared_ptr<const T>> PodConstraintPool::Get(Index<T> PodConstraintPool::*index,
                                                                std::string_view json,
                                                                Decode decode) {
  {
    absl::MutexLock lock(&mu_);
    const Index<T>& known = this->*index;
    auto it = known.values.find(AsAbsl(json));
    if (it != known.values.end()) {
      if (std::shared_ptr<const T> live = it->second.lock()) return live;
    }
  }
  // Decoded outside the lock: two decoders of one new text may both decode it; the first to
  // store wins and the other's value is dropped.
  ASSIGN_OR_RETURN(std::shared_ptr<const T> decoded, decode(json));
  absl::MutexLock lock(&mu_);
  Index<T>& known = this->*index;
  std::weak_ptr<const T>& slot = known.values[AsAbsl(json)];
  if (std::shared_ptr<const T> live = slot.lock()) return live;
  slot = decoded;
  if (known.values.size() >= known.sweep_at) {
    absl::erase_if(known.values, [](const auto& entry) { return entry.second.expired(); });
    known.sweep_at = std::max<size_t>(64, 2 * known.values.size());
  }
  return decoded;
}

absl::StatusOr<AffinityPtr> PodConstraintPool::Affinity(std::string_view json) {
  return Get(&PodConstraintPool::affinities_, json, DecodeAffinity);
}

absl::StatusOr<TopologySpreadPtr> PodConstraintPool::TopologySpread(std::string_view json) {
  return Get(&PodConstraintPool::spreads_, json, DecodeTopologySpread);
}

size_t PodConstraintPool::size() const {
  absl::MutexLock lock(&mu_);
  return affinities_.values.size() + spreads_.values.size();
}

}  // namespace dovetail::kube
